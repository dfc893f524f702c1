package zipformat

import (
	"strings"

	"github.com/s3zip/s3zip/internal/nameset"
)

// FolderClash is a file entry whose name is also the folder of another
// entry: "sub" and "sub/x" (or "sub/"). A file system holds one or the
// other, so such an archive cannot be extracted to one whole (S3 holds both
// keys).
type FolderClash struct {
	File  int // index of the file entry ("sub")
	Under int // index of an entry under the folder of the same name ("sub/x")
}

// FolderClashes finds, among entry names (a directory's ends in "/"), every
// entry under a folder whose name a file entry has, paired with the first
// such file. same is the form names are compared in (the identity, or a
// Unicode normalization).
// Names are kept in a nameset, not a map: at millions of entries a map is
// the planner's largest allocation.
func FolderClashes(names []string, same func(string) string) []FolderClash {
	files := nameset.New(len(names), func(i int) string { return same(names[i]) })
	for i, n := range names {
		if !strings.HasSuffix(n, "/") {
			files.Add(i)
		}
	}
	var out []FolderClash
	for i, n := range names {
		// The folders a name makes: its parents, and itself for a directory.
		n = same(n)
		k := strings.LastIndexByte(n, '/')
		if k == len(n)-1 {
			n = n[:k]
			k = len(n)
		}
		for ; k > 0; k = strings.LastIndexByte(n[:k], '/') {
			if f := files.Find(n[:k]); f >= 0 {
				out = append(out, FolderClash{File: f, Under: i})
				break
			}
		}
	}
	return out
}
