package plan

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/s3zip/s3zip/internal/nameset"
	"github.com/s3zip/s3zip/internal/zipformat"
)

// NamePolicy says how an object key becomes a name in the archive.
type NamePolicy string

const (
	// NamesRelative strips the listed prefix from the key. It is the default.
	NamesRelative NamePolicy = "relative"
	// NamesFlat keeps only the key's base name.
	NamesFlat NamePolicy = "flat"
	// NamesFull keeps the whole key.
	NamesFull NamePolicy = "full"
)

// DuplicatePolicy says what happens when two entries get the same name.
type DuplicatePolicy string

const (
	// DuplicatesError refuses the archive and lists the duplicates. It is the default.
	DuplicatesError DuplicatePolicy = "error"
	// DuplicatesSuffix renames later duplicates: "a.jpg", "a (2).jpg", …
	DuplicatesSuffix DuplicatePolicy = "suffix"
)

// ParseNamePolicy parses a policy name; "" means NamesRelative.
func ParseNamePolicy(s string) (NamePolicy, error) {
	switch NamePolicy(s) {
	case "", NamesRelative:
		return NamesRelative, nil
	case NamesFlat, NamesFull:
		return NamePolicy(s), nil
	}
	return "", fmt.Errorf("name policy %q: want relative, flat or full", s)
}

// ParseDuplicatePolicy parses a policy name; "" means DuplicatesError.
func ParseDuplicatePolicy(s string) (DuplicatePolicy, error) {
	switch DuplicatePolicy(s) {
	case "", DuplicatesError:
		return DuplicatesError, nil
	case DuplicatesSuffix:
		return DuplicatesSuffix, nil
	}
	return "", fmt.Errorf("duplicate policy %q: want error or suffix", s)
}

// NameFor returns the archive name of key listed under prefix.
func NameFor(key, prefix string, policy NamePolicy) string {
	switch policy {
	case NamesFull:
		return key
	case NamesFlat:
		if strings.HasSuffix(key, "/") {
			return path.Base(key) + "/"
		}
		return path.Base(key)
	default:
		return strings.TrimPrefix(key, prefix)
	}
}

// NameProblem is one entry whose name cannot go into an archive.
type NameProblem struct {
	Key    string // the source key, or "" for a manifest name with no key
	Name   string
	Reason string
}

// NameError lists every entry whose name was rejected.
type NameError struct{ Problems []NameProblem }

func (e *NameError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d entr%s cannot be named in the archive", len(e.Problems), plural(len(e.Problems), "y", "ies"))
	const show = 20
	for i, p := range e.Problems {
		if i == show {
			fmt.Fprintf(&b, "; and %d more", len(e.Problems)-show)
			break
		}
		fmt.Fprintf(&b, "; key %q (name %q): %s", p.Key, p.Name, p.Reason)
	}
	b.WriteString("; fix the keys, or give explicit names in a manifest")
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// CheckName returns why name cannot be an archive entry name, or "".
func CheckName(name string) string {
	switch {
	case name == "" || name == "/":
		return "empty name"
	case len(name) > zipformat.MaxNameLen:
		return fmt.Sprintf("name is %d bytes, over the ZIP limit of %d", len(name), zipformat.MaxNameLen)
	case !utf8.ValidString(name):
		return "name is not valid UTF-8"
	case strings.IndexByte(name, 0) >= 0:
		return "name contains a NUL byte"
	case strings.Contains(name, `\`):
		return `name contains a backslash (readers take it as a path separator)`
	case strings.HasPrefix(name, "/"):
		return "absolute path"
	case len(name) >= 2 && name[1] == ':' && ('a' <= name[0]|0x20 && name[0]|0x20 <= 'z'):
		return "name starts with a drive letter"
	}
	// Walk the segments without splitting, since a slice per name is
	// millions of allocations at millions of entries.
	for rest := strings.TrimSuffix(name, "/"); ; {
		seg, after, more := strings.Cut(rest, "/")
		rest = after
		switch seg {
		case "..":
			return `".." path segment`
		case ".":
			return `"." path segment`
		case "":
			return "empty path segment"
		}
		if !more {
			return ""
		}
	}
}

// CheckNames rejects, all at once, every entry whose name cannot be used.
func CheckNames(entries []Entry) error {
	var problems []NameProblem
	for i := range entries {
		e := &entries[i]
		reason := CheckName(e.Name)
		if reason == "" && strings.HasSuffix(e.Name, "/") != e.Dir {
			if e.Dir {
				reason = `directory name must end in "/"`
			} else {
				reason = fmt.Sprintf(`name ends in "/" but the object has %d bytes`, e.Size)
			}
		}
		if reason != "" {
			problems = append(problems, NameProblem{Key: e.Source.Key, Name: e.Name, Reason: reason})
		}
	}
	if problems != nil {
		return &NameError{Problems: problems}
	}
	return nil
}

// DuplicateError lists every name given to more than one entry.
type DuplicateError struct {
	Names map[string][]string // name, as the first entry spells it, → source keys
	// Spellings is set when some of the names differ only in their Unicode
	// normalization, such as NFC "é" and NFD "e"+U+0301.
	Spellings bool
}

// sameName returns the NFC form two names are compared in. The precomposed
// and decomposed spellings of a name look the same in every listing and
// extract to the same file on macOS, so they count as one. Entries keep the
// bytes they were given.
func sameName(name string) string { return norm.NFC.String(name) }

func (e *DuplicateError) Error() string {
	names := make([]string, 0, len(e.Names))
	for n := range e.Names {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%d name%s would appear more than once in the archive", len(names), plural(len(names), "", "s"))
	for i, n := range names {
		if i == 20 {
			fmt.Fprintf(&b, "; and %d more", len(names)-20)
			break
		}
		fmt.Fprintf(&b, "; %q from keys %q", n, e.Names[n])
	}
	if e.Spellings {
		b.WriteString("; names that differ only in their Unicode spelling (NFC or NFD, e.g. from macOS) count as the same")
	}
	b.WriteString(`; use duplicates policy "suffix" to rename them, or another name policy`)
	return b.String()
}

// ResolveDuplicates applies policy to entries with equal names. With
// DuplicatesSuffix the first keeps its name and later ones get a number
// before the extension, skipping every name an entry already has, so no
// entry loses its own name to a suffixed one.
func ResolveDuplicates(entries []Entry, policy DuplicatePolicy) error {
	if policy != DuplicatesSuffix {
		return checkDuplicates(entries)
	}
	taken := make(map[string]bool, len(entries))
	for i := range entries {
		taken[sameName(entries[i].Name)] = true
	}
	kept := make(map[string]bool, len(entries))
	for i := range entries {
		name := entries[i].Name
		if !kept[sameName(name)] {
			kept[sameName(name)] = true
			continue
		}
		for n := 2; ; n++ {
			candidate := suffixName(name, n)
			if taken[sameName(candidate)] {
				continue
			}
			if reason := CheckName(candidate); reason != "" {
				return &NameError{Problems: []NameProblem{{Key: entries[i].Source.Key, Name: candidate, Reason: reason}}}
			}
			entries[i].Name = candidate
			taken[sameName(candidate)], kept[sameName(candidate)] = true, true
			break
		}
	}
	return nil
}

// checkDuplicates refuses entries with equal names, listing them.
func checkDuplicates(entries []Entry) error {
	seen := nameset.New(len(entries), func(i int) string { return sameName(entries[i].Name) })
	var dups map[string][]string
	spellings := false
	for i := range entries {
		first := seen.Add(i)
		if first < 0 {
			continue
		}
		if dups == nil {
			dups = make(map[string][]string)
		}
		name := entries[first].Name
		spellings = spellings || entries[i].Name != name
		if len(dups[name]) == 0 {
			dups[name] = append(dups[name], entries[first].Source.Key)
		}
		dups[name] = append(dups[name], entries[i].Source.Key)
	}
	if dups != nil {
		return &DuplicateError{Names: dups, Spellings: spellings}
	}
	return nil
}

// FolderClashError lists entries whose name is also the folder of other
// entries, such as "sub" and "sub/x". A file system holds a file or a folder
// under one name, not both, so the archive could not be extracted.
type FolderClashError struct {
	Clashes [][2]FolderClashEntry // the file, and an entry under its name
}

// FolderClashEntry is one side of a clash, the name and its source key.
type FolderClashEntry struct{ Name, Key string }

func (e *FolderClashError) Error() string {
	var b strings.Builder
	n := len(e.Clashes)
	fmt.Fprintf(&b, "%d name%s would be both a file and a folder in the archive", n, plural(n, "", "s"))
	for i, c := range e.Clashes {
		if i == 20 {
			fmt.Fprintf(&b, "; and %d more", n-20)
			break
		}
		fmt.Fprintf(&b, "; file %q (key %q) and %q (key %q)", c[0].Name, c[0].Key, c[1].Name, c[1].Key)
	}
	fmt.Fprintf(&b, `; no file system can extract both: rename one through a manifest (--manifest, a CSV "key,name" listing every object and its name in the archive: %q as %q, for instance)`,
		e.Clashes[0][0].Key, e.Clashes[0][0].Name+".file")
	return b.String()
}

// CheckFolderClashes refuses entries whose name is also the folder of
// others, comparing names in NFC as duplicates are, and lists every pair.
func CheckFolderClashes(entries []Entry) error {
	names := make([]string, len(entries))
	for i := range entries {
		names[i] = entries[i].Name
	}
	clashes := zipformat.FolderClashes(names, sameName)
	if len(clashes) == 0 {
		return nil
	}
	err := &FolderClashError{}
	for _, c := range clashes {
		f, u := &entries[c.File], &entries[c.Under]
		err.Clashes = append(err.Clashes, [2]FolderClashEntry{{f.Name, f.Source.Key}, {u.Name, u.Source.Key}})
	}
	return err
}

// suffixName puts " (n)" before the extension of the base name.
func suffixName(name string, n int) string {
	dir := strings.HasSuffix(name, "/")
	name = strings.TrimSuffix(name, "/")
	base := path.Base(name)
	ext := path.Ext(base)
	if ext == base { // ".bashrc"
		ext = ""
	}
	stem := strings.TrimSuffix(name, ext)
	s := fmt.Sprintf("%s (%d)%s", stem, n, ext)
	if dir {
		s += "/"
	}
	return s
}

// AddDirectories returns entries with a directory entry added for every
// folder path that has none, each placed before the first entry inside it.
func AddDirectories(entries []Entry) []Entry {
	have := make(map[string]bool) // by sameName: one folder in two spellings gets one entry
	for i := range entries {
		if entries[i].Dir {
			have[sameName(entries[i].Name)] = true
		}
	}
	out := make([]Entry, 0, len(entries))
	for _, e := range entries {
		var parents []string
		for p := path.Dir(strings.TrimSuffix(e.Name, "/")); p != "." && p != "/"; p = path.Dir(p) {
			parents = append(parents, p+"/")
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if !have[sameName(parents[i])] {
				have[sameName(parents[i])] = true
				out = append(out, Entry{Name: parents[i], Dir: true, ModTime: e.ModTime})
			}
		}
		out = append(out, e)
	}
	return out
}
