package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
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
		{"existing objects", []string{"s3://xtr/in.zip", "s3://xtr/out/", "--endpoint", srv.Endpoint()}, "already holds 3 objects where the archive's entries would go"},
		{"prefix without slash", []string{"s3://xtr/in.zip", "s3://xtr/out", "--endpoint", srv.Endpoint()}, "must end in /"},
		{"one argument", []string{"s3://xtr/in.zip", "--endpoint", srv.Endpoint()}, "extract: missing s3://BUCKET/PREFIX/"},
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

	// The threshold is AWS's by default, the profile's with --model (a bare
	// model or a bench results.json; missing fields AWS's), and
	// --small-stored's when given.
	dir := t.TempDir()
	slow := plan.DefaultModel
	slow.WorkerBandwidth, slow.RequestLatency = 12e6, 0.02
	bare := filepath.Join(dir, "model.json")
	writeFile(t, bare, `{"WorkerBandwidth": 12e6, "RequestLatency": 0.02}`)
	results := filepath.Join(dir, "results.json")
	writeFile(t, results, `{"label": "x", "model": {"WorkerBandwidth": 12e6, "RequestLatency": 0.02}}`)
	for i, tc := range []struct {
		args []string
		want int64
	}{
		{nil, plan.DefaultModel.StoredReadBelow(extract.DefaultReadGroup)},
		{[]string{"--model", bare}, slow.StoredReadBelow(extract.DefaultReadGroup)},
		{[]string{"--model", results}, slow.StoredReadBelow(extract.DefaultReadGroup)},
		{[]string{"--model", results, "--small-stored", "12345"}, 12345},
		{[]string{"--model", results, "--small-stored", "0"}, 0}, // typed, 0 is honoured: every STORED entry copied
	} {
		out, err := extractCmd(append([]string{"s3://xtr/in.zip", fmt.Sprintf("s3://xtr/m%d/", i), "--endpoint", srv.Endpoint()}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		want := "STORED entries under " + humanBytes(tc.want) + " read"
		if tc.want == 0 {
			want = "every STORED entry copied" // not "under 0 B read"
		}
		if !strings.Contains(out, want) {
			t.Errorf("%v: summary does not say %q:\n%s", tc.args, want, out)
		}
	}
	bad := filepath.Join(dir, "bad.json")
	writeFile(t, bad, `{"WorkerBandwith": 12e6}`)
	zero := filepath.Join(dir, "zero.json")
	writeFile(t, zero, `{"WorkerBandwidth": 0}`)
	for _, tc := range []struct{ file, want string }{
		{bad, "unknown field"}, {zero, "must be positive"}, {filepath.Join(dir, "missing.json"), "no such file"},
	} {
		if _, err := extractCmd("s3://xtr/in.zip", "s3://xtr/bad/", "--endpoint", srv.Endpoint(), "--model", tc.file); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--model %s: got %v, want an error saying %q", filepath.Base(tc.file), err, tc.want)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// An archive with nothing to write as objects (an empty one; one of
// directories) gets a report whose "objects" is an empty list, and a
// summary in the singular where there is one.
func TestExtractReportOfNothing(t *testing.T) {
	srv := cliServer(t)
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	if _, err := w.Create("d/"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	srv.PutObject(t, "cli", "dirs.zip", buf.Bytes())
	r := s3zip(t, nil, "extract", "s3://cli/dirs.zip", "s3://cli/x/", "--endpoint", srv.Endpoint())
	expect{stdout: []string{"(1 entry)"}, banned: []string{"1 entries"}}.check(t, r)
	var report map[string]json.RawMessage
	if err := json.Unmarshal(srv.GetObject(t, "cli", "x/"+extract.ReportName), &report); err != nil {
		t.Fatal(err)
	}
	if got := string(report["objects"]); got != "[]" {
		t.Errorf(`report "objects": %s, want []`, got)
	}
}

// --content-type EXT=TYPE (repeatable) gives every object with that
// extension its type, over the fixed table; the summary counts the types.
func TestExtractContentTypeFlag(t *testing.T) {
	srv := cliServer(t)
	srv.PutObject(t, "cli", "in.zip", storedZip(t, map[string]string{"a.html": "<p>", "b.html": "<b>", "notes.md": "# n", "c.css": "p{}"}))
	var out bytes.Buffer
	err := run(context.Background(), []string{"extract", "s3://cli/in.zip", "s3://cli/out/", "--endpoint", srv.Endpoint(),
		"--content-type", "html=text/html; charset=iso-8859-1", "--content-type", ".MD=text/x-markdown"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	c := srv.Client(t)
	for key, want := range map[string]string{"a.html": "text/html; charset=iso-8859-1", "b.html": "text/html; charset=iso-8859-1",
		"notes.md": "text/x-markdown", "c.css": "text/css; charset=utf-8"} {
		h, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("cli"), Key: aws.String("out/" + key)})
		if err != nil {
			t.Fatal(err)
		}
		if got := aws.ToString(h.ContentType); got != want {
			t.Errorf("out/%s: Content-Type %q, want %q", key, got, want)
		}
	}
	if want := "types       2 text/html; charset=iso-8859-1, 1 text/css; charset=utf-8, 1 text/x-markdown\n"; !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
	for _, bad := range []string{"html", "=text/html", "html="} {
		if err := run(context.Background(), []string{"extract", "s3://cli/in.zip", "s3://cli/o2/", "--endpoint", srv.Endpoint(), "--content-type", bad}, io.Discard); err == nil || !strings.Contains(err.Error(), "want EXT=TYPE") {
			t.Errorf("--content-type %q: got %v, want an error saying EXT=TYPE", bad, err)
		}
	}
}
