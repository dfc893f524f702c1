package workflow

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// The report the finalizer puts is its head, the entries' lines spooled to
// $TMPDIR as the entries file streams by, and its tail, read as one: byte
// for byte the json.MarshalIndent of the Report with every entry in
// Entries, for no entry, one, and several (a DEFLATE entry, digests, split
// archives' numbers), read whole and read again after a seek.
func TestReportLinesAreTheReport(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	stored := &plan.Entry{Name: "a<b>&c.txt", Source: plan.Source{Bucket: "src", Key: "in/a<b>&c.txt"}, Size: 1000, CRC32: plan.KnownCRC(0x1234abcd), SHA256: strings.Repeat("ab", 32)}
	deflated := &plan.Entry{Name: "ünï/名前.txt", Source: plan.Source{Bucket: "work", Key: "deflate/1"}, Size: 300, CRC32: plan.KnownCRC(7),
		Method: plan.MethodDeflate, RawSize: 2000, RawCRC32: plan.KnownCRC(0xdeadbeef), Origin: &plan.Source{Bucket: "src", Key: "in/ünï/名前.txt"}}
	empty := &plan.Entry{Name: "empty/", Dir: true, CRC32: plan.KnownCRC(0)}
	all := []plan.PlacedEntry{{Index: 0, Entry: stored}, {Index: 1, Entry: deflated, Offset: 1100}, {Index: 2, Entry: empty, Offset: 1500}}
	for _, tc := range []struct {
		name    string
		entries []plan.PlacedEntry
		archive int
	}{{"none", nil, 0}, {"one", all[:1], 0}, {"several", all, 0}, {"split", all, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Report{Archive: Archive{URI: "s3://dst/r.zip", Size: 5000, ETag: `"e"`, CRC32: "01234567"}, Execution: "exec", Strategy: plan.StrategyDuo,
				Stats: ReportStats{Stats: plan.Stats{Entries: len(tc.entries)}, FinalizeMillis: 12}, Finished: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
			if tc.archive > 0 {
				r.Archives = []Archive{r.Archive, r.Archive}
			}
			lines, err := newReportLines()
			if err != nil {
				t.Fatal(err)
			}
			defer lines.discard()
			want := r
			want.Entries = []ReportEntry{}
			for i := range tc.entries {
				if err := lines.add(&tc.entries[i], tc.archive); err != nil {
					t.Fatal(err)
				}
				want.Entries = append(want.Entries, reportEntry(&tc.entries[i], tc.archive))
			}
			wantDoc, err := json.MarshalIndent(want, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			doc, size, err := lines.document(&r)
			if err != nil {
				t.Fatal(err)
			}
			for read := range 2 {
				if _, err := doc.Seek(0, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(doc)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, wantDoc) || size != int64(len(wantDoc)) {
					t.Fatalf("read %d: the report (%d bytes, size said %d) is not json.MarshalIndent's (%d bytes):\n%s\nwant\n%s", read+1, len(got), size, len(wantDoc), got, wantDoc)
				}
			}
			if _, err := os.Stat(doc.Name()); err != nil {
				t.Errorf("the document is not read from its file in $TMPDIR: %v", err)
			}
		})
	}
}

// The finalizer spools each entry's central header and report line to
// $TMPDIR as it reads the entries file: a $TMPDIR it cannot write fails the
// run before the upload is completed (Abort discards it), with an error
// that says where the files go; nothing is left at the destination.
func TestFinalizerDirectoryNeedsTMPDIR(t *testing.T) {
	e := newEnv(t, []object{{"in/a.txt", 1000, s3test.ChecksumCRC32}, {"in/big.bin", 6 * mib, s3test.ChecksumCRC32}})
	t.Setenv("TMPDIR", t.TempDir())
	missing := filepath.Join(t.TempDir(), "missing")
	r := e.runner()
	r.OnProgress = func(p Progress) {
		if p.Phase == PhaseFinalizing {
			os.Setenv("TMPDIR", missing) // t.Setenv restores it
		}
	}
	_, err := r.Run(t.Context(), request("stream", "in/", "out/t.zip", ""), "exec-no-tmp")
	if err == nil || !strings.Contains(err.Error(), "the finalizer writes it to $TMPDIR") {
		t.Fatalf("finalizing with $TMPDIR missing: %v, want the run failed by an error saying the finalizer writes to $TMPDIR", err)
	}
	_, herr := e.s3.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("out/t.zip")})
	if !s3x.NotFound(herr) {
		t.Errorf("the archive's key after the failed run: %v, want it not found", herr)
	}
}
