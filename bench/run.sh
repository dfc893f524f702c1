#!/usr/bin/env bash
# make bench / make bench-quick: see bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "bench/run.sh: not written yet" >&2
exit 1
