package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

// A manifest's keys are used exactly as written: a quoted key that ends in a
// space names that key, never the trimmed one beside it.
func TestManifestKeysExactlyAsWritten(t *testing.T) {
	w := newWorld(t, "src", "ctl")
	a, b := body(1, 100), body(2, 200)
	w.srv.PutObject(t, "src", "man/a.txt", a)
	w.srv.PutObject(t, "src", "man/b.txt ", b)
	w.srv.PutObject(t, "ctl", "missing.csv", []byte("key,name,bucket\n\"man/a.txt \",trailing.txt,src\n"))
	w.srv.PutObject(t, "ctl", "spaced.csv", []byte("key,name,bucket\n\"man/b.txt \",b.txt,src\n"))
	manifest := func(key, dest string) map[string]any {
		return map[string]any{
			"source":      map[string]any{"manifest": map[string]any{"bucket": "ctl", "key": key}},
			"destination": map[string]any{"bucket": "dst", "key": dest},
		}
	}
	t.Run("key-with-space-that-does-not-exist", func(t *testing.T) {
		_, err := w.run(t, manifest("missing.csv", "out/missing.zip"))
		var re *failure.RequestError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), `s3://src/man/a.txt  does not exist`) {
			t.Fatalf("err = %v, want a RequestError saying s3://src/man/a.txt  (with its space) does not exist", err)
		}
		w.absent(t, "out/missing.zip")
		w.clean(t)
	})
	t.Run("key-with-space-that-exists", func(t *testing.T) {
		if _, err := w.run(t, manifest("spaced.csv", "out/spaced.zip")); err != nil {
			t.Fatal(err)
		}
		w.check(t, "out/spaced.zip", []zipcheck.Want{zipcheck.WantBytes("b.txt", b)})
		w.clean(t)
	})
}

// A bucket that holds a killed run's work objects (plans, pads, chain
// rounds under s3zip-work/) is archived without them: the work prefix is
// never a source, whichever bucket it is in.
func TestWorkPrefixIsNeverASource(t *testing.T) {
	w := newWorld(t, "mix", "ctl")
	user := map[string][]byte{"a.txt": body(1, 100), "d/b.bin": body(2, 6*mib)}
	w.put(t, "mix", user)
	w.put(t, "mix", map[string][]byte{
		"s3zip-work/local-dead/plan.json":   []byte(`{}`),
		"s3zip-work/local-dead/pad":         make([]byte, 1000),
		"s3zip-work/local-dead/chain/0/r1":  body(3, 5000),
		"s3zip-work/local-dead/upload.json": []byte(`{}`),
	})
	for _, s := range strategies {
		t.Run(s, func(t *testing.T) {
			dest := "out/" + s + ".zip"
			if _, err := w.run(t, listRequest(s, "mix", "", dest, nil)); err != nil {
				t.Fatal(err)
			}
			w.check(t, dest, wants("", user))
			w.clean(t)
		})
	}
	w.srv.PutObject(t, "ctl", "work.csv", []byte("key,bucket\na.txt,mix\ns3zip-work/local-dead/pad,mix\n"))
	for _, tc := range []struct {
		name string
		req  map[string]any
		want string
	}{
		{"manifest-names-a-work-object", map[string]any{
			"source":      map[string]any{"manifest": map[string]any{"bucket": "ctl", "key": "work.csv"}},
			"destination": map[string]any{"bucket": "dst", "key": "out/m.zip"},
		}, "manifest line 3: s3://mix/s3zip-work/local-dead/pad is under the work prefix s3zip-work/"},
		{"source-prefix-inside-the-work-prefix", listRequest("duo", "mix", "s3zip-work/local-dead/", "out/w.zip", nil),
			"source s3://mix/s3zip-work/local-dead/ is inside the work prefix s3zip-work/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.run(t, tc.req)
			var re *failure.RequestError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a RequestError containing %q", err, tc.want)
			}
			w.clean(t)
		})
	}
}

// The report beside the archive obeys the archive's no-overwrite rule: an
// object already at <dest>.report.json fails the run before anything is
// written, one that appears mid-run fails it before the upload completes, and
// --overwrite replaces it.
func TestReportIsNeverSilentlyReplaced(t *testing.T) {
	w := newWorld(t, "src")
	objs := map[string][]byte{"p/a.txt": body(1, 100), "p/b.bin": body(2, 6*mib)}
	w.put(t, "src", objs)
	mine := []byte("my own notes, not s3zip's")
	report := func(t *testing.T, key string) []byte {
		t.Helper()
		return w.srv.GetObject(t, "dst", key)
	}
	t.Run("existing-report", func(t *testing.T) {
		w.srv.PutObject(t, "dst", "out/r.zip.report.json", mine)
		_, err := w.run(t, listRequest("duo", "src", "p/", "out/r.zip", nil))
		var de *failure.DestinationExistsError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "s3://dst/out/r.zip.report.json already exists") {
			t.Fatalf("err = %v, want a DestinationExistsError naming the report", err)
		}
		if got := report(t, "out/r.zip.report.json"); string(got) != string(mine) {
			t.Errorf("report replaced: %q", got)
		}
		w.absent(t, "out/r.zip")
		w.clean(t)
	})
	t.Run("report-appears-mid-run", func(t *testing.T) {
		r := &create.Runner{S3: w.s3, Config: create.Config{WorkBucket: "work", PartsPerBatch: 1}}
		worker := &create.Worker{S3: w.s3, Config: create.Config{WorkBucket: "work"}}
		var once sync.Once
		r.Batch = func(ctx context.Context, in create.BatchInput) (*create.BatchResult, error) {
			once.Do(func() { w.srv.PutObject(t, "dst", "out/race.zip.report.json", mine) })
			return worker.Handle(ctx, in)
		}
		raw, _ := json.Marshal(listRequest("duo", "src", "p/", "out/race.zip", nil))
		_, err := r.Run(context.Background(), raw, "e2e-report-race")
		var de *failure.DestinationExistsError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "report.json") {
			t.Fatalf("err = %v, want a DestinationExistsError naming the report", err)
		}
		if got := report(t, "out/race.zip.report.json"); string(got) != string(mine) {
			t.Errorf("report replaced: %q", got)
		}
		w.absent(t, "out/race.zip")
		w.clean(t)
	})
	t.Run("overwrite-replaces-it", func(t *testing.T) {
		if _, err := w.run(t, listRequest("duo", "src", "p/", "out/r.zip", map[string]any{"overwrite": true})); err != nil {
			t.Fatal(err)
		}
		var r create.Report
		if err := json.Unmarshal(report(t, "out/r.zip.report.json"), &r); err != nil || len(r.Entries) != 2 {
			t.Errorf("report after --overwrite: %v, %d entries", err, len(r.Entries))
		}
		w.clean(t)
	})
}

// Keys that are two Unicode spellings of one name (NFC from most tools, NFD
// from macOS) would become two entries that look the same: the duplicates
// policy applies to them.
func TestUnicodeSpellingsAreDuplicates(t *testing.T) {
	w := newWorld(t, "src")
	nfc, nfd := body(1, 100), body(2, 200)
	w.srv.PutObject(t, "src", "n/caf\u00e9.txt", nfc)
	w.srv.PutObject(t, "src", "n/cafe\u0301.txt", nfd)
	_, err := w.run(t, listRequest("duo", "src", "n/", "out/error.zip", nil))
	var re *failure.RequestError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "Unicode spelling") {
		t.Fatalf("err = %v, want a RequestError about two spellings of one name", err)
	}
	w.absent(t, "out/error.zip")
	w.clean(t)
	// Listed in byte order, NFD ("e" then U+0301) comes first and keeps its name.
	if _, err := w.run(t, listRequest("duo", "src", "n/", "out/suffix.zip", map[string]any{"duplicates": "suffix"})); err != nil {
		t.Fatal(err)
	}
	// Readers may normalise names as they read (bsdtar gives NFC), which is
	// why the two must not collide: every reader sees two distinct names;
	// Go's archive/zip shows the bytes the archive holds.
	path := filepath.Join(t.TempDir(), "suffix.zip")
	w.srv.DownloadFile(t, "dst", "out/suffix.zip", path)
	for _, reader := range zipcheck.Readers() {
		entries, err := zipcheck.CheckReader(reader, path)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 || norm.NFC.String(entries[0].Name) == norm.NFC.String(entries[1].Name) {
			t.Errorf("%s reads %+v, want two entries with distinct names", reader, entries)
		}
		if reader == zipcheck.ReaderGo && (entries[0].Name != "cafe\u0301.txt" || entries[1].Name != "caf\u00e9 (2).txt" || entries[0].Size != 200 || entries[1].Size != 100) {
			t.Errorf("archive holds %+q, want the NFD name as listed and the NFC one suffixed", []string{entries[0].Name, entries[1].Name})
		}
	}
	w.clean(t)
}
