package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

// TestSplitArchives: a run with options.splitSize writes name-0001.zip,
// name-0002.zip, …, each a whole ZIP that every reader opens alone; their
// entries together are the sources exactly, in order, none cut across
// archives; no archive is over the split size but the one holding the
// object that alone is; the output and the report list every archive as
// it is in S3; nothing else is left (no work object, no upload, no
// name.zip).
func TestSplitArchives(t *testing.T) {
	const splitSize = 7 * mib
	w := newWorld(t, "src")
	objs := map[string][]byte{}
	sizes := []int{3 * mib, 10, 2*mib + 7, 0, 5*mib + 1, 900_000, 6 * mib, 12 * mib, 1, 4 * mib}
	for i, n := range sizes {
		objs[fmt.Sprintf("p/%02d.bin", i)] = body(uint64(100+i), n)
	}
	w.put(t, "src", objs)
	all := wants("p/", objs) // by name: the listing's order
	for _, s := range strategies {
		t.Run(s, func(t *testing.T) {
			dest := "out/" + s + ".zip"
			res, err := w.run(t, listRequest(s, "src", "p/", dest, map[string]any{"splitSize": splitSize}))
			if err != nil {
				t.Fatal(err)
			}
			out := res.Output
			if len(out.Archives) < 3 || out.Archive != out.Archives[0] {
				t.Fatalf("output lists %d archives (archive %+v); want several, the first as archive", len(out.Archives), out.Archive)
			}
			var names []string
			total := 0
			for k, a := range out.Archives {
				key := create.ArchiveKey(dest, k)
				if a.URI != "s3://dst/"+key {
					t.Fatalf("archive %d is %s, want s3://dst/%s", k+1, a.URI, key)
				}
				h, err := w.s3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: &key})
				if err != nil || aws.ToInt64(h.ContentLength) != a.Size || aws.ToString(h.ETag) != a.ETag {
					t.Fatalf("archive %d: HEAD %v, %d bytes, ETag %s; the output says %d, %s", k+1, err, aws.ToInt64(h.ContentLength), aws.ToString(h.ETag), a.Size, a.ETag)
				}
				path := filepath.Join(t.TempDir(), fmt.Sprintf("a%d.zip", k))
				w.srv.DownloadFile(t, "dst", key, path)
				got, err := zipcheck.CheckReader(zipcheck.ReaderGo, path)
				if err != nil {
					t.Fatal(err)
				}
				var here []zipcheck.Want
				var held []string
				for _, e := range got {
					i := slices.IndexFunc(all, func(w zipcheck.Want) bool { return w.Name == e.Name })
					if i < 0 {
						t.Fatalf("archive %d holds %q, which is no source", k+1, e.Name)
					}
					here, held = append(here, all[i]), append(held, e.Name)
				}
				// Every reader, alone on this archive, sees exactly its entries' bytes.
				zipcheck.Check(t, path, here)
				if len(here) != a.Entries {
					t.Errorf("archive %d holds %d entries, the output says %d", k+1, len(here), a.Entries)
				}
				if a.Size > splitSize && (len(here) != 1 || here[0].Size <= splitSize) {
					t.Errorf("archive %d is %d bytes, over the split size %d, with %d entries (only an entry over the split size may be, alone)", k+1, a.Size, splitSize, len(here))
				}
				slices.Sort(held)
				names = append(names, held...)
				total += len(held)
			}
			want := make([]string, len(all))
			for i, e := range all {
				want[i] = e.Name
			}
			if !slices.Equal(names, want) {
				t.Errorf("the archives hold, in order,\n%v\nwant the sources, each once, in order:\n%v", names, want)
			}
			if total != out.Stats.Entries {
				t.Errorf("%d entries in the archives, stats say %d", total, out.Stats.Entries)
			}
			checkSplitReport(t, w, dest, out)
			w.absent(t, dest)
			w.clean(t)
		})
	}
}

// checkSplitReport: the report beside the requested key lists the same
// archives as the output, and every entry's archive.
func checkSplitReport(t *testing.T, w *world, dest string, out *create.FinalizeOutput) {
	t.Helper()
	var r create.Report
	if err := json.Unmarshal(w.srv.GetObject(t, "dst", dest+".report.json"), &r); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Archives, out.Archives) {
		t.Errorf("report lists archives %+v, output %+v", r.Archives, out.Archives)
	}
	per := make([]int, len(out.Archives))
	for _, e := range r.Entries {
		if e.Archive < 1 || e.Archive > len(per) {
			t.Fatalf("report: entry %q in archive %d of %d", e.Name, e.Archive, len(per))
		}
		per[e.Archive-1]++
	}
	for k, a := range out.Archives {
		if per[k] != a.Entries {
			t.Errorf("report: %d entries in archive %d, the output says %d", per[k], k+1, a.Entries)
		}
	}
}

// TestSplitEntriesAndTheKeyNames: options.splitEntries alone splits by
// count, and a key without an extension gets its number at the end.
func TestSplitEntriesAndTheKeyNames(t *testing.T) {
	w := newWorld(t, "src")
	objs := map[string][]byte{}
	for i := range 7 {
		objs[fmt.Sprintf("p/%d.txt", i)] = body(uint64(i), 100*(i+1))
	}
	w.put(t, "src", objs)
	res, err := w.run(t, listRequest("auto", "src", "p/", "out/logs", map[string]any{"splitEntries": 3}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range res.Output.Archives {
		got = append(got, strings.TrimPrefix(a.URI, "s3://dst/")+fmt.Sprintf(":%d", a.Entries))
	}
	if want := []string{"out/logs-0001:3", "out/logs-0002:3", "out/logs-0003:1"}; !slices.Equal(got, want) {
		t.Errorf("archives %v, want %v", got, want)
	}
	w.clean(t)
}

// TestSplitChecksumsFiles: with options.checksumsFile each archive of a
// split run ends with its own SHA256SUMS, listing exactly its other
// entries, so `unzip name-000N.zip && sha256sum -c SHA256SUMS` checks that
// archive alone; the split size holds with the listings in.
func TestSplitChecksumsFiles(t *testing.T) {
	const splitSize = 3 * mib
	w := newWorld(t, "src")
	objs := map[string][]byte{}
	for i, n := range []int{mib, 700_000, 2 * mib, 10, 1_500_000, 0, 5 * mib} {
		objs[fmt.Sprintf("p/%02d.bin", i)] = body(uint64(300+i), n)
	}
	w.put(t, "src", objs)
	dest := "out/sums.zip"
	res, err := w.run(t, listRequest("auto", "src", "p/", dest, map[string]any{"splitSize": splitSize, "digests": []string{"sha256"}, "checksumsFile": "SHA256SUMS"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output.Archives) < 3 {
		t.Fatalf("%d archives, want several", len(res.Output.Archives))
	}
	listed := 0
	for k, a := range res.Output.Archives {
		path := filepath.Join(t.TempDir(), "a.zip")
		w.srv.DownloadFile(t, "dst", create.ArchiveKey(dest, k), path)
		got, err := zipcheck.CheckReader(zipcheck.ReaderGo, path)
		if err != nil {
			t.Fatal(err)
		}
		var here []zipcheck.Want
		var sums []string
		var listing zipcheck.Entry
		for _, e := range got {
			if e.Name == "SHA256SUMS" {
				listing = e
				continue
			}
			b := objs["p/"+e.Name]
			here = append(here, zipcheck.WantBytes(e.Name, b))
			sums = append(sums, fmt.Sprintf("%x  %s\n", sha256.Sum256(b), e.Name))
		}
		// The listing is in the sources' order (by name); the directory may be in the strategy's.
		slices.SortFunc(sums, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
		body := []byte(strings.Join(sums, ""))
		// Every reader sees the entries' bytes, and the listing is theirs.
		zipcheck.Check(t, path, append(here, zipcheck.WantBytes("SHA256SUMS", body)))
		if listing.Name == "" {
			t.Errorf("archive %d has no SHA256SUMS", k+1)
		}
		if a.Size > splitSize && len(here) != 1 {
			t.Errorf("archive %d is %d bytes with %d entries and its listing, over the split size %d", k+1, a.Size, len(here), splitSize)
		}
		listed += len(here)
	}
	if listed != len(objs) {
		t.Errorf("the listings name %d entries, the sources are %d", listed, len(objs))
	}
	w.clean(t)
}
