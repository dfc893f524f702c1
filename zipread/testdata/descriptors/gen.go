//go:build ignore

// Command gen writes the third-party archives with data descriptors (flag
// bit 3: CRC-32 and sizes after the data) that the archive package's tests
// verify, get and extract. Run it here: go run gen.go. It needs python3,
// Info-ZIP zip, bsdtar, 7zz and java; every archive it writes must be read
// correctly by 7-Zip, Info-ZIP unzip and Go's archive/zip (the tests check
// that too).
//
// Descriptor forms (APPNOTE 4.3.9): an optional signature 0x08074b50, the
// CRC-32, then both sizes in 4 bytes, or in 8 when the local header has a
// ZIP64 extra field (Go also uses 8 when a size is at least 0xFFFFFFFF):
// 12, 16, 20 or 24 bytes. No writer at hand omits the signature, so the
// -nosig archives are others with every signature cut out and the offsets
// after it moved back, as old writers left them.
//
// Archives whose name starts with bad- are broken on purpose: verify must
// list a problem for each, and a reader rejects each (the tests name which).
// Those whose name starts with warn- are read correctly by 7-Zip, Info-ZIP
// and Go's archive/zip but rejected by another reader: verify must list a
// warning for each, and no problem.
// Info-ZIP's entries read from stdin carry the time they were written, so
// those two archives differ from one run to the next.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// files is what every archive holds: text that deflates, bytes that do not,
// an empty file and one in a directory.
func files() []struct {
	name string
	data []byte
} {
	text := bytes.Repeat([]byte("a data descriptor follows the data it describes\n"), 80)
	noise := make([]byte, 12<<10)
	r := rand.New(rand.NewPCG(21, 11))
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	return []struct {
		name string
		data []byte
	}{{"readme.txt", text}, {"data/noise.bin", noise}, {"data/empty", nil}, {"data/sub/tail.txt", []byte("the last entry\n")}}
}

var modTime = time.Date(2024, 3, 9, 12, 0, 0, 0, time.UTC)

const pyStream = `
import sys, zipfile
out, method, force = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "zip64"
class Unseekable:
    def __init__(self, f): self.f = f
    def write(self, b): return self.f.write(b)
    def flush(self): self.f.flush()
with open(out, "wb") as raw, zipfile.ZipFile(Unseekable(raw), "w", compression=method) as z:
    for n in sys.argv[4:]:
        info = zipfile.ZipInfo(n, (2024, 3, 9, 12, 0, 0))
        info.compress_type = method
        with open("in/" + n, "rb") as f, z.open(info, "w", force_zip64=force) as e:
            e.write(f.read())
`

const javaWriter = `
import java.io.*;
import java.nio.file.*;
import java.util.zip.*;
public class W {
  public static void main(String[] a) throws Exception {
    try (ZipOutputStream z = new ZipOutputStream(new FileOutputStream(a[0]))) {
      for (int i = 1; i < a.length; i++) {
        ZipEntry e = new ZipEntry(a[i]);
        e.setTime(1709985600000L); // 2024-03-09 12:00 UTC
        z.putNextEntry(e);
        z.write(Files.readAllBytes(Paths.get("in", a[i])));
        z.closeEntry();
      }
    }
  }
}
`

func main() {
	log.SetFlags(0)
	in, err := os.MkdirTemp("", "descriptors")
	check(err)
	defer os.RemoveAll(in)
	var names []string
	for _, f := range files() {
		p := filepath.Join(in, "in", f.name)
		check(os.MkdirAll(filepath.Dir(p), 0o755))
		check(os.WriteFile(p, f.data, 0o644))
		names = append(names, f.name)
	}
	for _, d := range []string{"data/sub", "data", "."} {
		check(os.Chtimes(filepath.Join(in, "in", d), modTime, modTime))
	}
	for _, f := range files() {
		check(os.Chtimes(filepath.Join(in, "in", f.name), modTime, modTime))
	}
	check(os.WriteFile(filepath.Join(in, "w.py"), []byte(pyStream), 0o644))
	out := func(name string) string { abs, err := filepath.Abs(name); check(err); return abs }

	py := func(name, method, zip64 string) {
		run(in, "python3", append([]string{"w.py", out(name), method, zip64}, names...)...)
	}
	// Python's zipfile on a stream it cannot seek: signature and 4-byte sizes,
	// or with force_zip64 a ZIP64 extra field in the local header and 8-byte sizes.
	py("python-stream-deflated.zip", "8", "")
	py("python-stream-stored.zip", "0", "")
	py("python-stream-zip64.zip", "8", "zip64")
	// Info-ZIP zip: -fd forces descriptors; writing to a pipe needs them
	// (to a file zip seeks back instead); reading stdin makes the entry
	// ZIP64 (8-byte sizes) unless -fz-.
	run(filepath.Join(in, "in"), "zip", "-q", "-X", "-r", "-fd", out("infozip-fd.zip"), ".")
	run(filepath.Join(in, "in"), "sh", "-c", "zip -q -X -r -0 - . | cat > "+out("infozip-pipe-stored.zip"))
	run(filepath.Join(in, "in"), "sh", "-c", "cat readme.txt | zip -q -X - - | cat > "+out("infozip-pipe-stdin-zip64.zip"))
	run(filepath.Join(in, "in"), "sh", "-c", "cat data/noise.bin | zip -q -X -fz- - - | cat > "+out("infozip-pipe-stdin.zip"))
	// libarchive (bsdtar) writes a descriptor after every file.
	run(filepath.Join(in, "in"), "bsdtar", append([]string{"-a", "-cf", out("libarchive-bsdtar.zip")}, names...)...)
	// 7-Zip writing to stdout, and Java's ZipOutputStream deflating.
	run(filepath.Join(in, "in"), "sh", "-c", "7zz a -tzip -so -bd x.zip "+strings.Join(names, " ")+" | cat > "+out("7zip-stdout.zip"))
	check(os.WriteFile(filepath.Join(in, "W.java"), []byte(javaWriter), 0o644))
	run(in, "java", append([]string{"W.java", out("java-deflated.zip")}, names...)...)
	// Go's archive/zip: CreateHeader writes a descriptor after every file.
	goZip := goWriter()
	write("go-createheader.zip", goZip)
	write("go-createheader-nosig.zip", stripSignatures(goZip))
	pyZip64, err := os.ReadFile("python-stream-zip64.zip")
	check(err)
	write("python-stream-zip64-nosig.zip", stripSignatures(pyZip64))

	// Broken on purpose, and (warn-) the right CRC-32 with a wrong size.
	bad := bytes.Clone(goZip)
	at := bytes.Index(bad, sig(0x08074b50)) // the first entry's descriptor
	bad[at+4] ^= 0xff                       // its CRC-32
	write("bad-descriptor-crc.zip", bad)
	pyDeflated, err := os.ReadFile("python-stream-deflated.zip")
	check(err)
	bad = bytes.Clone(pyDeflated)
	at = bytes.Index(bad, sig(0x08074b50))
	binary.LittleEndian.PutUint32(bad[at+8:], binary.LittleEndian.Uint32(bad[at+8:])+1) // its compressed size
	write("warn-descriptor-sizes.zip", bad)
	write("bad-descriptor-missing.zip", missingDescriptor())
}

// missingDescriptor writes the files with CRC-32 and sizes in the local
// headers (archive/zip's CreateRaw), then sets flag bit 3 on the second
// entry in both of its headers: a descriptor is promised, none follows.
func missingDescriptor() []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range files() {
		h := &zip.FileHeader{Name: f.name, Method: zip.Store, Modified: modTime, CRC32: crc32.ChecksumIEEE(f.data),
			CompressedSize64: uint64(len(f.data)), UncompressedSize64: uint64(len(f.data))}
		fw, err := w.CreateRaw(h)
		check(err)
		_, err = fw.Write(f.data)
		check(err)
	}
	check(w.Close())
	b := buf.Bytes()
	name := files()[1].name
	b[record(b, 0x04034b50, 30, name)+6] |= 0x8
	b[record(b, 0x02014b50, 46, name)+8] |= 0x8
	return b
}

// goWriter writes the files with archive/zip's CreateHeader, deflated and
// stored in turn.
func goWriter() []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for i, f := range files() {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: modTime}
		if i%2 == 1 {
			h.Method = zip.Store
		}
		h.SetMode(0o644)
		fw, err := w.CreateHeader(h)
		check(err)
		_, err = fw.Write(f.data)
		check(err)
	}
	check(w.Close())
	return buf.Bytes()
}

func sig(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// record returns the offset of the first record with signature signature
// whose name, at nameAt in it, is name.
func record(b []byte, signature uint32, nameAt int, name string) int {
	for off := 0; ; off += 4 {
		i := bytes.Index(b[off:], sig(signature))
		if i < 0 {
			log.Fatalf("no record 0x%08x for %q", signature, name)
		}
		off += i
		if bytes.HasPrefix(b[off+nameAt:], []byte(name)) {
			return off
		}
	}
}

// stripSignatures removes the signature of every data descriptor and moves
// the local header offsets and the central directory offset back to match.
// It reads the entries' data ends from the central directory, so it finds
// descriptors by position, not by searching for their signature.
func stripSignatures(b []byte) []byte {
	b = bytes.Clone(b)
	r, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	check(err)
	var cut []int64 // offsets of the signatures to remove
	for _, f := range r.File {
		if f.Flags&0x8 == 0 {
			continue
		}
		start, err := f.DataOffset()
		check(err)
		end := start + int64(f.CompressedSize64)
		if binary.LittleEndian.Uint32(b[end:]) != 0x08074b50 {
			log.Fatalf("%s: no descriptor signature at %d", f.Name, end)
		}
		cut = append(cut, end)
	}
	moved := func(off int64) int64 {
		n := int64(0)
		for _, c := range cut {
			if c < off {
				n += 4
			}
		}
		return off - n
	}
	// Fix the records in place, then drop the cut bytes.
	end := bytes.LastIndex(b, sig(0x06054b50))
	cd := int64(binary.LittleEndian.Uint32(b[end+16:]))
	if cd == 0xffffffff {
		log.Fatal("stripSignatures: ZIP64 end records are not handled")
	}
	for off := cd; off < int64(end); {
		if binary.LittleEndian.Uint32(b[off:]) != 0x02014b50 {
			log.Fatalf("no central header at %d", off)
		}
		lh := binary.LittleEndian.Uint32(b[off+42:])
		if lh == 0xffffffff {
			log.Fatal("stripSignatures: ZIP64 offsets are not handled")
		}
		binary.LittleEndian.PutUint32(b[off+42:], uint32(moved(int64(lh))))
		off += 46 + int64(binary.LittleEndian.Uint16(b[off+28:])) + int64(binary.LittleEndian.Uint16(b[off+30:])) + int64(binary.LittleEndian.Uint16(b[off+32:]))
	}
	binary.LittleEndian.PutUint32(b[end+16:], uint32(moved(cd)))
	var outb []byte
	last := int64(0)
	for _, c := range cut {
		outb = append(outb, b[last:c]...)
		last = c + 4
	}
	return append(outb, b[last:]...)
}

func run(dir, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "TZ=UTC")
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func write(name string, b []byte) { check(os.WriteFile(name, b, 0o644)) }

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
