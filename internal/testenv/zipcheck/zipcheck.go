// Package zipcheck reads a ZIP archive with every reader s3zip promises to
// satisfy and compares what each one sees with what the archive should hold.
//
// Readers (see Readers): Info-ZIP unzip (`unzip -t`, `-Z1`, `-Zl`, `-p`),
// 7-Zip (`7zz t`, `l -slt`, `x -so`), libarchive bsdtar (`-tvf`, `-xOf`),
// Python zipfile (tests/readers/zipcheck.py), Go archive/zip (in process),
// Java java.util.zip.ZipFile and ZipInputStream (tests/readers/ZipCheck.java).
// Every reader decodes every entry's content itself and zipcheck hashes it
// with SHA-256 as it streams by, so archives over 4 GiB and with more than
// 65,535 entries are checked without holding any entry in memory. The
// command-line readers extract all entries as one concatenated stream, which
// is cut into entries by the sizes in that same reader's listing.
//
// Content hashes matter: Java's ZipFile does not verify the CRC32 of STORED
// entries, so a corrupted entry only shows as a wrong SHA-256 there.
//
// A reader that is not installed is a failure, never a skip: run `make tools`
// (tools/install.sh).
package zipcheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// Want is an entry the archive must hold. Directory names end in "/" (one is
// added when Dir is set and it is missing); their Size and SHA256 are ignored.
// For files SHA256 is always compared: use WantBytes to fill it.
type Want struct {
	Name   string
	Size   int64
	SHA256 [32]byte
	Dir    bool
}

// WantBytes is the Want for a file entry holding data.
func WantBytes(name string, data []byte) Want {
	return Want{Name: name, Size: int64(len(data)), SHA256: sha256.Sum256(data)}
}

// WantObjects are the Wants for objects (key → bytes) archived under their
// keys without prefix.
func WantObjects(objects map[string][]byte, prefix string) []Want {
	want := make([]Want, 0, len(objects))
	for k, body := range objects {
		want = append(want, WantBytes(strings.TrimPrefix(k, prefix), body))
	}
	return want
}

// WantDir is the Want for a directory entry.
func WantDir(name string) Want { return Want{Name: name, Dir: true} }

// Entry is what one reader saw.
type Entry struct {
	Name   string // as the reader reports it; directories end in "/"
	Size   int64  // bytes the reader decoded
	SHA256 [32]byte
	Dir    bool
}

// Reader names, in the order Verify runs them.
const (
	ReaderGo                 = "go-archive-zip"
	ReaderUnzip              = "infozip-unzip"
	Reader7Zip               = "7zip"
	ReaderBsdtar             = "bsdtar"
	ReaderPython             = "python-zipfile"
	ReaderJavaZipFile        = "java-zipfile"
	ReaderJavaZipInputStream = "java-zipinputstream"
)

// Readers lists every reader Verify runs.
func Readers() []string {
	return []string{ReaderGo, ReaderUnzip, Reader7Zip, ReaderBsdtar, ReaderPython, ReaderJavaZipFile, ReaderJavaZipInputStream}
}

// CheckReader reads the archive at path with the named reader and returns the
// entries it reports, in its order. An error means the reader rejected the
// archive (or is missing); it names the reader.
func CheckReader(name, path string) ([]Entry, error) {
	var (
		entries []Entry
		err     error
	)
	switch name {
	case ReaderGo:
		entries, err = readGo(path)
	case ReaderUnzip:
		entries, err = readUnzip(path)
	case Reader7Zip:
		entries, err = read7zip(path)
	case ReaderBsdtar:
		entries, err = readBsdtar(path)
	case ReaderPython:
		entries, err = readPython(path)
	case ReaderJavaZipFile, ReaderJavaZipInputStream:
		r := readJava(path, name)[name]
		entries, err = r.entries, r.err
	default:
		return nil, fmt.Errorf("zipcheck: unknown reader %q (known: %s)", name, strings.Join(Readers(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return entries, nil
}

type result struct {
	entries []Entry
	err     error // already names the reader
}

// readAll runs every reader; both Java APIs share one JVM start.
func readAll(path string) map[string]result {
	results := readJava(path, "")
	for name, r := range results {
		if r.err != nil {
			r.err = fmt.Errorf("%s: %w", name, r.err)
			results[name] = r
		}
	}
	for _, name := range Readers() {
		if _, done := results[name]; done {
			continue
		}
		entries, err := CheckReader(name, path)
		results[name] = result{entries, err}
	}
	return results
}

// Verify runs every reader on the archive at path and compares each one's
// entries (names, sizes, content hashes, directory-ness) with want, in any
// order. It returns nil only if every reader accepts the archive and sees
// exactly want; otherwise one error per failing reader, joined.
func Verify(path string, want []Want) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("zipcheck: %w", err)
	}
	results := readAll(path)
	var errs []error
	for _, name := range Readers() {
		r := results[name]
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		if err := compare(name, r.entries, want); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("zipcheck %s:\n%w", path, errors.Join(errs...))
	}
	return nil
}

// Check is Verify for tests: it fails tb with every reader's complaint.
func Check(tb testing.TB, archivePath string, want []Want) {
	tb.Helper()
	if err := Verify(archivePath, want); err != nil {
		tb.Fatal(err)
	}
}

// CheckWith is Check with one reader (Readers()): for an archive of so many
// entries that its layout, not every reader's view of it, is the question.
func CheckWith(tb testing.TB, reader, archivePath string, want []Want) {
	tb.Helper()
	got, err := CheckReader(reader, archivePath)
	if err == nil {
		err = compare(reader, got, want)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// maxListed caps how many differing entries one reader's error lists.
const maxListed = 10

func compare(reader string, got []Entry, want []Want) error {
	wantBy := make(map[string]Want, len(want))
	for _, w := range want {
		if w.Dir && !strings.HasSuffix(w.Name, "/") {
			w.Name += "/"
		}
		if _, dup := wantBy[w.Name]; dup {
			return fmt.Errorf("%s: want lists entry %q twice", reader, w.Name)
		}
		wantBy[w.Name] = w
	}
	var problems []string
	seen := make(map[string]bool, len(got))
	for _, e := range got {
		if seen[e.Name] {
			problems = append(problems, fmt.Sprintf("entry %q: listed more than once", e.Name))
			continue
		}
		seen[e.Name] = true
		w, ok := wantBy[e.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("entry %q: unexpected (%d bytes)", e.Name, e.Size))
		case w.Dir != e.Dir:
			problems = append(problems, fmt.Sprintf("entry %q: directory=%v, want %v", e.Name, e.Dir, w.Dir))
		case w.Dir:
		case e.Size != w.Size:
			problems = append(problems, fmt.Sprintf("entry %q: size %d, want %d", e.Name, e.Size, w.Size))
		case e.SHA256 != w.SHA256:
			problems = append(problems, fmt.Sprintf("entry %q: sha256 %x, want %x", e.Name, e.SHA256, w.SHA256))
		}
	}
	var missing []string
	for name := range wantBy {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		problems = append(problems, fmt.Sprintf("entry %q: missing", name))
	}
	if len(problems) == 0 {
		return nil
	}
	more := ""
	if len(problems) > maxListed {
		more = fmt.Sprintf("\n\t… and %d more", len(problems)-maxListed)
		problems = problems[:maxListed]
	}
	return fmt.Errorf("%s: %d of %d entries differ (reader saw %d):\n\t%s%s",
		reader, len(problems), len(want), len(got), strings.Join(problems, "\n\t"), more)
}

func parseHex(s string) ([32]byte, error) {
	var h [32]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("bad sha256 %q", s)
	}
	copy(h[:], b)
	return h, nil
}

// readersDir is tests/readers in this repository.
func readersDir() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "tests", "readers")
		if _, err := os.Stat(filepath.Join(dir, "ZipCheck.java")); err == nil {
			return filepath.Clean(dir), nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		cand := filepath.Join(dir, "tests", "readers")
		if _, err := os.Stat(filepath.Join(cand, "ZipCheck.java")); err == nil {
			return cand, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("tests/readers/ZipCheck.java not found above the working directory")
		}
		dir = parent
	}
}

var errTrailing = errors.New("reader produced more bytes than its listing accounts for")

// lastLines returns the end of a command's stderr for error messages.
func lastLines(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 2000 {
		b = append([]byte("…"), b[len(b)-2000:]...)
	}
	return string(b)
}
