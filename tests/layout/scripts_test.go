package layout_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// versitygwBuilt skips a test that would otherwise build versitygw (minutes).
func versitygwBuilt(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, ".tools/bin/versitygw")); err != nil {
		t.Skip("versitygw is not built: make tools")
	}
}

// The README's local S3, used as it says: eval "$(make -s local-s3)" starts
// a server on loopback and prints the exports that reach it; the objects
// stay when it is stopped and started again, with the same keys; stop
// stops it.
func TestLocalS3(t *testing.T) {
	versitygwBuilt(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel) // after the stop below
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	env := append(os.Environ(), "LOCAL_S3_DIR="+t.TempDir(), "LOCAL_S3_PORT="+port)
	script := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "bash", append([]string{"scripts/local-s3.sh"}, args...)...)
		cmd.Dir, cmd.Env = root, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("scripts/local-s3.sh %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}
	t.Cleanup(func() { script("stop") })

	exports := parseExports(t, script())
	endpoint := "http://127.0.0.1:" + port
	for _, name := range []string{"S3_ENDPOINT", "AWS_ENDPOINT_URL_S3"} {
		if exports[name] != endpoint {
			t.Errorf("%s=%q, want %s", name, exports[name], endpoint)
		}
	}
	client := s3.New(s3.Options{
		Region:       exports["AWS_REGION"],
		BaseEndpoint: aws.String(exports["S3_ENDPOINT"]),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(exports["AWS_ACCESS_KEY_ID"], exports["AWS_SECRET_ACCESS_KEY"], ""),
	})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("try")}); err != nil {
		t.Fatalf("create a bucket with the printed exports: %v", err)
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("try"), Key: aws.String("a.txt"), Body: strings.NewReader("alpha")}); err != nil {
		t.Fatal(err)
	}
	if again := parseExports(t, script()); again["AWS_ACCESS_KEY_ID"] != exports["AWS_ACCESS_KEY_ID"] {
		t.Errorf("run again while it runs, the exports changed: %v, then %v", exports, again)
	}

	script("stop")
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
		c.Close()
		t.Fatalf("127.0.0.1:%s still answers after scripts/local-s3.sh stop", port)
	}
	if again := parseExports(t, script()); again["AWS_SECRET_ACCESS_KEY"] != exports["AWS_SECRET_ACCESS_KEY"] {
		t.Errorf("restarted, the keys changed: the exports a user has stopped working")
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("try"), Key: aws.String("a.txt")})
	if err != nil {
		t.Fatalf("after a restart, the object put before: %v", err)
	}
	defer out.Body.Close()
	if body, _ := io.ReadAll(out.Body); string(body) != "alpha" {
		t.Errorf("after a restart, a.txt holds %q", body)
	}
}

// parseExports reads `export K=V …` lines.
func parseExports(t *testing.T, out string) map[string]string {
	t.Helper()
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		rest, ok := strings.CutPrefix(line, "export ")
		if !ok {
			t.Fatalf("stdout holds a line that is not an export: %q (eval would run it)", line)
		}
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "S3_ENDPOINT"} {
		if vars[k] == "" {
			t.Fatalf("no %s in the exports:\n%s", k, out)
		}
	}
	return vars
}

// make demo installs what the demo uses, no more: `tools/install.sh demo`
// succeeds on a PATH with go and python3 but no Java, ZIP reader or apt,
// and installs neither staticcheck nor cfn-lint.
func TestDemoInstallsWhatItUses(t *testing.T) {
	versitygwBuilt(t)
	demo, err := os.ReadFile(filepath.Join(root, "scripts/demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(demo), "bash tools/install.sh demo\n") {
		t.Errorf("scripts/demo.sh does not install with tools/install.sh demo")
	}
	bin := t.TempDir()
	for _, tool := range []string{"bash", "go", "python3", "awk", "grep", "mkdir", "cp", "mv", "dirname", "id", "cat"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not on PATH", tool)
		}
		if err := os.Symlink(path, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "bash"), "tools/install.sh", "demo")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tools/install.sh demo with go and python3 alone: %v\n%s", err, out)
	}
	for _, other := range []string{"staticcheck", "cfn-lint", "java", "apt"} {
		if strings.Contains(string(out), other) {
			t.Errorf("tools/install.sh demo speaks of %s, which the demo does not use:\n%s", other, out)
		}
	}
}
