#!/usr/bin/env bash
# Installs the local test tools s3zip needs on a Debian machine that already has
# Go, Java, Python and Node: the ZIP readers (7zz, bsdtar, unzip) and versitygw,
# the S3-compatible server every integration test starts on loopback.
#
# Idempotent: each step is skipped when its result is already present, so the
# Makefile and CI can call it on every run.
#
#   tools/install.sh            install everything missing
#   tools/install.sh demo       only what make demo and make local-s3 use: versitygw
#                               (checking go and python3); no ZIP readers, no Java,
#                               no staticcheck or cfn-lint
#   VGW_PREBUILT=path tools/install.sh
#                               copy a versitygw v1.8.0 binary instead of building
#                               it (only if `go version -m` says it is v1.8.0)
set -euo pipefail

VERSITYGW_VERSION=v1.8.0
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="$REPO/.tools/bin"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

log() { printf 'tools/install.sh: %s\n' "$*" >&2; }

MODE=${1:-all}
case "$MODE" in
  all | demo) ;;
  *) log "ERROR: unknown mode '$MODE': give none (everything the tests use) or demo (the local S3 server alone)"; exit 2 ;;
esac

# --- apt packages -----------------------------------------------------------
# binary -> Debian package that provides it
declare -A APT_FOR=(
  [7zz]=7zip
  [bsdtar]=libarchive-tools
  [unzip]=unzip
  [zip]=zip
)
missing=()
[ "$MODE" = demo ] || for bin in "${!APT_FOR[@]}"; do
  if ! command -v "$bin" >/dev/null 2>&1; then missing+=("${APT_FOR[$bin]}"); fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing apt packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- language runtimes the readers need (checked, not installed) -----------
runtimes="go java python3"
if [ "$MODE" = demo ]; then runtimes="go python3"; fi
for bin in $runtimes; do
  if ! command -v "$bin" >/dev/null 2>&1; then
    log "ERROR: $bin not found on PATH; install it (needed: $runtimes; java >= 11 for the ZIP reader checks)"
    exit 1
  fi
done

# --- versitygw --------------------------------------------------------------
# `versitygw --version` prints "Version: git" for a `go install` build (the
# version is only set by its own Makefile's ldflags), so the module version
# recorded in the binary's build info is what identifies it.
vgw_is_wanted() {
  [ -x "$1" ] && go version -m "$1" 2>/dev/null |
    awk '$1=="mod" && $2=="github.com/versity/versitygw" {print $3}' |
    grep -qx "$VERSITYGW_VERSION"
}

mkdir -p "$BIN"
if vgw_is_wanted "$BIN/versitygw"; then
  :
elif [ -n "${VGW_PREBUILT:-}" ] && vgw_is_wanted "$VGW_PREBUILT"; then
  log "copying prebuilt versitygw $VERSITYGW_VERSION from $VGW_PREBUILT"
  cp "$VGW_PREBUILT" "$BIN/versitygw.tmp" && mv "$BIN/versitygw.tmp" "$BIN/versitygw"
else
  log "building versitygw $VERSITYGW_VERSION (go install, takes a few minutes)"
  # Built outside the repo's module so its dependencies never touch go.mod.
  (cd / && GOBIN="$BIN" GOFLAGS=-buildvcs=false go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION")
  vgw_is_wanted "$BIN/versitygw" || { log "ERROR: $BIN/versitygw is not $VERSITYGW_VERSION after install"; exit 1; }
fi

if [ "$MODE" = demo ]; then
  log "ok (demo): go python3, versitygw $VERSITYGW_VERSION at $BIN/versitygw"
  exit 0
fi

# --- staticcheck (make check) -------------------------------------------------
# Built like versitygw, outside the repo's module; the build info names its version.
STATICCHECK_VERSION=v0.8.2
if ! go version -m "$BIN/staticcheck" 2>/dev/null |
    awk '$1=="mod" && $2=="honnef.co/go/tools" {print $3}' | grep -qx "$STATICCHECK_VERSION"; then
  log "installing staticcheck $STATICCHECK_VERSION"
  (cd / && GOBIN="$BIN" GOFLAGS=-buildvcs=false go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION")
fi

# --- cfn-lint (make test-deployed lints the synthesized template) -------------
CFN_LINT_VERSION=1.58.0
CFN_LINT_VENV="$REPO/.tools/cfn-lint"
if ! "$CFN_LINT_VENV/bin/cfn-lint" --version 2>/dev/null | grep -qx "cfn-lint $CFN_LINT_VERSION"; then
  log "installing cfn-lint $CFN_LINT_VERSION into $CFN_LINT_VENV"
  python3 -m venv "$CFN_LINT_VENV"
  "$CFN_LINT_VENV/bin/pip" install -q --disable-pip-version-check "cfn-lint==$CFN_LINT_VERSION"
fi

# --- AWS CLI (make test-deployed packages the standalone template with `aws cloudformation package`) ---
AWSCLI_VERSION=1.46.2
AWSCLI_VENV="$REPO/.tools/awscli"
if ! "$AWSCLI_VENV/bin/aws" --version 2>/dev/null | grep -q "^aws-cli/$AWSCLI_VERSION "; then
  log "installing the AWS CLI $AWSCLI_VERSION into $AWSCLI_VENV"
  python3 -m venv "$AWSCLI_VENV"
  "$AWSCLI_VENV/bin/pip" install -q --disable-pip-version-check "awscli==$AWSCLI_VERSION"
fi

# --- Python CDK wheels (make test-python) --------------------------------------
# The Python distribution of s3zip-cdk is built by jsii-pacmak and installed into a fresh
# virtualenv with aws-cdk-lib, constructs and cdk-nag at the versions package-lock.json
# installs for npm: their wheels (with jsii's Python runtime and what they need) and the
# tools pacmak builds a wheel with (its python/requirements-dev.txt) are kept here, so the
# build and the install run offline (PIP_NO_INDEX, PIP_FIND_LINKS).
PY_CDK="$REPO/.tools/python-cdk"
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  log "ERROR: $(python3 -V 2>&1); the Python CDK test (s3zip-cdk's wheel, aws-cdk-lib) needs Python 3.10 or newer"
  exit 1
fi
py_pins=$(cd "$REPO" && python3 -c '
import json
p = json.load(open("package-lock.json"))["packages"]
v = lambda n: p["node_modules/" + n]["version"]
print(" ".join(n + "==" + v(n) for n in ("aws-cdk-lib", "constructs", "cdk-nag")), "jsii>=" + v("jsii-pacmak"),
      "setuptools~=75.3.2 build~=1.5.0 twine~=7.0.0 packaging>=26.3")')
if [ "$(cat "$PY_CDK/pins" 2>/dev/null)" != "$py_pins" ]; then
  log "downloading Python wheels into $PY_CDK/wheels: $py_pins"
  rm -rf "$PY_CDK/wheels"
  # shellcheck disable=SC2086 # one argument a requirement
  python3 -m pip download -q --disable-pip-version-check -d "$PY_CDK/wheels" $py_pins
  echo "$py_pins" >"$PY_CDK/pins"
fi

log "ok: 7zz bsdtar unzip java python3 go, versitygw $VERSITYGW_VERSION at $BIN/versitygw, staticcheck $STATICCHECK_VERSION, cfn-lint $CFN_LINT_VERSION, aws-cli $AWSCLI_VERSION, Python CDK wheels at $PY_CDK/wheels"
