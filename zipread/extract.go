package zipread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/s3zip/s3zip/internal/zipformat"
)

// ExtractOptions tune Extract; zero values take the defaults.
type ExtractOptions struct {
	Concurrency  int   // ranged GETs at once, DefaultConcurrency if zero
	ChunkSize    int64 // STORED entries above this are downloaded in parallel chunks, DefaultChunkSize if zero
	CoalesceSize int64 // bytes of neighbouring entries per ranged GET, DefaultCoalesceSize if zero
	Overwrite    bool  // replace existing files instead of refusing
	// SkipSymlinks leaves symbolic link entries out instead of refusing
	// the archive. Links are never created, as a target may point anywhere.
	SkipSymlinks bool
}

// ErrSymlink is why Extract refuses an archive holding a symbolic link
// when SkipSymlinks is not set.
var ErrSymlink = errors.New("symbolic links are not extracted")

// ExtractResult counts what Extract wrote.
type ExtractResult struct {
	Entries int
	Files   int
	Dirs    int
	Bytes   int64 // of file content written
	// SkippedSymlinks counts the symbolic links SkipSymlinks left out.
	SkippedSymlinks int
}

// Extract writes every entry under dir, each under its EntryPath, creating dir
// if missing. It writes "./a" as "a", and "./" not at all.
//
// Before anything is downloaded it refuses names that CheckName finds could
// leave dir, two entries with one path, naming both, a file whose name is
// also another entry's folder, symbolic links, encrypted entries and methods
// other than STORED and deflate. Unless opts.Overwrite is set it also refuses
// files that already exist. All writes go through an os.Root, so a symbolic
// link already in dir cannot redirect them outside it.
//
// Entries are downloaded with parallel ranged GETs. Neighbouring entries
// share one GET, and large STORED entries are split into chunks written in
// place. Every entry's CRC-32 is checked as it is written; a file whose
// CRC-32 or local header disagrees is removed and Extract fails.
// Modification times of files and directories are set from the archive.
func (a *Archive) Extract(ctx context.Context, dir string, opts ExtractOptions) (*ExtractResult, error) {
	fail := func(err error) (*ExtractResult, error) {
		return nil, fmt.Errorf("extract s3://%s/%s to %s: %w", a.Bucket, a.Key, dir, err)
	}
	res := &ExtractResult{}
	a, res.SkippedSymlinks = a.extractable(opts.SkipSymlinks)
	// Clashes are checked before duplicates, so a file "sub" and a folder
	// "sub/" are both named.
	if err := folderClash(a.Entries); err != nil {
		return fail(err)
	}
	paths, err := a.extractPaths()
	if err != nil {
		return fail(err)
	}
	res.count(a.Entries)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fail(err)
	}
	defer root.Close()

	x := &extractor{a: a, root: root, overwrite: opts.Overwrite, files: make([]extractFile, len(a.Entries)), paths: paths}
	if err := x.prepare(); err != nil {
		return fail(err)
	}
	s := newScan(a, x, opts.Concurrency, opts.ChunkSize, opts.CoalesceSize)
	if err := s.run(ctx); err != nil {
		x.closeAll()
		return fail(err)
	}
	res.Bytes = x.bytes.Load()
	if err := x.setDirTimes(); err != nil {
		return fail(err)
	}
	return res, nil
}

// extractable returns a without the entries Extract leaves out, which are
// "./" and, when skipSymlinks, the symbolic links, and how many symbolic
// links it left out. The scan reads each entry at its own offset, so the
// others stay as they are.
func (a *Archive) extractable(skipSymlinks bool) (*Archive, int) {
	skipped := 0
	kept := make([]Entry, 0, len(a.Entries))
	for _, e := range a.Entries {
		switch p, err := EntryPath(e.Name); {
		case skipSymlinks && e.Mode&fs.ModeSymlink != 0:
			skipped++
		case err == nil && p == "" && e.IsDir():
		default:
			kept = append(kept, e)
		}
	}
	if len(kept) == len(a.Entries) {
		return a, skipped
	}
	only := *a
	only.Entries = kept
	return &only, skipped
}

// extractPaths returns the EntryPath each entry is written to. It refuses
// what Extract does not write, which is an unsafe name, two entries with one
// path, a symbolic link or an entry it cannot read.
func (a *Archive) extractPaths() ([]string, error) {
	paths := make([]string, len(a.Entries))
	seen := make(map[string]int, len(a.Entries))
	for i := range a.Entries {
		e := &a.Entries[i]
		p, err := EntryPath(e.Name)
		if err != nil {
			return nil, err
		}
		paths[i] = p
		clean := strings.TrimSuffix(p, "/")
		j, dup := seen[clean]
		switch {
		case dup && paths[j] == a.Entries[j].Name && p == e.Name:
			return nil, fmt.Errorf("entry %q: duplicate name", e.Name)
		case dup:
			return nil, fmt.Errorf("entries %q and %q would both be written to %q (without their \".\" components); rename one", a.Entries[j].Name, e.Name, p)
		case e.Mode&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("entry %q: %w", e.Name, ErrSymlink)
		case !e.IsDir() && readable(e) != "":
			return nil, fmt.Errorf("entry %q %s", e.Name, readable(e))
		}
		seen[clean] = i
	}
	return paths, nil
}

// count counts the entries Extract writes, files and directories.
func (res *ExtractResult) count(entries []Entry) {
	res.Entries = len(entries)
	for i := range entries {
		if entries[i].IsDir() {
			res.Dirs++
		} else {
			res.Files++
		}
	}
}

// prepare makes the directories first, so entries can be written in any
// order. Unless overwriting, it then refuses a file that exists before a
// byte is downloaded.
func (x *extractor) prepare() error {
	made := make(map[string]bool)
	for i := range x.a.Entries {
		e := &x.a.Entries[i]
		d := path.Dir(strings.TrimSuffix(x.paths[i], "/"))
		if e.IsDir() {
			d = strings.TrimSuffix(x.paths[i], "/")
		}
		if d != "." && !made[d] {
			if err := x.root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("entry %q: %w", e.Name, err)
			}
			made[d] = true
		}
		if !e.IsDir() && !x.overwrite {
			if _, err := x.root.Lstat(x.paths[i]); err == nil {
				return fmt.Errorf("entry %q: %w (ExtractOptions.Overwrite replaces it)", e.Name, fs.ErrExist)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("entry %q: %w", e.Name, err)
			}
		}
	}
	return nil
}

// setDirTimes sets the directories' modification times from the archive,
// deepest first. It runs last, because writing files changes them.
func (x *extractor) setDirTimes() error {
	var dirs []int
	for i := range x.a.Entries {
		if x.a.Entries[i].IsDir() {
			dirs = append(dirs, i)
		}
	}
	sort.Slice(dirs, func(p, q int) bool {
		return strings.Count(x.paths[dirs[p]], "/") > strings.Count(x.paths[dirs[q]], "/")
	})
	for _, i := range dirs {
		e := &x.a.Entries[i]
		if err := x.root.Chtimes(strings.TrimSuffix(x.paths[i], "/"), e.Modified, e.Modified); err != nil {
			return fmt.Errorf("entry %q: %w", e.Name, err)
		}
	}
	return nil
}

type extractFile struct {
	mu  sync.Mutex
	f   *os.File
	tmp string // the temporary name it is written under, renamed when whole
}

type extractor struct {
	a         *Archive
	root      *os.Root
	overwrite bool
	files     []extractFile
	paths     []string // the EntryPath each entry is written to
	bytes     atomic.Int64
}

func (x *extractor) header(i int, h *localHeader, problem string) error {
	e := &x.a.Entries[i]
	if problem != "" {
		return fmt.Errorf("entry %q: %s", e.Name, problem)
	}
	if d := compareLocal(e, h); len(d) > 0 {
		return fmt.Errorf("entry %q: %s", e.Name, d[0])
	}
	return nil
}

// descriptor accepts any data descriptor: the file's CRC-32 is checked
// against the central directory's, which gives every size.
func (x *extractor) descriptor(int, int64, []byte) error { return nil }

// content opens entry i's file on first use; chunks write at their offsets.
// The file is written under a temporary name ".s3zip-get-*.tmp" in its
// directory, so that a get stopped mid-file, even by kill -9, never leaves a
// truncated file under the entry's name; finished renames it.
func (x *extractor) content(i int, at int64) (io.Writer, error) {
	e := &x.a.Entries[i]
	if e.IsDir() {
		return io.Discard, nil
	}
	xf := &x.files[i]
	xf.mu.Lock()
	defer xf.mu.Unlock()
	if xf.f == nil {
		perm := e.Mode.Perm()
		if perm == 0 {
			perm = 0o644
		}
		var f *os.File
		var err error
		for try := 0; try < 10; try++ {
			xf.tmp = path.Join(path.Dir(x.paths[i]), fmt.Sprintf(".s3zip-get-%d-%08x.tmp", i, rand.Uint32()))
			f, err = x.root.OpenFile(xf.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
			if !errors.Is(err, fs.ErrExist) {
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", e.Name, err)
		}
		xf.f = f
	}
	return &countingWriter{io.NewOffsetWriter(xf.f, at), &x.bytes}, nil
}

func (x *extractor) finished(i int, crc uint32, n int64) error {
	e := &x.a.Entries[i]
	if e.IsDir() {
		return nil
	}
	if _, err := x.content(i, 0); err != nil { // an empty entry may have had no write
		return err
	}
	xf := &x.files[i]
	xf.mu.Lock()
	f, tmp := xf.f, xf.tmp
	xf.f = nil
	xf.mu.Unlock()
	err := f.Close()
	switch {
	case err != nil:
		err = fmt.Errorf("entry %q: %w", e.Name, err)
	case crc != e.CRC32:
		err = fmt.Errorf("entry %q: data has CRC-32 %08x, the central directory says %08x", e.Name, crc, e.CRC32)
	case n != e.UncompressedSize:
		err = fmt.Errorf("entry %q: data decodes to %d bytes, the central directory says %d", e.Name, n, e.UncompressedSize)
	default:
		err = x.place(e.Name, x.paths[i], tmp)
	}
	if err != nil {
		_ = x.root.Remove(tmp)
		return err
	}
	if err := x.root.Chtimes(x.paths[i], e.Modified, e.Modified); err != nil {
		return fmt.Errorf("entry %q: %w", e.Name, err)
	}
	return nil
}

// place gives the whole file at tmp its entry's path p. Without overwrite a
// hard link does it, which fails rather than replace a file that appeared
// since the check before the download; where links are not supported, the
// path is checked again and the file renamed.
func (x *extractor) place(name, p, tmp string) error {
	if !x.overwrite {
		err := x.root.Link(tmp, p)
		if err == nil {
			return x.root.Remove(tmp)
		}
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("entry %q: %w (use overwrite to replace it)", name, fs.ErrExist)
		}
		if _, lerr := x.root.Lstat(p); lerr == nil {
			return fmt.Errorf("entry %q: %w (use overwrite to replace it)", name, fs.ErrExist)
		}
	}
	if err := x.root.Rename(tmp, p); err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	return nil
}

func (x *extractor) unread(i int, why string) error {
	return fmt.Errorf("entry %q: %s", x.a.Entries[i].Name, why)
}

// closeAll closes and removes the temporary files of a failed extraction.
func (x *extractor) closeAll() {
	for i := range x.files {
		xf := &x.files[i]
		xf.mu.Lock()
		if xf.f != nil {
			xf.f.Close()
			_ = x.root.Remove(xf.tmp)
			xf.f = nil
		}
		xf.mu.Unlock()
	}
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// folderClash refuses entries a file system cannot hold together, such as a
// file "sub" and an entry under the folder "sub/". S3 holds both keys, so
// s3zip extract writes such an archive to objects.
func folderClash(entries []Entry) error {
	names := make([]string, len(entries))
	for i := range entries {
		names[i] = entries[i].Name
	}
	c := zipformat.FolderClashes(names, func(s string) string { return s })
	if len(c) == 0 {
		return nil
	}
	more := ""
	if len(c) > 1 {
		more = fmt.Sprintf(" (and %d more like them)", len(c)-1)
	}
	return fmt.Errorf("entries %q and %q%s: %q is a file and also the folder of %q, and a file system holds only one of them; extract the archive into S3 instead (s3zip extract), where both are objects",
		names[c[0].File], names[c[0].Under], more, names[c[0].File], names[c[0].Under])
}
