package zipformat

import (
	"reflect"
	"strings"
	"testing"
)

func TestFolderClashes(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  []FolderClash
	}{
		{[]string{"sub", "sub/x"}, []FolderClash{{0, 1}}},
		{[]string{"a/sub/x/y.txt", "a/sub"}, []FolderClash{{1, 0}}},
		{[]string{"sub", "sub/"}, []FolderClash{{0, 1}}},
		{[]string{"sub/", "sub/x", "subway", "sub.txt", "x/sub"}, nil},
		{[]string{"a", "a/b", "a/b/c"}, []FolderClash{{0, 1}, {1, 2}}}, // the nearest file
	} {
		if got := FolderClashes(c.names, func(s string) string { return s }); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, want %v", c.names, got, c.want)
		}
	}
	if got := FolderClashes([]string{"SUB", "sub/x"}, strings.ToLower); len(got) != 1 {
		t.Errorf("with a folding comparison: %v, want one clash", got)
	}
}
