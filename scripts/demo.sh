#!/usr/bin/env bash
# make demo: on a machine with no AWS, start a real S3-compatible server on
# loopback, fill a bucket with ~200 objects of the challenge distribution
# (~1 GB), build the archive with s3zip's default strategy, verify it, and
# leave a copy on local disk.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
count=${DEMO_COUNT:-200}
workers=${DEMO_WORKERS:-8}

bash tools/install.sh demo
go build -o .tools/bin/s3zip ./cmd/s3zip
s3zip=$repo/.tools/bin/s3zip

data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export ROOT_ACCESS_KEY=demo-$RANDOM$RANDOM ROOT_SECRET_KEY=demo-secret-$RANDOM$RANDOM$RANDOM
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
echo "== versitygw on $S3_ENDPOINT (data in $data/s3)"

echo "== uploading $count objects (challenge distribution, 5 MiB on average)"
"$s3zip" sample --create-bucket --dest s3://demo/photos/ --count "$count"

echo "== s3zip create"
"$s3zip" create --source s3://demo/photos/ --dest s3://demo/archives/photos.zip --workers "$workers"

echo "== s3zip verify"
"$s3zip" verify s3://demo/archives/photos.zip

mkdir -p dist/demo
cp "$data/s3/demo/archives/photos.zip" dist/demo/photos.zip
echo "archive: $repo/dist/demo/photos.zip"
