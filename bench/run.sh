#!/usr/bin/env bash
# make bench / make bench-quick: build s3zip and bench/netbench, calibrate the
# local S3 server, then run the strategies side by side with each worker in its
# own network namespace, its link scaled so the server is 32 links wide
# (bench/README.md). Needs root. Whatever happens, the namespaces and
# links are removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-full}

case $size in
full)  args=(--count "${BENCH_COUNT:-200}" --scale "${BENCH_SCALE:-1,2,4,8,16,32}" --repeats "${BENCH_REPEATS:-3}"
             --out dist/bench --readme README.md --chart docs/bench.png --label bench) ;;
quick) args=(--count "${BENCH_COUNT:-60}" --scale "${BENCH_SCALE:-1,2,4,8,16,32}" --repeats "${BENCH_REPEATS:-1}"
             --out dist/bench-quick --chart dist/bench-quick/bench.png --label bench-quick) ;;
*) echo "usage: bench/run.sh full|quick" >&2; exit 2 ;;
esac

if [ "$(id -u)" != 0 ]; then
  echo "bench: needs root to make network namespaces, veth pairs and tc qdiscs (CAP_NET_ADMIN); not running an unshaped benchmark instead" >&2
  exit 1
fi
for tool in ip tc; do
  command -v "$tool" >/dev/null || { echo "bench: '$tool' (iproute2) is not installed: apt-get install -y iproute2" >&2; exit 1; }
done

mkdir -p .tools/bin
go build -o .tools/bin/s3zip ./cmd/s3zip
go build -o .tools/bin/netbench ./bench/netbench
trap '.tools/bin/netbench --cleanup' EXIT

# matplotlib for the chart, in a virtualenv of its own (not needed by make test).
venv=.tools/bench-venv
if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check matplotlib
fi

.tools/bin/netbench --python "$venv/bin/python" "${args[@]}"
