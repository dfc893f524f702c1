package zipcheck

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// installHint says how to get a missing reader.
var installHint = map[string]string{
	"unzip":   "apt-get install -y unzip (or run `make tools` / tools/install.sh)",
	"7zz":     "apt-get install -y 7zip (or run `make tools` / tools/install.sh)",
	"bsdtar":  "apt-get install -y libarchive-tools (or run `make tools` / tools/install.sh)",
	"python3": "install Python 3 (apt-get install -y python3)",
	"java":    "install a JDK >= 11 (apt-get install -y default-jdk-headless)",
}

// lookPath finds a reader binary or says how to install it.
func lookPath(bin string) (string, error) {
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("reader binary %q not found on PATH: %s", bin, installHint[bin])
	}
	return p, nil
}

// command prepares a reader process with a UTF-8 locale, so non-ASCII entry
// names are printed as UTF-8 rather than escaped.
func command(bin string, args ...string) (*exec.Cmd, error) {
	p, err := lookPath(bin)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8")
	return cmd, nil
}

// output runs a reader to completion and returns its stdout.
func output(bin string, args ...string) ([]byte, error) {
	cmd, err := command(bin, args...)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("`%s %s`: %v\n%s", bin, strings.Join(args, " "), err,
			strings.TrimSpace(lastLines(stderr.Bytes())+"\n"+lastLines(tailBytes(out, 2000))))
	}
	return out, nil
}

// stream runs a reader and hands its stdout to consume while it runs.
func stream(consume func(io.Reader) error, bin string, args ...string) error {
	cmd, err := command(bin, args...)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("`%s %s`: %w", bin, strings.Join(args, " "), err)
	}
	cerr := consume(stdout)
	_, _ = io.Copy(io.Discard, stdout) // let the process finish if consume stopped early
	werr := cmd.Wait()
	if werr != nil {
		return fmt.Errorf("`%s %s`: %v: %s", bin, strings.Join(args, " "), werr, lastLines(stderr.Bytes()))
	}
	if cerr != nil {
		return fmt.Errorf("`%s %s`: %w", bin, strings.Join(args, " "), cerr)
	}
	return nil
}

func tailBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// hashConcatenated cuts r, the concatenated contents of every file entry in
// listing order (directories produce no bytes), into entries by their listed
// sizes and fills in each SHA256. It requires r to end exactly after the last.
func hashConcatenated(r io.Reader, entries []Entry) error {
	br := bufio.NewReaderSize(r, 1<<20)
	for i := range entries {
		e := &entries[i]
		if e.Dir {
			continue
		}
		h := sha256.New()
		n, err := io.CopyN(h, br, e.Size)
		if err != nil {
			return fmt.Errorf("entry %q: extracted %d of %d listed bytes: %v", e.Name, n, e.Size, err)
		}
		h.Sum(e.SHA256[:0])
	}
	if n, _ := io.Copy(io.Discard, br); n > 0 {
		return fmt.Errorf("%w (%d extra bytes)", errTrailing, n)
	}
	return nil
}

// readGo reads with archive/zip, checking each entry's CRC32 and size itself
// as well as relying on archive/zip's own checks.
func readGo(path string) ([]Entry, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	entries := make([]Entry, 0, len(zr.File))
	for _, f := range zr.File {
		e := Entry{Name: f.Name, Dir: strings.HasSuffix(f.Name, "/")}
		rc, err := f.Open()
		if err != nil {
			return entries, fmt.Errorf("entry %q: open: %w", f.Name, err)
		}
		h, c := sha256.New(), crc32.NewIEEE()
		e.Size, err = io.Copy(io.MultiWriter(h, c), rc)
		rc.Close()
		if err != nil {
			return entries, fmt.Errorf("entry %q: read: %w", f.Name, err)
		}
		if got := c.Sum32(); got != f.CRC32 {
			return entries, fmt.Errorf("entry %q: CRC32 of content %08x, header says %08x", f.Name, got, f.CRC32)
		}
		if uint64(e.Size) != f.UncompressedSize64 {
			return entries, fmt.Errorf("entry %q: read %d bytes, header says %d", f.Name, e.Size, f.UncompressedSize64)
		}
		h.Sum(e.SHA256[:0])
		entries = append(entries, e)
	}
	return entries, nil
}

// zipinfo -l: "-rw-r--r--  3.0 unx        5 bx        5 stor 26-Nov-22 10:57 a b.txt"
var unzipLong = regexp.MustCompile(`^(\S+)\s+\d+\.\d+\s+\S+\s+(\d+)\s+\S+\s+\d+\s+\S+\s+\S+\s+\S+ (.*)$`)

func readUnzip(path string) ([]Entry, error) {
	if _, err := output("unzip", "-tqq", path); err != nil {
		return nil, fmt.Errorf("test: %w", err)
	}
	names, err := output("unzip", "-Z1", path)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	long, err := output("unzip", "-Zl", path)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	var entries []Entry
	for _, line := range strings.Split(string(long), "\n") {
		m := unzipLong.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		size, _ := strconv.ParseInt(m[2], 10, 64)
		entries = append(entries, Entry{Name: m[3], Size: size, Dir: strings.HasSuffix(m[3], "/")})
	}
	short := strings.Split(strings.TrimSuffix(string(names), "\n"), "\n")
	if len(short) != len(entries) {
		return nil, fmt.Errorf("`unzip -Z1` lists %d entries, `unzip -Zl` %d", len(short), len(entries))
	}
	for i, n := range short {
		if n != entries[i].Name {
			return nil, fmt.Errorf("`unzip -Z1` lists %q where `unzip -Zl` lists %q", n, entries[i].Name)
		}
	}
	err = stream(func(r io.Reader) error { return hashConcatenated(r, entries) }, "unzip", "-p", path)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	return entries, nil
}

func read7zip(path string) ([]Entry, error) {
	if _, err := output("7zz", "t", "-bd", "-bso0", "-bsp0", path); err != nil {
		return nil, fmt.Errorf("test: %w", err)
	}
	list, err := output("7zz", "l", "-slt", "-ba", path)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	var entries []Entry
	var cur *Entry
	for _, line := range strings.Split(string(list), "\n") {
		key, val, ok := strings.Cut(line, " = ")
		if !ok {
			continue
		}
		switch key {
		case "Path":
			entries = append(entries, Entry{Name: val})
			cur = &entries[len(entries)-1]
		case "Folder":
			if cur != nil && val == "+" {
				cur.Dir = true
				cur.Name += "/" // 7-Zip drops the ZIP name's trailing slash
			}
		case "Size":
			if cur != nil {
				cur.Size, _ = strconv.ParseInt(val, 10, 64)
			}
		}
	}
	err = stream(func(r io.Reader) error { return hashConcatenated(r, entries) }, "7zz", "x", "-so", "-bd", path)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	return entries, nil
}

// bsdtar -tv: "-rw-r--r--  0 0      0           5 Nov 22 10:57 a b.txt"
var bsdtarLong = regexp.MustCompile(`^(\S+)\s+\d+\s+\S+\s+\S+\s+(\d+)\s+\S+\s+\d+\s+\S+ (.*)$`)

func readBsdtar(path string) ([]Entry, error) {
	list, err := output("bsdtar", "-tvf", path)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	var entries []Entry
	for _, line := range strings.Split(strings.TrimSuffix(string(list), "\n"), "\n") {
		if line == "" {
			continue
		}
		m := bsdtarLong.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("list: cannot parse %q", line)
		}
		size, _ := strconv.ParseInt(m[2], 10, 64)
		entries = append(entries, Entry{Name: m[3], Size: size, Dir: strings.HasPrefix(m[1], "d")})
	}
	err = stream(func(r io.Reader) error { return hashConcatenated(r, entries) }, "bsdtar", "-xOf", path)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	return entries, nil
}

// jsonEntry is one line of tests/readers output.
type jsonEntry struct {
	API   string `json:"api"`
	Name  string `json:"n"`
	Size  int64  `json:"s"`
	Dir   bool   `json:"d"`
	Hash  string `json:"h"`
	Error string `json:"error"`
	Done  bool   `json:"done"`
	Count int    `json:"count"`
}

// readJSONLines parses reader output per API ("" for Python) and returns the
// entries and, per API, the error it reported or the missing "done" line.
func readJSONLines(r io.Reader, apis []string) (map[string][]Entry, map[string]error, error) {
	entries := map[string][]Entry{}
	done := map[string]bool{}
	errs := map[string]error{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		var j jsonEntry
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			return nil, nil, fmt.Errorf("bad output line %q: %v", sc.Text(), err)
		}
		switch {
		case j.Error != "":
			errs[j.API] = errors.New(j.Error)
		case j.Done:
			done[j.API] = true
			if j.Count != len(entries[j.API]) {
				errs[j.API] = fmt.Errorf("reported %d entries, printed %d", j.Count, len(entries[j.API]))
			}
		default:
			h, err := parseHex(j.Hash)
			if err != nil {
				return nil, nil, fmt.Errorf("entry %q: %v", j.Name, err)
			}
			entries[j.API] = append(entries[j.API], Entry{Name: j.Name, Size: j.Size, Dir: j.Dir, SHA256: h})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	for _, api := range apis {
		if errs[api] == nil && !done[api] {
			errs[api] = errors.New("output ended before the reader finished")
		}
	}
	return entries, errs, nil
}

func readPython(path string) ([]Entry, error) {
	dir, err := readersDir()
	if err != nil {
		return nil, err
	}
	var entries map[string][]Entry
	var errs map[string]error
	serr := stream(func(r io.Reader) (err error) {
		entries, errs, err = readJSONLines(r, []string{""})
		return err
	}, "python3", filepath.Join(dir, "zipcheck.py"), path)
	if errs != nil && errs[""] != nil {
		return nil, errs[""] // the reader's own verdict says more than its exit status
	}
	if serr != nil {
		return nil, serr
	}
	return entries[""], nil
}

// readJava runs tests/readers/ZipCheck.java for one API (reader name) or,
// with only == "", for both, returning a result per reader name.
func readJava(path, only string) map[string]result {
	apiOf := map[string]string{ReaderJavaZipFile: "zipfile", ReaderJavaZipInputStream: "zipinputstream"}
	readers := []string{ReaderJavaZipFile, ReaderJavaZipInputStream}
	apiArg := "both"
	if only != "" {
		readers, apiArg = []string{only}, apiOf[only]
	}
	results := map[string]result{}
	fail := func(err error) map[string]result {
		for _, r := range readers {
			results[r] = result{err: err}
		}
		return results
	}
	dir, err := readersDir()
	if err != nil {
		return fail(err)
	}
	var apis []string
	for _, r := range readers {
		apis = append(apis, apiOf[r])
	}
	var entries map[string][]Entry
	var errs map[string]error
	serr := stream(func(r io.Reader) (err error) {
		entries, errs, err = readJSONLines(r, apis)
		return err
	}, "java", filepath.Join(dir, "ZipCheck.java"), "--api", apiArg, path)
	if errs == nil {
		return fail(serr)
	}
	for _, r := range readers {
		if e := errs[apiOf[r]]; e != nil {
			results[r] = result{err: e}
		} else {
			results[r] = result{entries: entries[apiOf[r]]}
		}
	}
	// A failed exit with no per-API error (e.g. the JVM died) still fails.
	if serr != nil {
		for _, r := range readers {
			if results[r].err == nil && len(errs) == 0 {
				results[r] = result{err: serr}
			}
		}
	}
	return results
}
