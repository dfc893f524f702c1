package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// A file under its final name is always whole: get writes each file under a
// temporary name in the same directory and renames it once its CRC-32 is
// checked, so a get stopped mid-file (Ctrl-C here; kill -9 leaves only the
// temporary name) never leaves a truncated file that looks extracted.
func TestGetNeverLeavesAPartialFileUnderItsName(t *testing.T) {
	srv := cliServer(t)
	big := s3test.Bytes(7, 96<<20)
	srv.PutObject(t, "cli", "big.zip", storedZip(t, map[string]string{"big.bin": string(big)}))
	dir := filepath.Join(t.TempDir(), "out")
	final := filepath.Join(dir, "big.bin")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var out bytes.Buffer
		done <- run(ctx, []string{"get", "s3://cli/big.zip", dir, "--endpoint", srv.Endpoint(), "--concurrency", "2"}, &out)
	}()
	// Watch the directory: the final name may appear only whole; stop the
	// get as soon as it has written part of the file.
	var err error
	for stopped := false; ; {
		if fi, serr := os.Stat(final); serr == nil && fi.Size() != int64(len(big)) {
			t.Fatalf("%s exists with %d of %d bytes", final, fi.Size(), len(big))
		}
		if !stopped && partlyWritten(dir) {
			cancel()
			stopped = true
		}
		select {
		case err = <-done:
		case <-time.After(200 * time.Microsecond):
			continue
		}
		break
	}
	if err == nil {
		t.Skip("the get finished before it could be stopped mid-file")
	}
	if _, serr := os.Stat(final); serr == nil {
		t.Errorf("%s exists after an interrupted get", final)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Errorf("left in %s after an interrupted get: %s", dir, e.Name())
	}
}

// partlyWritten reports whether some file under dir holds some bytes.
func partlyWritten(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, "/") {
			if fi, err := d.Info(); err == nil && fi.Size() > 0 {
				found = true
			}
		}
		return nil
	})
	return found
}
