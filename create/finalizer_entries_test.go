package create

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3err"
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
	if !s3err.NotFound(herr) {
		t.Errorf("the archive's key after the failed run: %v, want it not found", herr)
	}
}

// docGetter serves whole objects from memory by key.
type docGetter struct {
	S3   // what the test does not call: nil
	docs map[string]string
}

func (g docGetter) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	doc, ok := g.docs[aws.ToString(in.Key)]
	if !ok {
		return nil, &types.NoSuchKey{}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(strings.NewReader(doc)), ContentLength: aws.Int64(int64(len(doc)))}, nil
}

// The CRC-32s a batch wrote are taken into the finalizer's table as the
// document is read, not decoded into maps first (a batch of small entries
// writes tens of MB): those of the batch's parts, by entry index; an index
// not in the plan, or a CRC-32 that is not 8 hex digits, is refused.
func TestBatchCRCsReadAsTheyCome(t *testing.T) {
	job := &Job{WorkBucket: "work", WorkPrefix: "w/"}
	for _, tc := range []struct {
		name, doc string
		want      map[plan.EntryIndex]uint32 // every known CRC-32 after
		err       string
	}{
		{"taken", `{"parts":{"1":{"0":"0000000a","2":"0000000c"},"2/1":{"1":"0000000b"}}}`, map[plan.EntryIndex]uint32{0: 10, 2: 12}, ""},
		{"other-archive-part-ignored", `{"parts":{"2/1":{"1":"0000000b"}}}`, map[plan.EntryIndex]uint32{}, ""},
		{"index-not-in-plan", `{"parts":{"1":{"3":"0000000a"}}}`, nil, `entry "3", which is not in the plan`},
		{"not-an-index", `{"parts":{"1":{"x":"0000000a"}}}`, nil, `entry "x", which is not in the plan`},
		{"not-hex", `{"parts":{"1":{"0":"zz"}}}`, nil, "want 8 hex digits"},
		{"not-an-object", `["1"]`, nil, "want a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crcs := plan.NewCRCs(3)
			out := &BatchResult{Parts: []PartResult{{Part: 1}}, CRCsKey: "w/crcs/1.json"}
			err := readBatchCRCs(t.Context(), docGetter{docs: map[string]string{"w/crcs/1.json": tc.doc}}, job, out, &crcSink{crcs: crcs})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range plan.EntryIndex(3) {
				got, want := crcs.Get(i), tc.want[i]
				if _, known := tc.want[i]; got.Known != known || got.Sum != want {
					t.Errorf("entry %d: %v, want %08x (known %v)", i, got, want, known)
				}
			}
		})
	}
	out := &BatchResult{Parts: []PartResult{{Part: 1}}, CRCsKey: "other/crcs/1.json"}
	if err := readBatchCRCs(t.Context(), docGetter{}, job, out, &crcSink{crcs: plan.NewCRCs(1)}); err == nil || !strings.Contains(err.Error(), "outside this execution's work prefix") {
		t.Errorf("CRC-32s outside the work prefix: %v, want them refused", err)
	}
}

// A worker's CRC-32 is taken where the plan has none, and must be the
// plan's where it has one: a difference fails the run (failure.ChecksumMismatchError).
func TestTakeCRCRefusesAnotherThanThePlans(t *testing.T) {
	unknown := &plan.PlacedEntry{Entry: &plan.Entry{Name: "u"}}
	if err := takeCRC(unknown, plan.KnownCRC(5)); err != nil || unknown.CRC32 != plan.KnownCRC(5) {
		t.Errorf("an entry without a CRC-32 given 5: %v, %v", err, unknown.CRC32)
	}
	known := &plan.PlacedEntry{Entry: &plan.Entry{Name: "k", CRC32: plan.KnownCRC(7)}}
	var mismatch *failure.ChecksumMismatchError
	if err := takeCRC(known, plan.KnownCRC(8)); !errors.As(err, &mismatch) || !strings.Contains(err.Error(), `entry "k"`) {
		t.Errorf("an entry of CRC-32 7 given 8: %v, want a failure.ChecksumMismatchError naming it", err)
	}
	if err := takeCRC(known, plan.CRC{}); err != nil || known.CRC32 != plan.KnownCRC(7) {
		t.Errorf("an entry of CRC-32 7 given none: %v, %v", err, known.CRC32)
	}
}

// The report is written to $TMPDIR an entry at a time and put from there:
// built in memory (a ReportEntry an entry, then the whole document twice,
// marshalled and indented) it would be most of the finalizer's memory,
// gigabytes at ten million entries. The document is the one json.MarshalIndent makes
// of the Report, byte for byte, for one archive and for a split run, and
// nothing is left in $TMPDIR.
func TestReportSpooled(t *testing.T) {
	objects := []object{
		{"in/a<b>&c.txt", 1000, s3test.ChecksumCRC32},
		{"in/ünïcode/名前.txt", 2000, s3test.ChecksumNone},
		{"in/empty", 0, s3test.ChecksumCRC32},
		{"in/z.bin", 3000, s3test.ChecksumCRC32},
	}
	for _, tc := range []struct{ name, extra string }{{"one-archive", ""}, {"split", `,"splitEntries":2`}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, objects)
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			c := &putWatcher{Client: e.s3, files: map[string]string{}}
			r := e.runner()
			r.S3 = c
			res, err := r.Run(t.Context(), request("stream", "in/", "out/r.zip", tc.extra), "exec-report-"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			key := ReportKey(Destination{Bucket: "dst", Key: "out/r.zip"})
			if f := c.files[key]; filepath.Dir(f) != tmp {
				t.Errorf("the report was put from %q, want a file in $TMPDIR %s", f, tmp)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("the finalizer left %d files in $TMPDIR, first %s", len(left), left[0].Name())
			}
			doc := e.srv.GetObject(t, "dst", key)
			var rep Report
			if err := json.Unmarshal(doc, &rep); err != nil {
				t.Fatalf("report: %v\n%s", err, doc)
			}
			if want, _ := json.MarshalIndent(rep, "", "  "); !bytes.Equal(doc, want) {
				t.Errorf("report is not as json.MarshalIndent writes it:\n%s\nwant\n%s", doc, want)
			}
			if len(rep.Entries) != len(objects) || rep.Execution != "exec-report-"+tc.name || res.Output.Report == "" {
				t.Errorf("report has %d entries for execution %q (want %d, exec-report-%s); output's report %q", len(rep.Entries), rep.Execution, len(objects), tc.name, res.Output.Report)
			}
			for _, re := range rep.Entries {
				if (tc.extra == "") != (re.Archive == 0) || re.CRC32 == "" || !strings.HasPrefix(re.Source, "s3://src/in/") {
					t.Errorf("report entry %+v", re)
				}
			}
		})
	}
}
