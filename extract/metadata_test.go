package extract

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/objmeta"
	"github.com/s3zip/s3zip/internal/zipformat"
)

// What an entry's metadata field kept goes into its item, and chooses its
// Content-Type unless the request overrides the extension; entries without
// one get the table's.
func TestItemsCarryKeptMetadata(t *testing.T) {
	field, err := zipformat.AppendMetadataExtra(nil, &zipformat.Metadata{ContentType: "text/plain", CacheControl: "no-cache", User: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	kept := stored("kept.html", 10)
	kept.MetaField = field[4:]
	keptCSS := stored("kept.css", 10)
	keptCSS.MetaField = field[4:]
	var types objmeta.ContentTypes
	if err := types.ParseOverride("css=text/x-custom"); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, Options{SmallStored: 1 << 20, ContentTypes: types}, kept, keptCSS, stored("plain.html", 10))
	for name, want := range map[string]string{"kept.html": "text/plain", "kept.css": "text/x-custom", "plain.html": "text/html; charset=utf-8"} {
		it := itemOf(t, p, name)
		if it.ContentType != want {
			t.Errorf("%s: Content-Type %q, want %q", name, it.ContentType, want)
		}
		if (it.Meta != nil) != strings.HasPrefix(name, "kept") || it.Meta != nil && (it.Meta.CacheControl != "no-cache" || it.Meta.User["k"] != "v") {
			t.Errorf("%s: meta %+v", name, it.Meta)
		}
	}
}

// An entry whose metadata field is malformed is refused before anything is
// written, saying what is wrong with it.
func TestMalformedMetadataRefused(t *testing.T) {
	bad := stored("bad.html", 10)
	bad.MetaField = []byte{1, 4, 9, 0} // a user record longer than the field
	huge, err := zipformat.AppendMetadataExtra(nil, &zipformat.Metadata{User: map[string]string{"k": strings.Repeat("\x01", objmeta.MaxFieldBytes)}})
	if err != nil {
		t.Fatal(err)
	}
	big := stored("big.html", 10)
	big.MetaField = huge[4:] // well formed, but its JSON (escaped) would not fit a job
	a, _ := layout(stored("good.txt", 5), bad, big)
	_, err = Check(a, "out/", Options{})
	var re *EntriesRefusedError
	if !errors.As(err, &re) || len(re.Entries) != 2 {
		t.Fatalf("got %v, want bad.html and big.html refused for their metadata fields", err)
	}
	for i, want := range []struct{ name, why string }{{"bad.html", "says 9 bytes"}, {"big.html", "more than the 8192 s3zip writes"}} {
		if re.Entries[i].Name != want.name || !strings.Contains(re.Entries[i].Why, "metadata extra field 0x3373") || !strings.Contains(re.Entries[i].Why, want.why) {
			t.Errorf("refused %+v, want %s: %s", re.Entries[i], want.name, want.why)
		}
	}
}

// itemOf is the item that writes the named entry.
func itemOf(t *testing.T, p *Plan, name string) Item {
	t.Helper()
	j := jobOf(t, p, name)
	k := slices.IndexFunc(j.Items, func(it Item) bool { return it.Name == name })
	return j.Items[k]
}

// The Summary (the execution's output) names the most common types only,
// the rest summed, so thousands of distinct kept types cannot take it past
// 256 KiB; nothing is lost from the count.
func TestSummaryNamesTheMostCommonTypes(t *testing.T) {
	counts := map[string]int{"text/html": 50, "image/png": 7}
	for i := range 5000 {
		counts[fmt.Sprintf("application/x-%04d", i)] = 1
	}
	got := mostTypes(counts, summaryTypes)
	if len(got) != summaryTypes+1 || got["text/html"] != 50 || got["image/png"] != 7 || got[OtherTypes] != 5000-(summaryTypes-2) {
		t.Fatalf("%d types, html %d, png %d, other %d", len(got), got["text/html"], got["image/png"], got[OtherTypes])
	}
	small := map[string]int{"a": 1}
	if got := mostTypes(small, summaryTypes); len(got) != 1 || got["a"] != 1 {
		t.Errorf("a short count changed: %v", got)
	}
}
