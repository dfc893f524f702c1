package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

func TestExtractCommand(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "xtr")
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey())
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey())
	t.Setenv("AWS_REGION", s3test.Region)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	files := map[string]string{"a.txt": "alpha", "d/b.txt": "bravo", "d/c.txt": ""}
	srv.PutObject(t, "xtr", "in.zip", storedZip(t, files))
	ctx := context.Background()
	extractCmd := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append([]string{"extract"}, args...), &out)
		return out.String(), err
	}
	out, err := extractCmd("s3://xtr/in.zip", "s3://xtr/out/", "--endpoint", srv.Endpoint(), "--workers", "2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "objects     3,") || !strings.Contains(out, "report      s3://xtr/out/.s3zip-extract-report.json") {
		t.Errorf("summary:\n%s", out)
	}
	for name, want := range files {
		if got := string(srv.GetObject(t, "xtr", "out/"+name)); got != want {
			t.Errorf("out/%s = %q, want %q", name, got, want)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"existing objects", []string{"s3://xtr/in.zip", "s3://xtr/out/", "--endpoint", srv.Endpoint()}, "already exist"},
		{"prefix without slash", []string{"s3://xtr/in.zip", "s3://xtr/out", "--endpoint", srv.Endpoint()}, "must end in /"},
		{"one argument", []string{"s3://xtr/in.zip", "--endpoint", srv.Endpoint()}, "want an archive and a destination"},
		{"not a zip", []string{"s3://xtr/out/a.txt", "s3://xtr/o2/", "--endpoint", srv.Endpoint()}, "not a readable ZIP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := extractCmd(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if _, err := extractCmd("--overwrite", "s3://xtr/in.zip", "s3://xtr/out/", "--endpoint", srv.Endpoint()); err != nil {
		t.Errorf("--overwrite: %v", err)
	}
}
