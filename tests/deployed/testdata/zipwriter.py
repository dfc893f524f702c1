"""Write the extract scale test's archive with Python's zipfile: a writer
that is not s3zip's (make test-scale-extract, tests/deployed/extractscale_test.go).

usage: zipwriter.py PATH ENTRIES SEED

Entries are named dNNNN/fNNNNNNN.EXT, a thousand to a folder, the extension
cycling through txt json bin csv html png; sizes are log-normal around
1 KiB (seeded per entry); a third of the text entries are DEFLATEd text,
every other entry STORED random bytes. ZIP64 as zipfile writes it past
65,535 entries.
"""
import math
import random
import sys
import zipfile

EXTS = ["txt", "json", "bin", "csv", "html", "png"]
TEXT = {"txt", "json", "csv", "html"}


def main():
    path, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    with zipfile.ZipFile(path, "w", allowZip64=True) as z:
        for i in range(n):
            ext = EXTS[i % len(EXTS)]
            size = min(1 << 20, int(math.exp(rng.gauss(math.log(1024), 0.5))))
            info = zipfile.ZipInfo(f"d{i // 1000:04d}/f{i:07d}.{ext}", date_time=(2025, 1, 2, 3, 4, 6))
            if ext in TEXT and i % 3 == 0:
                line = f"entry {i}: a line of text that compresses\n".encode()
                data = (line * (size // len(line) + 1))[:size]
                info.compress_type = zipfile.ZIP_DEFLATED
            else:
                data = rng.randbytes(size)
                info.compress_type = zipfile.ZIP_STORED
            z.writestr(info, data)


if __name__ == "__main__":
    main()
