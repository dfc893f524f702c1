// Package s3test starts a real S3-compatible server (versitygw, POSIX backend)
// on loopback for tests, and gives them a configured aws-sdk-go-v2 client plus
// helpers to create buckets and source objects.
//
// Every test that calls Start gets its own server process, data directory and
// root credentials; the server is stopped by tb.Cleanup, also when the test
// fails. The binary is looked up in $S3ZIP_VERSITYGW, then
// <repo>/.tools/bin/versitygw, then PATH; install it with `make tools` (which
// runs tools/install.sh).
//
// Facts about versitygw v1.8.0 that the rest of s3zip relies on are asserted by
// the TestVersitygwFacts* tests in this package and written up in
// docs/versitygw.md.
package s3test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvBinary names the environment variable that, when set, is the path of the
// versitygw binary to run.
const EnvBinary = "S3ZIP_VERSITYGW"

// Region is the region the server is started with and clients sign for.
const Region = "us-east-1"

const (
	startTimeout = 15 * time.Second
	stopTimeout  = 5 * time.Second
	startTries   = 3 // a free port can be taken between probing and binding
)

// Server is one running versitygw process.
type Server struct {
	endpoint  string
	accessKey string
	secretKey string
	dataDir   string
	binary    string

	cmd     *exec.Cmd
	log     *lockedBuffer
	exited  chan struct{}
	waitErr error
}

// Endpoint is the server's base URL, e.g. "http://127.0.0.1:41234".
func (s *Server) Endpoint() string { return s.endpoint }

// AccessKey is the root access key generated for this server.
func (s *Server) AccessKey() string { return s.accessKey }

// SecretKey is the root secret key generated for this server.
func (s *Server) SecretKey() string { return s.secretKey }

// DataDir is the POSIX backend directory: one sub-directory per bucket.
func (s *Server) DataDir() string { return s.dataDir }

// Log returns what the server has printed so far (stdout and stderr).
func (s *Server) Log() string { return s.log.String() }

// FindBinary returns the versitygw binary to run, or an error that says how to
// install it.
func FindBinary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if isExecutable(p) {
			return p, nil
		}
		return "", fmt.Errorf("$%s=%q is not an executable file; unset it or run `make tools` (tools/install.sh)", EnvBinary, p)
	}
	var tried []string
	if root, err := repoRoot(); err == nil {
		p := filepath.Join(root, ".tools", "bin", "versitygw")
		if isExecutable(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	tried = append(tried, "versitygw on $PATH")
	return "", fmt.Errorf("versitygw binary not found (tried $%s, %s): run `make tools` or tools/install.sh from the repository root",
		EnvBinary, strings.Join(tried, ", "))
}

// Start starts versitygw on 127.0.0.1 with a free port, a fresh data directory
// under tb.TempDir() and per-run root credentials, waits until it answers HTTP,
// and registers tb.Cleanup to stop it. It fails the test if the binary is
// missing or the server does not come up.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := FindBinary()
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	// TempDir first: cleanups run last-in first-out, so the server is stopped
	// before its data directory is removed.
	base := tb.TempDir()
	var lastErr error
	for try := 1; try <= startTries; try++ {
		dataDir := filepath.Join(base, fmt.Sprintf("data%d", try))
		if err := os.Mkdir(dataDir, 0o755); err != nil {
			tb.Fatalf("s3test: create data dir: %v", err)
		}
		s, err := start(bin, dataDir)
		if err == nil {
			tb.Cleanup(func() {
				if err := s.Stop(); err != nil {
					tb.Logf("s3test: stopping versitygw: %v\nserver log:\n%s", err, tail(s.Log(), 4096))
				}
			})
			return s
		}
		lastErr = err
	}
	tb.Fatalf("s3test: versitygw did not start after %d tries: %v", startTries, lastErr)
	return nil
}

func start(bin, dataDir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	s := &Server{
		endpoint:  fmt.Sprintf("http://127.0.0.1:%d", port),
		accessKey: "s3zip" + randomHex(8),
		secretKey: randomHex(20),
		dataDir:   dataDir,
		binary:    bin,
		log:       &lockedBuffer{},
		exited:    make(chan struct{}),
	}
	s.cmd = exec.Command(bin, "--port", fmt.Sprintf("127.0.0.1:%d", port), "--quiet", "posix", dataDir)
	// Credentials go through the environment, not argv, so they do not show in ps.
	// VGW_* variables from the caller's environment would reconfigure the server.
	env := []string{"ROOT_ACCESS_KEY=" + s.accessKey, "ROOT_SECRET_KEY=" + s.secretKey, "VGW_REGION=" + Region}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VGW_") && !strings.HasPrefix(kv, "ROOT_") {
			env = append(env, kv)
		}
	}
	s.cmd.Env = env
	s.cmd.Stdout = s.log
	s.cmd.Stderr = s.log
	// Own process group, so an interrupted `go test` does not leave it behind
	// holding the terminal, and Stop can signal exactly this server.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("run %s: %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("%w\nserver log:\n%s", err, tail(s.Log(), 4096))
	}
	return s, nil
}

// waitReady polls until the server answers any HTTP response.
func (s *Server) waitReady() error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		select {
		case <-s.exited:
			return fmt.Errorf("versitygw exited during start-up: %v", s.waitErr)
		default:
		}
		resp, err := hc.Get(s.endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("versitygw at %s did not answer within %v: %v", s.endpoint, startTimeout, err)
		}
		time.Sleep(delay)
	}
}

// Stop terminates the server (SIGTERM, then SIGKILL after a grace period) and
// waits for it to exit. It is safe to call more than once.
func (s *Server) Stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-s.exited:
		return errors.New("versitygw ignored SIGTERM; killed")
	case <-time.After(stopTimeout):
		return errors.New("versitygw did not exit after SIGKILL")
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// repoRoot finds the module root from this source file's location, falling
// back to walking up from the working directory to a go.mod.
func repoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		root := filepath.Join(filepath.Dir(file), "..", "..", "..")
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return filepath.Clean(root), nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Keep memory bounded for long, chatty runs.
	if b.buf.Len() > 1<<20 {
		b.buf.Next(b.buf.Len() / 2)
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
