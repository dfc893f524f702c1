package archive

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

// TestVerifyEntryOver4GiB checks an archive in s3zip's own layout (headers
// from package plan) with a STORED entry of 4 GiB + 5 bytes of zeros, followed
// by an entry whose local header offset needs ZIP64 too. The archive is
// written as a sparse file straight into versitygw's POSIX backend, so it
// costs no disk and no upload; Verify reads all of it over HTTP.
func TestVerifyEntryOver4GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 4 GiB over loopback")
	}
	env := newEnv(t)
	const bigSize = 1<<32 + 5
	mod := time.Date(2025, 1, 2, 3, 4, 6, 0, time.UTC)
	big := &plan.PlacedEntry{Entry: plan.Entry{Name: "huge/zeros.bin", Size: bigSize, ModTime: mod}}
	small := &plan.PlacedEntry{Entry: plan.Entry{Name: "after.txt", Size: 5, ModTime: mod}}
	smallData := []byte("after")
	bigCRC, smallCRC := zipformat.ZeroCRC(bigSize), crcOf(smallData)

	path := filepath.Join(env.srv.DataDir(), testBucket, "big.zip")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lh := plan.AppendLocalHeader(nil, big, bigCRC)
	big.HeaderLen = int64(len(lh))
	small.Offset = big.End()
	lh2 := plan.AppendLocalHeader(nil, small, smallCRC)
	small.HeaderLen = int64(len(lh2))
	cdStart := small.End()
	cd := plan.AppendCentralHeader(nil, big, bigCRC)
	cd = plan.AppendCentralHeader(cd, small, smallCRC)
	end := zipformat.AppendEndRecords(cd, 2, cdStart, int64(len(cd)))
	for _, w := range []struct {
		off int64
		b   []byte
	}{{0, lh}, {small.Offset, lh2}, {small.DataOffset(), smallData}, {cdStart, end}} {
		if _, err := f.WriteAt(w.b, w.off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	a, err := Open(t.Context(), env.client, testBucket, "big.zip")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if len(a.Entries) != 2 || a.Entries[0].UncompressedSize != bigSize || a.Entries[1].Offset != small.Offset || !a.Entries[1].Zip64 {
		t.Fatalf("Open: entries %+v", a.Entries)
	}
	r, err := a.Verify(t.Context(), VerifyOptions{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for _, p := range r.Problems {
		t.Errorf("problem: %v", p)
	}
	if r.BytesChecked != bigSize+5 || r.Zip64Entries != 2 {
		t.Errorf("report: %d bytes checked, %d ZIP64 entries; want %d, 2", r.BytesChecked, r.Zip64Entries, int64(bigSize+5))
	}
	t.Logf("verified %d bytes in %v", r.BytesChecked, time.Since(start))
}
