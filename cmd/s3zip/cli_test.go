package main

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/invreport"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// The tests in this file run the s3zip binary as a user would, and look at
// what it prints where, and its exit status. S3ZIP_BIN names a binary to
// test instead of building this package (to check a test fails on an
// older build).
var s3zipBin string

func TestMain(m *testing.M) {
	// Server profiles (--model's default with --endpoint) are kept in a
	// cache of the tests' own, not the user's.
	tmp, err := os.MkdirTemp("", "s3zip-cli-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))
	code := 1
	if s3zipBin = os.Getenv("S3ZIP_BIN"); s3zipBin == "" {
		s3zipBin = filepath.Join(tmp, "s3zip")
		if out, err := exec.Command("go", "build", "-o", s3zipBin, ".").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build s3zip: %v\n%s", err, out)
			s3zipBin = ""
		}
	}
	if s3zipBin != "" {
		code = m.Run()
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

type cliResult struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// s3zip runs the binary with the test's environment (cliServer points it at
// versitygw) plus env.
func s3zip(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), s3zipBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := cliResult{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run s3zip %v: %v", args, err)
	}
	return r
}

// check asserts the exit code, that want are all in the stream they name,
// and that none of banned is anywhere.
type expect struct {
	code       int
	stdout     []string
	stderr     []string
	banned     []string
	stderrMax  int           // at most this many lines on stderr (0: no limit)
	within     time.Duration // 0: no limit
	stdoutOnly bool          // nothing on stderr
}

func (e expect) check(t *testing.T, r cliResult) {
	t.Helper()
	if r.code != e.code {
		t.Errorf("exit %d, want %d", r.code, e.code)
	}
	for _, w := range e.stdout {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout lacks %q", w)
		}
	}
	for _, w := range e.stderr {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q", w)
		}
	}
	for _, b := range e.banned {
		if strings.Contains(r.stdout+r.stderr, b) {
			t.Errorf("output has %q", b)
		}
	}
	if n := len(messages(r.stderr)); e.stderrMax > 0 && n > e.stderrMax {
		t.Errorf("%d lines on stderr besides progress, want at most %d", n, e.stderrMax)
	}
	if e.stdoutOnly && r.stderr != "" {
		t.Errorf("stderr is not empty")
	}
	if e.within > 0 && r.elapsed > e.within {
		t.Errorf("took %v, want under %v", r.elapsed, e.within)
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// messages are the lines of stderr other than progress: the error and any
// warnings.
func messages(stderr string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l != "" && !strings.HasPrefix(l, "planning") && !strings.HasPrefix(l, "planned") {
			out = append(out, l)
		}
	}
	return out
}

func TestHelpVersionAndTypos(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want expect
	}{
		{"help-flag", []string{"--help"}, expect{stdout: []string{"usage: s3zip <command>", "create", "verify"}, stdoutOnly: true}},
		{"help-command", []string{"help"}, expect{stdout: []string{"usage: s3zip <command>"}, stdoutOnly: true}},
		{"help-of-create", []string{"help", "create"}, expect{stdout: []string{"usage: s3zip create"}, stdoutOnly: true}},
		{"create-h", []string{"create", "-h"}, expect{
			stdout:     []string{"usage: s3zip create (--source s3://bucket/prefix/ | --manifest s3://bucket/key | --inventory s3://bucket/…/manifest.json) --dest", "auto, stream, duo or chain (default auto)"},
			banned:     []string{"Usage of", "stream or duo (default duo)"},
			stdoutOnly: true}},
		{"plan-h", []string{"plan", "-h"}, expect{stdout: []string{"usage: s3zip plan", "--source", "--endpoint"}, banned: []string{"Usage of"}, stdoutOnly: true}},
		{"sample-h", []string{"sample", "--help"}, expect{stdout: []string{"usage: s3zip sample"}, banned: []string{"Usage of"}, stdoutOnly: true}},
		{"get-h", []string{"get", "-h"}, expect{stdout: []string{"usage: s3zip get", "--skip-symlinks"}, stdoutOnly: true}},
		{"version", []string{"version"}, expect{stdout: []string{"s3zip "}, stdoutOnly: true}},
		{"version-flag", []string{"--version"}, expect{stdout: []string{"s3zip "}, stdoutOnly: true}},
		{"command-typo", []string{"creat"}, expect{code: 2, stderr: []string{`unknown command "creat"; did you mean "create"?`}, stderrMax: 1}},
		{"flag-typo", []string{"create", "--sorce", "s3://b/p/"}, expect{code: 2, stderr: []string{"-sorce", "did you mean --source?"}, stderrMax: 1}},
		{"missing-value", []string{"verify", "s3://b/k.zip", "--endpoint"}, expect{code: 2, stderr: []string{"flag needs an argument: -endpoint"}, stderrMax: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.want.check(t, s3zip(t, nil, tc.args...)) })
	}
}

// newUserServer is cliServer with a prefix of small objects, a folder
// marker and a manifest.
func newUserServer(t *testing.T) *s3test.Server {
	srv := cliServer(t)
	for i := range 12 {
		srv.PutObject(t, "cli", fmt.Sprintf("small/f%02d.txt", i), s3test.Bytes(uint64(i), 100+i))
	}
	srv.PutObject(t, "cli", "one/a.txt", []byte("alpha"))
	srv.PutObject(t, "cli", "one/b.txt", []byte("bravo"))
	srv.PutObject(t, "cli", "dup/x/same.txt", []byte("x"))
	srv.PutObject(t, "cli", "dup/y/same.txt", []byte("y"))
	srv.CreateBucket(t, "out")
	srv.PutObject(t, "cli", "taken.zip", []byte("not yours"))
	for i := range 24 { // enough for chain rounds
		srv.PutObject(t, "cli", fmt.Sprintf("mid/m%02d.bin", i), s3test.Bytes(uint64(100+i), 300<<10))
	}
	return srv
}

func TestCreateSetupErrors(t *testing.T) {
	srv := newUserServer(t)
	src, ep := []string{"--source", "s3://cli/small/"}, "--endpoint="+srv.Endpoint()
	// What a run's clean-up would print when S3 cannot be reached or refuses us.
	noise := []string{"retrying", "abort", "transient", "crc-probe", "context canceled"}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want expect
	}{
		{"dead-port", nil, append(src, "--dest", "s3://out/a.zip", "--endpoint", "http://127.0.0.1:1"),
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1", "connection refused"}, banned: noise, stderrMax: 1, within: 3 * time.Second}},
		{"endpoint-without-scheme", nil, append(src, "--dest", "s3://out/a.zip", "--endpoint", strings.TrimPrefix(srv.Endpoint(), "http://")),
			expect{code: 2, stderr: []string{"is not a URL", "e.g. " + srv.Endpoint()}, banned: noise, stderrMax: 1}},
		{"env-endpoint-without-scheme", []string{"S3_ENDPOINT=" + strings.TrimPrefix(srv.Endpoint(), "http://")}, append(src, "--dest", "s3://out/a.zip"),
			expect{code: 2, stderr: []string{"S3_ENDPOINT", "is not a URL"}, banned: noise, stderrMax: 1}},
		{"wrong-secret", []string{"AWS_SECRET_ACCESS_KEY=wrong"}, append(src, "--dest", "s3://out/a.zip", ep),
			expect{code: exitUnreachable, stderr: []string{"SignatureDoesNotMatch", "AWS_SECRET_ACCESS_KEY"}, banned: noise, stderrMax: 1}},
		{"unknown-access-key", []string{"AWS_ACCESS_KEY_ID=nobody"}, append(src, "--dest", "s3://out/a.zip", ep),
			expect{code: exitUnreachable, stderr: []string{"AWS_ACCESS_KEY_ID"}, banned: noise, stderrMax: 1}},
		{"missing-destination-bucket", nil, append(src, "--dest", "s3://nodest/a.zip", ep),
			expect{code: exitRefused, stderr: []string{`destination bucket "nodest" does not exist`}, banned: noise, stderrMax: 1}},
		{"missing-source-bucket", nil, []string{"--source", "s3://nosrc/p/", "--dest", "s3://out/a.zip", ep},
			expect{code: exitRefused, stderr: []string{`source bucket "nosrc" does not exist`}, banned: noise, stderrMax: 1}},
		{"missing-work-bucket", nil, append(src, "--dest", "s3://out/a.zip", "--work-bucket", "nowork", ep),
			expect{code: exitRefused, stderr: []string{`work bucket "nowork" does not exist`}, banned: noise, stderrMax: 1}},
		{"missing-manifest", nil, []string{"--manifest", "s3://cli/none.csv", "--dest", "s3://out/a.zip", ep},
			expect{code: exitRefused, stderr: []string{"manifest s3://cli/none.csv does not exist"}, banned: noise, stderrMax: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.check(t, s3zip(t, tc.env, append([]string{"create"}, tc.args...)...))
		})
	}
	if left := srv.Leftovers(t, "out", "out"); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// Every message names the flag the user typed, never the request field
// (options.*, source.*, destination.*) it sets.
func TestErrorsNameFlags(t *testing.T) {
	srv := newUserServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	fields := regexp.MustCompile(`options\.|source\.(bucket|prefix|manifest)|destination\.(bucket|key)|duplicates policy`)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"negative-workers", []string{"--source", "s3://cli/small/", "--dest", "s3://out/a.zip", "--workers", "-3", ep}, 2, "--workers -3: want 1 to 10000"},
		{"unknown-duplicates-policy", []string{"--source", "s3://cli/small/", "--dest", "s3://out/a.zip", "--duplicates", "rename", ep}, 2, `--duplicates "rename": want error or suffix`},
		{"unknown-strategy", []string{"--source", "s3://cli/small/", "--dest", "s3://out/a.zip", "--strategy", "fast", ep}, 2, `--strategy "fast": want auto, stream, duo or chain`},
		{"small-part-size", []string{"--source", "s3://cli/small/", "--dest", "s3://out/a.zip", "--part-size", "1000", ep}, 2, "--part-size 1000"},
		{"bad-source-bucket", []string{"--source", "s3://Bad_Bucket/p/", "--dest", "s3://out/a.zip", ep}, exitRefused, `--source "Bad_Bucket" is not a valid S3 bucket name`},
		{"dest-ends-in-slash", []string{"--source", "s3://cli/small/", "--dest", "s3://out/dir/", ep}, 2, "--dest s3://out/dir/ names a bucket or a folder, not an archive: give the archive's key, e.g. s3://out/dir/archive.zip"},
		{"dest-is-a-bucket", []string{"--source", "s3://cli/small/", "--dest", "s3://out/", ep}, 2, "--dest s3://out/ names a bucket or a folder, not an archive: give the archive's key, e.g. s3://out/archive.zip"},
		{"destination-exists", []string{"--source", "s3://cli/small/", "--dest", "s3://cli/taken.zip", ep}, exitRefused, "add --overwrite to replace it"},
		{"duplicate-names", []string{"--source", "s3://cli/dup/", "--names", "flat", "--dest", "s3://out/d.zip", ep}, exitRefused, "use --duplicates suffix to rename them"},
		{"split-size-under-one-archive", []string{"--source", "s3://cli/small/", "--dest", "s3://out/a.zip", "--split-size", "100", ep}, 2, "--split-size 100: want at least 118 bytes"},
		{"split-entries-zero-typed", []string{"--source", "s3://cli/small/", "--dest", "s3://out/a.zip", "--split-entries", "0", ep}, 2, "--split-entries 0: want 1 or more"},
		{"split-entries-1-with-sums", []string{"--source", "s3://cli/small/", "--dest", "s3://out/a.zip", "--split-entries", "1", "--digest", "sha256", "--checksums-file", "SUMS", ep}, exitRefused, "--split-entries 1 with --checksums-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s3zip(t, nil, append([]string{"create"}, tc.args...)...)
			expect{code: tc.code, stderr: []string{tc.want}, stderrMax: 1}.check(t, r)
			if m := fields.FindString(r.stderr); m != "" {
				t.Errorf("stderr names the request field %q:\n%s", m, r.stderr)
			}
		})
	}
}

func TestSourcePrefixWithoutSlash(t *testing.T) {
	srv := newUserServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	for _, tc := range []struct {
		name string
		args []string
		want expect
	}{
		{"folder-without-slash", []string{"--source", "s3://cli/small", "--dest", "s3://out/s.zip", ep},
			expect{code: exitRefused, stderr: []string{`does not end in "/"`, "s3://cli/small/", "--names"}, banned: []string{"absolute path", "fix the keys"}, stderrMax: 2}},
		{"single-object", []string{"--source", "s3://cli/one/a.txt", "--dest", "s3://out/one.zip", ep},
			expect{code: exitRefused, stderr: []string{"names the object s3://cli/one/a.txt", "s3://cli/one/", `--names "flat"`, `"a.txt"`}, banned: []string{"empty name", `(name "")`}, stderrMax: 2}},
		{"single-object-flat", []string{"--source", "s3://cli/one/a.txt", "--names", "flat", "--dest", "s3://out/one.zip", ep},
			expect{stdout: []string{"entries     1"}}},
		{"folder-with-slash", []string{"--source", "s3://cli/small/", "--dest", "s3://out/s.zip", ep},
			expect{stdout: []string{"entries     12"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.want.check(t, s3zip(t, nil, append([]string{"create"}, tc.args...)...)) })
	}
}

func TestManifestProblemsAllAtOnce(t *testing.T) {
	srv := newUserServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	etag := strings.Trim(*srv.PutObject(t, "cli", "m/ok.txt", []byte("fine")).ETag, `"`)
	srv.PutObject(t, "cli", "m/short.txt", []byte("12345"))
	srv.PutObject(t, "cli", "m/other.txt", []byte("other"))
	lines := []string{
		"key,size,etag,bucket",
		"m/ok.txt,4," + etag + ",cli",
		"m/gone1.txt,3,,cli",
		"m/short.txt,9,,cli",
		"m/gone2.txt,,,cli",
		"m/other.txt,5,0123456789abcdef0123456789abcdef,cli",
		"m/gone3.txt,,,cli",
	}
	srv.PutObject(t, "cli", "manifest.csv", []byte(strings.Join(lines, "\n")+"\n"))
	want := []string{
		"manifest line 3: s3://cli/m/gone1.txt does not exist",
		"manifest line 4: s3://cli/m/short.txt is 5 bytes, the manifest says 9",
		"manifest line 5: s3://cli/m/gone2.txt does not exist",
		"manifest line 6: s3://cli/m/other.txt has ETag",
		"manifest line 7: s3://cli/m/gone3.txt does not exist",
	}
	for try := range 3 { // the lookups run at once: the report must not depend on which answers first
		r := s3zip(t, nil, "create", "--manifest", "s3://cli/manifest.csv", "--dest", "s3://out/m.zip", ep)
		expect{code: exitRefused, stderr: append([]string{"5 problems"}, want...), banned: []string{"run again", "changed or was deleted"}}.check(t, r)
		last := -1
		for _, w := range want {
			i := strings.Index(r.stderr, w)
			if i < last {
				t.Errorf("try %d: %q out of line order", try, w)
			}
			last = i
		}
		if t.Failed() {
			break
		}
	}
}

func TestProgressCountsEveryPart(t *testing.T) {
	srv := newUserServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	// Two objects over 5 MiB: duo copies their tails, and parts are carried.
	srv.PutObject(t, "cli", "big/a.bin", s3test.Bytes(1, 6<<20+123))
	srv.PutObject(t, "cli", "big/b.bin", s3test.Bytes(2, 7<<20+45))
	for _, tc := range []struct{ name, source, strategy string }{
		{"duo-with-copies", "s3://cli/big/", "duo"},
		{"chain", "s3://cli/mid/", "chain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s3zip(t, nil, "create", "--source", tc.source, "--strategy", tc.strategy, "--dest", "s3://out/"+tc.name+".zip", ep)
			expect{stderr: []string{"planning"}}.check(t, r)
			parts := regexp.MustCompile(`(?m)^parts +(\d+) `).FindStringSubmatch(r.stdout)
			size := regexp.MustCompile(`(?m)^size +(\S+ \S+) `).FindStringSubmatch(r.stdout)
			if parts == nil || size == nil {
				t.Fatalf("no parts or size in the summary:\n%s", r.stdout)
			}
			// The last progress line: every part and every byte of the archive.
			wantLast := fmt.Sprintf("parts %s/%s, %s of %s", parts[1], parts[1], size[1], size[1])
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if last := lines[len(lines)-1]; !strings.Contains(last, wantLast) {
				t.Errorf("last progress line %q, want it to say %q (summary: %s parts, %s)", last, wantLast, parts[1], size[1])
			}
		})
	}
}

func TestPlanTakesWhatCreateTakes(t *testing.T) {
	srv := newUserServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	srv.PutObject(t, "cli", "list.csv", []byte("small/f00.txt\nsmall/f01.txt\none/a.txt\n"))
	for _, tc := range []struct {
		name string
		args []string
		want expect
	}{
		{"source-prefix", []string{"--source", "s3://cli/small/", ep}, expect{stdout: []string{"entries         12", "with 8 workers"}}},
		{"s3-manifest-without-sizes", []string{"--manifest", "s3://cli/list.csv", ep}, expect{stdout: []string{"entries         3"}}},
		{"env-endpoint", []string{"--source", "s3://cli/small/"}, expect{stdout: []string{"entries         12"}}},
		{"negative-workers", []string{"--source", "s3://cli/small/", "--workers", "-5", ep}, expect{code: 2, stderr: []string{"--workers -5: want 1 to 10000"}, stderrMax: 1}},
		{"synthetic-negative-workers", []string{"--synthetic", "challenge", "--count", "10", "--workers", "-5"}, expect{code: 2, stderr: []string{"--workers -5: want 1 to 10000"}, stderrMax: 1}},
		{"prefix-without-slash", []string{"--source", "s3://cli/small", ep}, expect{code: exitRefused, stderr: []string{"s3://cli/small/"}, stderrMax: 1}},
		{"two-sources", []string{"--source", "s3://cli/small/", "--synthetic", "challenge"}, expect{code: 2, stderr: []string{"give exactly one of"}, stderrMax: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"S3_ENDPOINT=" + srv.Endpoint()}
			tc.want.check(t, s3zip(t, env, append([]string{"plan"}, tc.args...)...))
		})
	}
}

// symlinkZip is a ZIP with a file, a symbolic link and another file.
func symlinkZip(t *testing.T) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	add := func(name, body string, mode fs.FileMode) {
		h := &zip.FileHeader{Name: name, Method: zip.Store}
		h.SetMode(mode)
		fw, err := w.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(body))
	}
	add("a.txt", "alpha", 0o644)
	add("link", "/etc/passwd", fs.ModeSymlink|0o777)
	add("z.txt", "zulu", 0o644)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSmallerThings(t *testing.T) {
	srv := newUserServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	srv.PutObject(t, "cli", "links.zip", symlinkZip(t))
	srv.PutObject(t, "cli", "big/a.bin", s3test.Bytes(1, 3<<20))
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want expect
	}{
		{"verify-missing-object", []string{"verify", "s3://cli/nope.zip", ep},
			expect{code: exitRefused, stderr: []string{"s3://cli/nope.zip does not exist"}, stderrMax: 1}},
		{"get-missing-object", []string{"get", "s3://cli/nope.zip", t.TempDir(), ep},
			expect{code: exitRefused, stderr: []string{"s3://cli/nope.zip does not exist"}, stderrMax: 1}},
		{"get-symlink-refused", []string{"get", "s3://cli/links.zip", filepath.Join(dir, "refused"), ep},
			expect{code: 1, stderr: []string{`entry "link": symbolic links are not extracted`, "--skip-symlinks"}, stderrMax: 1}},
		{"get-skip-symlinks", []string{"get", "--skip-symlinks", "s3://cli/links.zip", filepath.Join(dir, "skipped"), ep},
			expect{stdout: []string{"extracted 2 entries (2 files, 0 directories, 1 symbolic link skipped)"}}},
		{"sample-prefix-is-a-folder", []string{"sample", "--dest", "s3://cli/nosl", "--count", "2", "--scale", "0.001", ep},
			expect{stdout: []string{"to s3://cli/nosl/ "}}},
		{"create-small-run-has-no-zero-rate", []string{"create", "--source", "s3://cli/one/", "--dest", "s3://out/one.zip", ep},
			expect{stdout: []string{"wall time"}, banned: []string{"0.0 MiB/s", "MB/s"}}},
		{"chain-run-explains-its-abort", []string{"create", "--source", "s3://cli/mid/", "--strategy", "chain", "--dest", "s3://out/chain.zip", ep},
			expect{stdout: []string{"AbortMultipartUpload: the planner's and workers' scratch uploads"}}},
		{"create-rate-in-mib", []string{"create", "--source", "s3://cli/big/", "--dest", "s3://out/big.zip", ep},
			expect{stdout: []string{"MiB/s)"}, banned: []string{"MB/s"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.want.check(t, s3zip(t, nil, tc.args...)) })
	}
	if _, err := os.Lstat(filepath.Join(dir, "skipped", "link")); !os.IsNotExist(err) {
		t.Errorf("skipped link exists: %v", err)
	}
	for name, want := range map[string]string{"a.txt": "alpha", "z.txt": "zulu"} {
		if got, err := os.ReadFile(filepath.Join(dir, "skipped", name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	keys := listKeys(t, srv, "cli", "nosl")
	for _, k := range keys {
		if !strings.HasPrefix(k, "nosl/") {
			t.Errorf("sample wrote %q, outside nosl/", k)
		}
	}
	r := s3zip(t, nil, "get", "s3://out/big.zip", t.TempDir(), ep)
	expect{stdout: []string{"MiB/s)"}, banned: []string{"MB/s"}}.check(t, r)
	r = s3zip(t, nil, "verify", "s3://out/big.zip", ep)
	expect{stdout: []string{"MiB/s)"}, banned: []string{"MB/s"}}.check(t, r)
}

func listKeys(t *testing.T, srv *s3test.Server, bucket, prefix string) []string {
	t.Helper()
	c := srv.Client(t)
	out, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, *o.Key)
	}
	if len(keys) == 0 {
		t.Errorf("no keys under s3://%s/%s", bucket, prefix)
	}
	return keys
}

// --strategy's default is the planner's: what a request without a strategy
// gets (docs/contract.md says the same).
func TestStrategyDefaultIsThePlanners(t *testing.T) {
	f := newFlags("create", "", "")
	addRequestFlags(f, "")
	want, err := plan.ParseStrategy("")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Lookup("strategy").DefValue; got != string(want) {
		t.Errorf("--strategy defaults to %q; a request without a strategy gets %q", got, want)
	}
	doc, err := os.ReadFile("../../docs/contract.md")
	if err != nil {
		t.Fatal(err)
	}
	if line := fmt.Sprintf(`"strategy": %q,`, want); !strings.Contains(string(doc), line) {
		t.Errorf("docs/contract.md's example request does not show the default strategy (%s)", line)
	}
}

// --inventory archives what an S3 Inventory report lists, --source narrowing
// it to a prefix; plan reads it the same way; the request's inventory and
// source fields are spoken of as the flags.
func TestInventoryFlag(t *testing.T) {
	srv := newUserServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	srv.CreateBucket(t, "inv")
	c := srv.Client(t)
	report := invreport.Build(t, invreport.CSV, "cli", "inv", "cli/daily/", invreport.Listed(t, c, "cli", ""), 10)
	srv.PutObjects(t, "inv", report.Objects)
	inv := "s3://inv/" + report.ManifestKey
	for _, tc := range []struct {
		name string
		args []string
		want expect
	}{
		{"create-under-prefix", []string{"create", "--inventory", inv, "--source", "s3://cli/small/", "--dest", "s3://out/i.zip", ep},
			expect{stdout: []string{"entries     12"}}},
		{"plan-under-prefix", []string{"plan", "--inventory", inv, "--source", "s3://cli/one/", ep},
			expect{stdout: []string{"entries         2"}}},
		{"another-bucket", []string{"create", "--inventory", inv, "--source", "s3://out/small/", "--dest", "s3://out/j.zip", ep},
			expect{code: exitRefused, stderr: []string{`--source "out"`, `lists bucket "cli"`}, banned: []string{"source.bucket"}, stderrMax: 1}},
		{"not-a-manifest", []string{"create", "--inventory", "s3://inv/cli/daily/data/0000.csv.gz", "--dest", "s3://out/k.zip", ep},
			expect{code: exitRefused, stderr: []string{"--inventory", "does not name a manifest.json"}, banned: []string{"source.inventory"}, stderrMax: 1}},
		{"with-manifest", []string{"create", "--inventory", inv, "--manifest", "s3://cli/m.csv", "--dest", "s3://out/l.zip", ep},
			expect{code: 2, stderr: []string{"give exactly one of", "--inventory"}, stderrMax: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.want.check(t, s3zip(t, nil, tc.args...)) })
	}
}

// What the SDK and the flag package print when nothing catches them first:
// no command may show them.
var rawErrors = []string{"operation error", "StatusCode:", "RequestID", "https response error", "Usage of", "  -workers int", "PrintDefaults"}

// Every command's mistakes are one line that says what failed, on what,
// and what to do, with the exit status README gives the kind of failure:
// 2 refused (the command line or the request), 3 not reached (endpoint,
// credentials), never the whole usage or the SDK's layers.
func TestEveryCommandFailsInOneLine(t *testing.T) {
	srv := newUserServer(t)
	srv.PutObject(t, "cli", "in.zip", storedZip(t, map[string]string{"a.txt": "alpha"}))
	srv.PutObject(t, "cli", "truncated.zip", storedZip(t, map[string]string{"a.txt": "alpha"})[:40])
	srv.PutObject(t, "cli", "notes.txt", []byte("not a zip at all, though long enough to hold an end record"))
	ep := "--endpoint=" + srv.Endpoint()
	taken := t.TempDir()
	if err := os.WriteFile(filepath.Join(taken, "a.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	dead := "--endpoint=http://127.0.0.1:1"
	for _, tc := range []struct {
		name string
		args []string
		want expect
	}{
		// mistyped flags and argument counts
		{"extract-flag-typo", []string{"extract", "s3://cli/in.zip", "s3://out/x/", "--wrokers", "2", ep},
			expect{code: exitRefused, stderr: []string{"extract:", "-wrokers", "did you mean --workers?"}}},
		{"extract-one-argument", []string{"extract", "s3://cli/in.zip", ep},
			expect{code: exitRefused, stderr: []string{"extract: missing s3://BUCKET/PREFIX/"}}},
		{"extract-three-arguments", []string{"extract", "s3://cli/in.zip", "s3://out/x/", "s3://out/y/", ep},
			expect{code: exitRefused, stderr: []string{`extract: unexpected argument "s3://out/y/"`}}},
		{"status-flag-typo", []string{"status", "--jsno", "arn:aws:states:eu-west-1:1:execution:m:e"},
			expect{code: exitRefused, stderr: []string{"status:", "did you mean --json?"}}},
		{"status-no-argument", []string{"status"},
			expect{code: exitRefused, stderr: []string{"status: missing EXECUTION_ARN"}}},
		{"status-two-arguments", []string{"status", "arn:aws:states:eu-west-1:1:execution:m:e", "more"},
			expect{code: exitRefused, stderr: []string{`status: unexpected argument "more"`}}},
		// what the request names does not exist: refused, before any write
		{"extract-missing-archive", []string{"extract", "s3://cli/nope.zip", "s3://out/x/", ep},
			expect{code: exitRefused, stderr: []string{"archive s3://cli/nope.zip does not exist"}}},
		{"extract-missing-archive-bucket", []string{"extract", "s3://nobucket/in.zip", "s3://out/x/", ep},
			expect{code: exitRefused, stderr: []string{`archive bucket "nobucket" does not exist`}}},
		{"extract-missing-destination-bucket", []string{"extract", "s3://cli/in.zip", "s3://nodest/x/", ep},
			expect{code: exitRefused, stderr: []string{`destination bucket "nodest" does not exist`}}},
		{"create-missing-destination-bucket", []string{"create", "--source", "s3://cli/small/", "--dest", "s3://nodest/a.zip", ep},
			expect{code: exitRefused, stderr: []string{`destination bucket "nodest" does not exist`}}},
		{"create-destination-exists", []string{"create", "--source", "s3://cli/small/", "--dest", "s3://cli/taken.zip", ep},
			expect{code: exitRefused, stderr: []string{"add --overwrite to replace it"}}},
		// what is there refuses the command before it writes
		{"get-onto-an-existing-file", []string{"get", "s3://cli/in.zip", taken, ep},
			expect{code: exitRefused, stderr: []string{`entry "a.txt": file already exists in ` + taken + "; add --overwrite"}, banned: []string{"use overwrite"}}},
		{"extract-truncated-archive", []string{"extract", "s3://cli/truncated.zip", "s3://out/t/", ep},
			expect{code: exitRefused, stderr: []string{"s3://cli/truncated.zip is not a readable ZIP archive", "nothing was written"}}},
		{"extract-not-a-zip", []string{"extract", "s3://cli/notes.txt", "s3://out/n/", ep},
			expect{code: exitRefused, stderr: []string{"s3://cli/notes.txt is not a readable ZIP archive", "nothing was written"}}},
		// S3 not reached: exit 3, whatever the command
		{"extract-dead-endpoint", []string{"extract", "s3://cli/in.zip", "s3://out/x/", dead},
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1"}}},
		{"get-dead-endpoint", []string{"get", "s3://cli/in.zip", t.TempDir(), dead},
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1"}}},
		{"verify-dead-endpoint", []string{"verify", "s3://cli/in.zip", dead},
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1"}}},
		{"cleanup-dead-endpoint", []string{"cleanup", "s3://cli/in.zip", dead},
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1"}}},
		{"create-dead-endpoint", []string{"create", "--source", "s3://cli/small/", "--dest", "s3://out/a.zip", dead},
			expect{code: exitUnreachable, stderr: []string{"cannot reach S3 at http://127.0.0.1:1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.stderrMax, tc.want.banned = 1, append(tc.want.banned, rawErrors...)
			tc.want.check(t, s3zip(t, nil, tc.args...))
		})
	}
}

// A value typed is honoured or refused with its range, never replaced by
// the default that an absent flag gets.
func TestTypedValuesAreNotDefaults(t *testing.T) {
	srv := newUserServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	src := []string{"create", "--source", "s3://cli/small/", "--dest", "s3://out/typed.zip", ep}
	for _, tc := range []struct {
		name string
		args []string
		want expect
	}{
		{"empty-state-machine", append(src, "--state-machine", ""),
			expect{code: exitRefused, stderr: []string{"--state-machine is given but empty"}}},
		{"empty-state-machine-equals", append(src, "--state-machine="),
			expect{code: exitRefused, stderr: []string{"--state-machine is given but empty"}}},
		{"empty-endpoint", []string{"verify", "s3://cli/taken.zip", "--endpoint", ""},
			expect{code: exitRefused, stderr: []string{"--endpoint is given but empty"}}},
		{"level-0", append(src, "--compress", "deflate", "--level", "0"),
			expect{code: exitRefused, stderr: []string{"--level 0: want 1 (fastest) to 9 (smallest)"}}},
		{"part-size-0", append(src, "--part-size", "0"),
			expect{code: exitRefused, stderr: []string{"--part-size 0: want 5MiB to 5GiB (5242880 to 5368709120 bytes)"}}},
		{"plan-level-0", []string{"plan", "--source", "s3://cli/small/", "--compress", "auto", "--level", "0", ep},
			expect{code: exitRefused, stderr: []string{"--level 0: want 1"}}},
		{"extract-negative-small-stored", []string{"extract", "s3://cli/taken.zip", "s3://out/x/", "--small-stored", "-5", ep},
			expect{code: exitRefused, stderr: []string{"--small-stored -5: want 0 or more bytes"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.stderrMax = 1
			tc.want.check(t, s3zip(t, nil, tc.args...))
		})
	}
	if left := srv.Leftovers(t, "out", "out"); len(left) > 0 {
		t.Errorf("refused runs left behind: %v", left)
	}
}

// docs/cli.md's exit status table names every code the commands use, with the
// meaning cli.go gives it.
func TestExitCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	for code, meaning := range map[int]string{0: "done", exitFailed: "failed", exitRefused: "refused", exitUnreachable: "could not reach"} {
		re := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(strings.TrimSpace(string(rune('0'+code)))) + ` +\| ` + regexp.QuoteMeta(meaning))
		if !re.Match(doc) {
			t.Errorf("docs/cli.md's exit status table has no row %q for %d", meaning, code)
		}
	}
}
