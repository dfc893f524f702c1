#!/usr/bin/env bash
# make local-s3: start the local S3 server make demo uses (versitygw, on
# loopback) in the background, keeping its data between runs, and print the
# variables that point s3zip and the AWS CLI at it:
#
#   eval "$(scripts/local-s3.sh)"     start it (or find it running) and export them
#   scripts/local-s3.sh stop          stop it; its data stays in the directory
#
# LOCAL_S3_DIR is where it keeps its objects, keys, log and pid
# (default .tools/local-s3; rm -rf it to start empty); LOCAL_S3_PORT its port
# on 127.0.0.1 (default 7070). The exports go to stdout, the rest to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
dir=${LOCAL_S3_DIR:-$repo/.tools/local-s3}
port=${LOCAL_S3_PORT:-7070}
pidfile=$dir/versitygw.pid

log() { printf '%s\n' "$*" >&2; }
running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

if [ "${1:-}" = stop ]; then
  if running; then
    pid=$(cat "$pidfile")
    kill "$pid"
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    log "local S3 stopped; its data stays in $dir/s3"
  else
    log "no local S3 runs from $dir"
  fi
  rm -f "$pidfile"
  exit 0
elif [ $# -gt 0 ]; then
  log "usage: scripts/local-s3.sh [stop]   (got: $*)"
  exit 2
fi

mkdir -p "$dir/s3"
# Keys made once and kept, so the exports stay the same from run to run.
if [ ! -f "$dir/keys" ]; then
  printf 'local-%s %s\n' "$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')" "$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')" >"$dir/keys"
fi
read -r access secret <"$dir/keys"
if [ -f "$dir/port" ] && running; then
  port=$(cat "$dir/port")
  log "local S3 already runs on 127.0.0.1:$port (pid $(cat "$pidfile"))"
else
  bash tools/install.sh demo >&2
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    log "port $port on 127.0.0.1 is taken: give another, e.g. LOCAL_S3_PORT=7071 scripts/local-s3.sh"
    exit 1
  fi
  ROOT_ACCESS_KEY=$access ROOT_SECRET_KEY=$secret nohup .tools/bin/versitygw --port "127.0.0.1:$port" posix "$dir/s3" \
    >"$dir/versitygw.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  echo "$port" >"$dir/port"
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    running || { log "versitygw did not start; its log, $dir/versitygw.log:"; cat "$dir/versitygw.log" >&2; exit 1; }
    sleep 0.1
  done
  log "local S3 (versitygw) started on 127.0.0.1:$port, data in $dir/s3; stop it with scripts/local-s3.sh stop"
fi

cat <<EOF
export AWS_ACCESS_KEY_ID=$access AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=us-east-1
export S3_ENDPOINT=http://127.0.0.1:$port AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port
EOF
log "then, e.g.: s3zip sample --create-bucket --dest s3://try/photos/ --count 20 && s3zip plan --source s3://try/photos/"
