#!/usr/bin/env bash
# Builds what the s3zip-cdk package ships into infra/dist (npm pack runs it as prepack):
# the constructs compiled (JS and .d.ts), the state machine definitions, and the nine Go Lambda
# binaries for linux/arm64 (the architecture the constructs declare), so that a CDK app needs
# neither Go nor Docker. Needs Go and the repository around infra/.
set -euo pipefail
infra="$(cd "$(dirname "$0")/.." && pwd)"
repo="$(dirname "$infra")"
rm -rf "$infra/dist"
"$repo/node_modules/.bin/tsc" -p "$infra/tsconfig.build.json"
mkdir -p "$infra/dist/statemachine"
cp "$repo/statemachine/archive.asl.json" "$repo/statemachine/extract.asl.json" "$infra/dist/statemachine/"
make -s -C "$repo" lambdas LAMBDA_ARCH=arm64 LAMBDA_DIR="$infra/dist/functions"
