package e2e_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/zipcheck"
	"github.com/s3zip/s3zip/workflow"
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
		var re *workflow.RequestError
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
