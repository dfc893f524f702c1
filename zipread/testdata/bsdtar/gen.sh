#!/bin/sh
# Writes the archives libarchive's bsdtar makes in two common ways, which
# 7-Zip, Info-ZIP unzip and Go's archive/zip read correctly and verify,
# get and extract are tested with. Run it here: sh gen.sh (needs bsdtar).
#
# pipe-padded.zip: written to a pipe, bsdtar pads the archive with zeros
#   to its 10240-byte block after the end of central directory record.
# dot.zip: "bsdtar -cf x.zip ." names every entry "./..." ("./", "./a").
# dot-clash.zip: "./a" and "a", the same file once normalised.
set -eu
out=$(pwd)
in=$(mktemp -d)
trap 'rm -rf "$in"' EXIT
mkdir -p "$in/d"
printf 'alpha\n' > "$in/a"
printf 'bravo bravo bravo bravo\n' > "$in/d/b"
touch -d 2024-03-09T12:00:00Z "$in/a" "$in/d/b" "$in/d" "$in"
cd "$in"
bsdtar --format zip -cf - a d | cat > "$out/pipe-padded.zip"
bsdtar --format zip -cf "$out/dot.zip" .
bsdtar --format zip -cf "$out/dot-clash.zip" ./a a
