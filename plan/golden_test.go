package plan

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden plans in testdata/golden")

// goldenEntries is a small fixed input: small and big objects, a folder, an
// empty object, a Unicode name, one CRC known.
func goldenEntries() []Entry {
	at := time.Date(2025, 3, 4, 5, 6, 8, 0, time.UTC)
	e := func(name string, size int64) Entry {
		return Entry{Name: name, Source: Source{Bucket: "src", Key: "in/" + name, ETag: `"etag-` + name + `"`}, Size: size, ModTime: at}
	}
	out := []Entry{e("docs/", 0), e("docs/readme.txt", 1234), e("photos/a.jpg", 6*MiB+17), e("photos/b.jpg", 2*MiB),
		e("photos/c.jpg", 7*MiB), e("empty.bin", 0), e("naïve/résumé.pdf", 3*MiB+5), e("video.mp4", 12*MiB)}
	out[0].Dir = true
	out[1].CRC32 = KnownCRC(0x1234abcd)
	return out
}

// The serialized plan of a fixed input is stable: a change to the layout,
// the parts or the encoding shows up as a diff here (go test -run Golden -update).
func TestGoldenPlans(t *testing.T) {
	for _, s := range strategies {
		t.Run(string(s), func(t *testing.T) {
			p := mustPlan(t, goldenEntries(), Options{Strategy: s, Workers: 2, PartSize: 5 * MiB})
			enc, err := p.Encode()
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			got.Write(enc.Header)
			got.WriteString("\n--- entries.jsonl\n")
			got.Write(enc.Entries)
			got.WriteString("--- parts.jsonl\n")
			got.Write(enc.Parts)
			path := filepath.Join("testdata", "golden", string(s)+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./plan -run Golden -update)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("plan differs from %s (run with -update if the change is intended):\n%s", path, got.String())
			}
		})
	}
}
