#!/usr/bin/env bash
# Extract figures: a challenge-distribution data set (s3zip sample) archived
# by s3zip create, then extracted by s3zip extract with 1 and N workers
# against a local versitygw. Prints each run's JSON summary line:
# bytes copied server-side vs read by workers, requests by API, wall time.
#   EXTRACT_COUNT=3000 EXTRACT_SCALE=0.1 EXTRACT_WORKERS=8 bash bench/extract.sh
set -euo pipefail
cd "$(dirname "$0")/.."
count=${EXTRACT_COUNT:-3000}
scale=${EXTRACT_SCALE:-0.1}
workers=${EXTRACT_WORKERS:-8}
go build -o .tools/bin/s3zip ./cmd/s3zip
s3zip=$PWD/.tools/bin/s3zip
data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export ROOT_ACCESS_KEY=bench-$RANDOM$RANDOM ROOT_SECRET_KEY=bench-secret-$RANDOM$RANDOM$RANDOM
mkdir -p "$data/s3"
.tools/bin/versitygw --port "127.0.0.1:$port" posix "$data/s3" >"$data/versitygw.log" 2>&1 &
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$data"; }
trap cleanup EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done
export AWS_ACCESS_KEY_ID=$ROOT_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$ROOT_SECRET_KEY AWS_REGION=us-east-1
export S3_ENDPOINT=http://127.0.0.1:$port
"$s3zip" sample --create-bucket --dest s3://bench/src/ --count "$count" --scale "$scale" >/dev/null
"$s3zip" create --source s3://bench/src/ --dest s3://bench/a.zip --workers "$workers" >/dev/null 2>&1
summary='import json,sys; d=json.load(sys.stdin); r=d["result"]; a=r["copiedBytes"]+r["streamedBytes"]
print(json.dumps({"workers": int(sys.argv[1]), "objects": len(r["objects"]), "extractedBytes": r["extractedBytes"],
 "copiedBytes": r["copiedBytes"], "workerBytes": r["streamedBytes"], "verifyReadBytes": r["verifyReadBytes"],
 "workerFraction": round(r["streamedBytes"]/max(a,1), 4), "requests": d["requests"], "wallSeconds": round(d["wallSeconds"], 2)}))'
for w in 1 "$workers"; do
  "$s3zip" extract s3://bench/a.zip "s3://bench/out-$w/" --workers "$w" --json 2>/dev/null | python3 -c "$summary" "$w"
done
