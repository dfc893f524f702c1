package plan

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
)

// splitEntries are n objects of the given sizes, cycled.
func splitEntries(n int, sizes ...int64) []Entry {
	out := make([]Entry, n)
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range out {
		k := fmt.Sprintf("src/%04d.bin", i)
		out[i] = Entry{Name: k[len("src/"):], Source: Source{Bucket: "b", Key: k, ETag: `"e"`}, Size: sizes[i%len(sizes)], ModTime: t0.Add(time.Duration(i) * time.Minute)}
	}
	return out
}

// TestSplitArchivesEachAZipOfTheirOwn: every archive of a split plan,
// built as the workflow builds it, is a whole ZIP that archive/zip reads
// alone; together they hold every entry once, in order; none is over the
// byte limit except an archive of one entry that is.
func TestSplitArchivesEachAZipOfTheirOwn(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []Entry
		limits  SplitLimits
		want    int // archives
	}{
		{"bytes-mixed", splitEntries(40, 3*MiB, 100, 7*MiB+13, 0), SplitLimits{Bytes: 16 * MiB}, 10},
		{"entry-over-limit-alone", splitEntries(5, 1000, 30*MiB, 1000), SplitLimits{Bytes: 8 * MiB}, 4},
		{"entries", splitEntries(25, 2000, 6*MiB), SplitLimits{Entries: 10}, 3},
		{"both", splitEntries(30, 1*MiB), SplitLimits{Bytes: 5 * MiB, Entries: 3}, 10},
		{"one-archive", splitEntries(3, 10), SplitLimits{Bytes: 1 * GiB}, 1},
	} {
		for _, s := range []Strategy{StrategyStream, StrategyDuo, StrategyChain, StrategyAuto} {
			t.Run(c.name+"/"+string(s), func(t *testing.T) {
				entries := append([]Entry(nil), c.entries...)
				p, err := MakeSplit(entries, Options{Strategy: s, Workers: 4}, c.limits)
				if err != nil {
					t.Fatalf("MakeSplit: %v", err)
				}
				if err := p.Validate(); err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if len(p.Archives) != c.want {
					t.Fatalf("%d archives, want %d", len(p.Archives), c.want)
				}
				var names []string
				var total int64
				var creates, completes int
				for k := range p.Archives {
					a := p.ArchivePlan(k)
					archive := execute(t, a)
					want := make([]Entry, len(a.Entries))
					for i := range a.Entries {
						want[i] = *a.Entries[i].Entry
					}
					checkZip(t, archive, want)
					names = append(names, entriesInOrder(t, archive)...)
					total += int64(len(archive))
					creates, completes = creates+a.Stats().Requests.Create, completes+a.Stats().Requests.Complete
					over := c.limits.Bytes > 0 && int64(len(archive)) > c.limits.Bytes
					if over != p.Archives[k].Oversize || over && len(a.Entries) != 1 {
						t.Errorf("archive %d: %d bytes, %d entries, oversize %v (limit %d)", k+1, len(archive), len(a.Entries), p.Archives[k].Oversize, c.limits.Bytes)
					}
					if c.limits.Entries > 0 && len(a.Entries) > c.limits.Entries {
						t.Errorf("archive %d holds %d entries, limit %d", k+1, len(a.Entries), c.limits.Entries)
					}
				}
				var order []string
				for _, e := range c.entries {
					order = append(order, e.Name)
				}
				if s == StrategyStream && strings.Join(names, ",") != strings.Join(order, ",") {
					t.Errorf("entries across archives %v, want %v", names, order)
				}
				if total != p.Size {
					t.Errorf("archives are %d bytes together, the plan says %d", total, p.Size)
				}
				if st := p.Stats(); st.Requests.Create != creates || st.Requests.Complete != completes {
					t.Errorf("stats count %d creates and %d completes; the archives' plans %d and %d", st.Requests.Create, st.Requests.Complete, creates, completes)
				}
			})
		}
	}
}

// entriesInOrder are the archive's entry names in central directory order.
func entriesInOrder(t *testing.T, archive []byte) []string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatalf("archive/zip: %v", err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	return names
}

// TestSplitPlanRoundTrip: a split plan written and read back (the
// planner's files, the finalizer's reading) is the same plan, and every
// part job names its archive's upload.
func TestSplitPlanRoundTrip(t *testing.T) {
	p, err := MakeSplit(splitEntries(20, 6*MiB, 10), Options{Strategy: StrategyDuo, Workers: 2}, SplitLimits{Bytes: 20 * MiB})
	if err != nil {
		t.Fatal(err)
	}
	est := p.jobBytes() // as the plan's batches were cut, before the uploads exist
	for k := range p.Archives {
		p.Archives[k].Upload = &Upload{Key: fmt.Sprintf("out-%04d.zip", k+1), UploadID: fmt.Sprintf("id%d", k)}
	}
	enc, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Decode(enc.Header, bytes.NewReader(enc.Entries), bytes.NewReader(enc.Parts))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(q.Archives) != len(p.Archives) || len(q.Parts) != len(p.Parts) || q.Size != p.Size {
		t.Fatalf("decoded %d archives %d parts %d bytes, want %d %d %d", len(q.Archives), len(q.Parts), q.Size, len(p.Archives), len(p.Parts), p.Size)
	}
	jobs, err := DecodeParts(bytes.NewReader(enc.Parts))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, j := range jobs {
		if want := p.Archives[j.Archive].Upload; j.Upload == nil || *j.Upload != *want {
			t.Errorf("archive %d part %d names upload %+v, want %+v", j.Archive+1, j.Number, j.Upload, want)
		}
		seen[j.Archive] = true
	}
	if len(seen) < 2 {
		t.Errorf("part jobs of %d archives; the plan's workers build parts of every archive but the small ones", len(seen))
	}
	// The batches were cut from job lengths estimated before the uploads
	// existed: each line with its upload named is within its estimate.
	p.Archives[0].Upload.Key = strings.Repeat("k", 1024)
	enc, _ = p.Encode()
	lines := bytes.SplitAfter(enc.Parts, []byte("\n"))
	for i, n := 0, 0; i < len(p.WorkerParts()); i++ {
		if p.Carried(i) {
			continue
		}
		if len(lines[n]) > est[i] {
			t.Errorf("part job %d is %d bytes, estimated at most %d", i, len(lines[n]), est[i])
		}
		n++
	}
}

// TestSplitRefusals: limits no archive can keep, and more archives than
// names, are refused before anything is planned.
func TestSplitRefusals(t *testing.T) {
	if _, err := MakeSplit(splitEntries(2, 1), Options{}, SplitLimits{Bytes: MinSplitBytes - 1}); err == nil || !strings.Contains(err.Error(), "smallest archive") {
		t.Errorf("split size under one archive's overhead: %v", err)
	}
	if _, err := MakeSplit(splitEntries(2, 1), Options{}, SplitLimits{Bytes: MinSplitBytes}); err != nil {
		t.Errorf("split size of the smallest archive: %v", err)
	}
	var le *failure.LimitError
	if _, err := MakeSplit(splitEntries(MaxArchives+1, 0), Options{Strategy: StrategyStream}, SplitLimits{Entries: 1}); !errors.As(err, &le) || !strings.Contains(err.Error(), "9999") {
		t.Errorf("10,000 archives: %v", err)
	}
}
