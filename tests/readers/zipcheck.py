#!/usr/bin/env python3
"""Read a ZIP archive with Python's zipfile and print one compact JSON line per entry.

    python3 tests/readers/zipcheck.py ARCHIVE

Output lines:
    {"n": "a/b.txt", "s": 5, "d": false, "h": "<sha256 hex>"}
    {"error": "..."}                  zipfile raised; the exit status is 1
    {"done": true, "count": N}

Every entry is read to its end, which is what ZipFile.testzip() does: zipfile
checks the local header against the central directory and raises BadZipFile
on a CRC-32 mismatch; reading once both tests and hashes the archive, so a
multi-GiB archive is not read twice.
"""
import hashlib
import json
import sys
import zipfile

CHUNK = 1 << 20


def main(path):
    out = sys.stdout
    count = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                h = hashlib.sha256()
                size = 0
                with zf.open(info) as f:
                    while True:
                        chunk = f.read(CHUNK)
                        if not chunk:
                            break
                        h.update(chunk)
                        size += len(chunk)
                out.write(json.dumps({"n": info.filename, "s": size, "d": info.is_dir(), "h": h.hexdigest()},
                                     separators=(",", ":")) + "\n")
                count += 1
    except Exception as e:  # any failure is the reader's verdict, reported as data
        out.write(json.dumps({"error": "%s: %s" % (type(e).__name__, e)}) + "\n")
        return 1
    out.write(json.dumps({"done": True, "count": count}) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: zipcheck.py ARCHIVE\n")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
