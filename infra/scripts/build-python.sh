#!/usr/bin/env bash
# Builds the s3zip-cdk package once and writes both of its distributions into OUTDIR
# (default: the repository's dist/jsii): js/s3zip-cdk@<version>.jsii.tgz, the npm tarball,
# and python/s3zip_cdk-<version>-py3-none-any.whl with its sdist, made by jsii-pacmak from
# the jsii assembly and embedding that same tarball (binaries and ASL included).
# Needs Go, Node.js and python3: jsii-pacmak builds the wheel in a virtualenv of its own with
# setuptools, build and twine, which come from the wheels tools/install.sh keeps in
# .tools/python-cdk/wheels when that exists (offline), else from PyPI.
set -euo pipefail
infra="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(dirname "$infra")"
out="$(mkdir -p "${1:-$repo/dist/jsii}" && cd "${1:-$repo/dist/jsii}" && pwd)"
wheels="$repo/.tools/python-cdk/wheels"
if [ -d "$wheels" ]; then export PIP_NO_INDEX=1 PIP_FIND_LINKS="$wheels"; fi
bash "$infra/scripts/build-package.sh"
# The build above is what npm pack's prepack would run again: pacmak's npm pack skips it.
(cd "$infra" && npm_config_ignore_scripts=true \
  JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=1 JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1 \
  "$repo/node_modules/.bin/jsii-pacmak" --targets js python --outdir "$out" --no-fingerprint --no-npmignore)
