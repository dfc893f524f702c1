#!/usr/bin/env bash
# make bench-compress: s3zip --compress deflate against zip -6 on the same
# corpus (bench/compress). The last two lines are the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v zip >/dev/null || { echo "bench-compress: Info-ZIP 'zip' is not installed: apt-get install -y zip" >&2; exit 1; }
out=$(mktemp)
log=$(mktemp)
trap 'rm -f "$out" "$log"' EXIT
if ! S3ZIP_BENCH_COMPRESS=1 BENCH_OUT="$out" go test ./bench/compress -run TestBenchCompress -count=1 -v -timeout 60m >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
grep -v ' INFO ' "$log" | grep -v '^compress_' || true
cat "$out"
