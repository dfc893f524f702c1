#!/usr/bin/env bash
# Builds what the s3zip-cdk package ships into infra/dist (npm pack runs it as prepack):
# the constructs compiled by jsii (JS, .d.ts, and the jsii assembly infra/.jsii that
# jsii-pacmak turns into the Python distribution), the state machine definitions, and the
# nine Go Lambda binaries for linux/arm64 (the architecture the constructs declare), so that
# a CDK app needs neither Go nor Docker. Needs Go and the repository around infra/.
set -euo pipefail
infra="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(dirname "$infra")"
rm -rf "$infra/dist" "$infra/.jsii"
# jsii 5.9 runs on Node 20 but prints a banner asking for Node 22 or 24 on every run.
(cd "$infra" && JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=1 JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1 \
  "$repo/node_modules/.bin/jsii" --silence-warnings=reserved-word)
mkdir -p "$infra/dist/statemachine"
cp "$repo/statemachine/archive.asl.json" "$repo/statemachine/extract.asl.json" "$infra/dist/statemachine/"
make -s -C "$repo" lambdas LAMBDA_ARCH=arm64 LAMBDA_DIR="$infra/dist/functions"
