package zipformat

import "strings"

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
func FolderClashes(names []string, same func(string) string) []FolderClash {
	files := make(map[string]int)
	for i, n := range names {
		if !strings.HasSuffix(n, "/") {
			if _, ok := files[same(n)]; !ok {
				files[same(n)] = i
			}
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
			if f, ok := files[n[:k]]; ok {
				out = append(out, FolderClash{File: f, Under: i})
				break
			}
		}
	}
	return out
}
