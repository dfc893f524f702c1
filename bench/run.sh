#!/usr/bin/env bash
# make bench / make bench-quick: build s3zip and bench/netbench, calibrate the
# local S3 server, then run the strategies side by side with each worker in its
# own network namespace, its link scaled so that what all links carry together
# through this machine is 32 links wide (bench/README.md). Needs root. Whatever happens, the namespaces and
# links are removed at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-full}

case $size in
full)  args=(--count "${BENCH_COUNT:-200}" --scale "${BENCH_SCALE:-1,2,4,8,16,32}" --repeats "${BENCH_REPEATS:-3}"
             --extract-workers "${BENCH_EXTRACT_WORKERS:-32}" --out dist/bench --readme docs/performance.md --chart docs/bench.png --label bench) ;;
get)   args=(-get --count "${BENCH_COUNT:-60}" --small-count "${BENCH_SMALL:-50000}" --get-repeats "${BENCH_REPEATS:-3}") ;;
# quick leaves out stream-1 (BENCH_SKIP= keeps it): one Lambda streaming every byte over its narrow link
# would take longer than all the other runs together, and none of the three target lines uses it;
# make bench runs it.
quick) args=(--count "${BENCH_COUNT:-60}" --scale "${BENCH_SCALE:-1,2,4,8,16,32}" --repeats "${BENCH_REPEATS:-1}" --skip "${BENCH_SKIP-stream-1}"
             --extract-workers "${BENCH_EXTRACT_WORKERS:-32}" --out dist/bench-quick --chart dist/bench-quick/bench.png --label bench-quick) ;;
# rates: S3's request rates divided by F on every prefix a run touches, the model told the same; stream, duo,
# chain and auto at each N (docs/performance.md "Under S3's request rates").
rates) args=(--count "${BENCH_COUNT:-200}" --scale "${BENCH_SCALE:-16}" --repeats "${BENCH_REPEATS:-1}" --s3-rates "${BENCH_RATE_FACTOR:-110}"
             --out dist/bench-rates --label bench-rates) ;;
*) echo "usage: bench/run.sh full|quick|rates|get" >&2; exit 2 ;;
esac
# BENCH_README=1: write docs/performance.md's table and docs/bench.png from this run (make bench always does).
if [ -n "${BENCH_README:-}" ] && [ "$size" != get ] && [ "$size" != rates ]; then args+=(--readme docs/performance.md --chart docs/bench.png); fi
# make bench-rates writes its own section of docs/performance.md (no chart).
if [ "$size" = rates ]; then args+=(--readme docs/performance.md); fi

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

if [ "$size" = get ]; then
  # The comparisons, built outside the product's module: s5cmd at a pinned
  # version (its go.mod is read from a scratch module, as `go install` of it
  # is refused by the proxy's deprecation lookup), the SDK's transfer manager
  # from bench/tmget (a module of its own).
  S5CMD_VERSION=v2.3.0
  if ! [ -x .tools/bin/s5cmd ] || ! go version -m .tools/bin/s5cmd | grep -q "github.com/peak/s5cmd/v2.*$S5CMD_VERSION"; then
    scratch=$(mktemp -d)
    (cd "$scratch" && go mod init s5cmd-build >/dev/null 2>&1 && go get "github.com/peak/s5cmd/v2@$S5CMD_VERSION" >/dev/null &&
      go build -o "$OLDPWD/.tools/bin/s5cmd" github.com/peak/s5cmd/v2)
    rm -rf "$scratch"
  fi
  (cd bench/tmget && go build -o ../../.tools/bin/tmget .)
  .tools/bin/netbench "${args[@]}"
  exit
fi

# matplotlib for the chart, in a virtualenv of its own (not needed by make test).
venv=.tools/bench-venv
if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check matplotlib
fi

.tools/bin/netbench --python "$venv/bin/python" "${args[@]}"
