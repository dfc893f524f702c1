package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/failure"
)

// The entry count: MaxEntries plans, one more is refused with the limit
// that binds named (checked without making four billion entries).
func TestEntryCountAtMaxEntries(t *testing.T) {
	if err := checkCount(MaxEntries); err != nil {
		t.Errorf("%d entries: %v, want no error", MaxEntries, err)
	}
	err := checkCount(MaxEntries + 1)
	var limit *failure.LimitError
	if !errors.As(err, &limit) || !strings.Contains(err.Error(), "32 bits") || !strings.Contains(err.Error(), fmt.Sprint(MaxEntries+1)) {
		t.Errorf("%d entries: %v, want a failure.LimitError naming the 32-bit entry numbers", MaxEntries+1, err)
	}
}

// A part job of exactly MaxJobBytes (as bounded) passes; one more entry
// whose CRC-32 the part needs and it is refused, naming the part and the
// Map's limit.
func TestPartJobAtMaxJobBytes(t *testing.T) {
	p := &Plan{Strategy: StrategyChain, Entries: make([]PlacedEntry, 50_000)} // 5 digits an index, and a comma
	fit := (MaxJobBytes - jobOverhead) / 6
	part := Part{Number: 3, Kind: PartChain, Count: fit + 1, NeedCRC: make([]EntryIndex, fit)}
	if err := p.checkJobs([]Part{part}); err != nil {
		t.Errorf("%d CRCs needed: %v, want no error", fit, err)
	}
	part.NeedCRC = append(part.NeedCRC, 1)
	err := p.checkJobs([]Part{part})
	var limit *failure.LimitError
	if !errors.As(err, &limit) || !strings.Contains(err.Error(), "part 3") || !strings.Contains(err.Error(), "MaxInputBytesPerBatch") {
		t.Errorf("%d CRCs needed: %v, want a failure.LimitError naming part 3 and MaxInputBytesPerBatch", fit+1, err)
	}
}

// The bound checkJobs puts on a job holds for the jobs Encode writes: on
// seeded plans of every strategy (chain parts of thousands of entries
// included), each line is at most its part's NeedCRC times the digits of
// an index and a comma, plus jobOverhead.
func TestPartJobBoundHoldsForEncodedJobs(t *testing.T) {
	inputs := identityInputs()
	for _, name := range []string{"small-70000", "mixed-402"} {
		for _, s := range strategies {
			p := mustPlan(t, inputs[name], Options{Strategy: s, Workers: 100, PartsPerBatch: 8})
			enc, err := p.Encode()
			if err != nil {
				t.Fatal(err)
			}
			digits := len(fmt.Sprint(len(p.Entries)))
			sc := bufio.NewScanner(bytes.NewReader(enc.Parts))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var j PartJob
				if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
					t.Fatal(err)
				}
				need := len(j.NeedCRC)
				for _, c := range j.Carried {
					need += len(c.NeedCRC)
				}
				if bound := need*(digits+1) + jobOverhead; len(sc.Bytes()) > bound {
					t.Errorf("%s/%s: part %d's job is %d bytes, over its bound %d", name, s, j.Number, len(sc.Bytes()), bound)
				}
			}
		}
	}
}

// S3's largest object, 48.8 TiB, is the largest archive: entries whose
// headers and data alone are over it are refused before anything is
// planned, with the numbers, by every strategy; an archive just under it
// is planned, its parts within S3's part limits.
func TestArchiveAtS3sLargestObject(t *testing.T) {
	objects := func(n int, size int64) []Entry {
		es := make([]Entry, n)
		for i := range es {
			key := fmt.Sprintf("huge/%02d.bin", i)
			es[i] = Entry{Name: key, Source: Source{Bucket: "b", Key: key}, Size: size}
		}
		return es
	}
	over := objects(10, MaxArchiveSize/10) // the data alone is the limit; the headers pass it
	for _, s := range []Strategy{StrategyAuto, StrategyStream, StrategyDuo, StrategyChain} {
		_, err := Make(over, Options{Strategy: s, Workers: 100})
		var limit *failure.LimitError
		if !errors.As(err, &limit) || !strings.Contains(err.Error(), "48.8 TiB") || !strings.Contains(err.Error(), fmt.Sprint(int64(MaxArchiveSize))) ||
			!strings.Contains(err.Error(), "--split-size") {
			t.Errorf("%s over %d bytes: %v, want a failure.LimitError naming S3's largest object in bytes and --split-size", s, int64(MaxArchiveSize), err)
		}
	}
	// Just under: auto and stream plan it; a layout that cannot fit S3's
	// parts says so with the numbers.
	under := objects(10, MaxArchiveSize/10-1<<30)
	for _, s := range []Strategy{StrategyAuto, StrategyStream, StrategyDuo, StrategyChain} {
		p, err := Make(under, Options{Strategy: s, Workers: 100})
		var limit *failure.LimitError
		if err != nil && (s == StrategyAuto || s == StrategyStream || !errors.As(err, &limit)) {
			t.Errorf("%s, entries of %d bytes: %v", s, under[0].Size, err)
		}
		if err != nil {
			continue
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", s, err)
		}
		if len(p.Parts) > MaxParts || p.Size > MaxArchiveSize {
			t.Errorf("%s: %d parts, %d bytes: over S3's %d parts or %d bytes", s, len(p.Parts), p.Size, MaxParts, int64(MaxArchiveSize))
		}
	}
}
