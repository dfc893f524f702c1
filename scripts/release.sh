#!/usr/bin/env bash
# Cross-builds the s3zip CLI for every release target, stamped with the
# version and commit, into one tar.gz each (the binary, README.md, LICENSE)
# and a SHA256SUMS file beside them.
#
#   scripts/release.sh                      all targets into dist/release/
#   RELEASE_DIR=dir RELEASE_TARGETS="linux/amd64" VERSION=v1.2.3 scripts/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=${VERSION:-v$(node -p 'require("./infra/package.json").version' 2>/dev/null || sed -n 's/.*"version": *"\(.*\)".*/\1/p' infra/package.json | head -1)}
COMMIT=${COMMIT:-$(git rev-parse --short=12 HEAD)}
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then COMMIT="$COMMIT+dirty"; fi
RELEASE_DIR=${RELEASE_DIR:-dist/release}
RELEASE_TARGETS=${RELEASE_TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}

mkdir -p "$RELEASE_DIR"
out=$(cd "$RELEASE_DIR" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
names=()
for target in $RELEASE_TARGETS; do
  os=${target%/*} arch=${target#*/}
  name="s3zip-$VERSION-$os-$arch"
  mkdir -p "$work/$name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath -buildvcs=false \
    -ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT" -o "$work/$name/s3zip" ./cmd/s3zip
  cp README.md LICENSE "$work/$name/"
  # Reproducible archives: sorted names, fixed owner and time.
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01 00:00Z' \
    -C "$work" -czf "$out/$name.tar.gz" "$name"
  names+=("$name.tar.gz")
  echo "release: $RELEASE_DIR/$name.tar.gz"
done
(cd "$out" && sha256sum "${names[@]}" > SHA256SUMS)
echo "release: $RELEASE_DIR/SHA256SUMS ($VERSION, commit $COMMIT)"
