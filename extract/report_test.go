package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The report is encoded an object at a time (encodeReport) into exactly
// what json.MarshalIndent of the whole makes, names that look like the
// splice point included.
func TestEncodeReportIsMarshalIndent(t *testing.T) {
	for _, res := range []*Result{
		{Archive: "s3://a/b.zip", ETag: `"x"`, ContentTypes: map[string]int{"text/plain": 2, "objects\": null": 1}, Objects: []Written{}},
		{Archive: "s3://a/\n  \"objects\": null.zip", ETag: `"x"`, ContentTypes: map[string]int{}, Objects: []Written{{Key: "p/a", Size: 3, CRC32: "0000abcd"}, {Key: "p/\"b\"", Size: 0, CRC32: "00000000"}},
			Skipped: []Skipped{{Name: "l", Why: "symlink"}}},
	} {
		want, _ := json.MarshalIndent(report{Archive: res.Archive, ETag: res.ETag, ContentTypes: res.ContentTypes, Objects: res.Objects, Skipped: res.Skipped}, "", "  ")
		if got := encodeReport(res); !bytes.Equal(got, want) {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	}
}

// The finalizer reports nothing as extracted unless the workers wrote every
// planned key exactly once and nothing else (both lists sorted).
func TestAccountFor(t *testing.T) {
	ex := &Extraction{DestBucket: "d", Prefix: "p/"}
	w := func(keys ...string) []Written {
		out := []Written{}
		for _, k := range keys {
			out = append(out, Written{Key: k})
		}
		return out
	}
	planned := []string{"p/a", "p/b", "p/c"}
	for _, c := range []struct {
		name    string
		written []Written
		want    []string // in the error, in order; none: no error
	}{
		{"exact", w("p/a", "p/b", "p/c"), nil},
		{"missing", w("p/a", "p/c"), []string{"1 problems", "p/b was planned but no batch reports writing it"}},
		{"missing-last", w("p/a", "p/b"), []string{"1 problems", "p/c was planned"}},
		{"extra", w("p/a", "p/b", "p/bb", "p/c"), []string{"1 problems", "p/bb was written but not planned"}},
		{"twice", w("p/a", "p/a", "p/b", "p/c"), []string{"1 problems", "p/a is in the results twice"}},
		{"none", w(), []string{"3 problems", "p/a was planned", "p/b was planned", "p/c was planned"}},
		{"all-wrong", w("p/0", "p/b", "p/b"), []string{"4 problems", "p/0 was written but not planned", "p/a was planned", "p/b is in the results twice", "p/c was planned"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := accountFor(ex, planned, c.written)
			if c.want == nil {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			var inc *IncompleteError
			if !errors.As(err, &inc) {
				t.Fatalf("error %v, want an IncompleteError", err)
			}
			msg, at := err.Error(), 0
			for _, part := range c.want {
				i := strings.Index(msg[at:], part)
				if i < 0 {
					t.Fatalf("error %q lacks %q (after byte %d)", msg, part, at)
				}
				at += i + len(part)
			}
		})
	}
}
