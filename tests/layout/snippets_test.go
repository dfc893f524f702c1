package layout_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README shows code that lives in files the tests build and run
// (examples/start, examples/notify/rule.json). Each block follows a marker,
// <!-- snippet: PATH --> (the whole file) or <!-- snippet: PATH (excerpt) -->
// (lines of the file, one after another), and must be exactly that.

// wantSnippets are the files the README must show: the rule and the
// request, and starting an archive from Go, Python and TypeScript.
var wantSnippets = []string{
	"examples/notify/rule.json",
	"examples/start/request.json",
	"examples/start/go/main.go",
	"examples/start/python/start.py",
	"examples/start/ts/start.ts",
}

var snippetMarker = regexp.MustCompile("(?m)^<!-- snippet: (\\S+)( \\(excerpt\\))? -->\n```[a-z]*\n((?s:.*?))```\n")

func TestReadmeSnippetsAreTheFiles(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, m := range snippetMarker.FindAllSubmatch(readme, -1) {
		path, excerpt, block := string(m[1]), len(m[2]) > 0, string(m[3])
		shown = append(shown, path)
		file, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Errorf("README shows %s, which is not in the tree", path)
			continue
		}
		switch {
		case !excerpt && block != string(file):
			t.Errorf("README's block of %s is not the file: copy the file into it again", path)
		case excerpt && !containsLines(string(file), block):
			t.Errorf("README's excerpt of %s is not lines of the file as they are: copy them into it again", path)
		}
	}
	for _, p := range wantSnippets {
		if !slices.Contains(shown, p) {
			t.Errorf("README shows no block of %s after a <!-- snippet: %s --> marker", p, p)
		}
	}
	if n := strings.Count(string(readme), "<!-- snippet:"); n != len(shown) {
		t.Errorf("README has %d snippet markers but %d are followed by a code block", n, len(shown))
	}
}

// containsLines reports whether block is whole lines of file, in a row.
func containsLines(file, block string) bool {
	return block != "" && strings.HasSuffix(block, "\n") && (strings.HasPrefix(file, block) || strings.Contains(file, "\n"+block))
}

// The Python and TypeScript examples need boto3 and the AWS SDK for
// JavaScript, which are not installed here: each runs against a stand-in
// module that records the calls, as a user would run it (environment in,
// one call out), and its completion handler reads examples/notify's events.
// What each sends must be examples/start/request.json (which the Go
// example's test holds to the planner's decoder).

// exampleEnv is the environment the examples read their names from.
func exampleEnv(controlBucket string) []string {
	env := append(os.Environ(), "SOURCE_BUCKET=photos", "DESTINATION_BUCKET=archives", "STATE_MACHINE_ARN=the-state-machine", "CONTROL_BUCKET="+controlBucket)
	return env
}

// call is one SDK call a stand-in recorded.
type call struct {
	API   string            `json:"api"`
	Input map[string]string `json:"input"`
}

func TestPythonExampleRuns(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not on PATH (tools/install.sh needs it too)")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "stub", "boto3.py"), pythonBoto3Stub)
	script, _ := filepath.Abs(filepath.Join(root, "examples/start/python/start.py"))
	cmd := exec.Command(python, "-m", "py_compile", script)
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+filepath.Join(dir, "pycache"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("py_compile start.py: %v\n%s", err, out)
	}
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(python, args...)
		cmd.Env = append(env, "PYTHONPATH="+filepath.Join(dir, "stub")+string(os.PathListSeparator)+filepath.Dir(script), "PYTHONPYCACHEPREFIX="+filepath.Join(dir, "pycache"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python3 %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	checkCalls(t, "start.py", run(exampleEnv(""), script), run(exampleEnv("the-control-bucket"), script))
	for file, want := range eventsRead {
		got := run(os.Environ(), "-c", "import json, sys, start; start.archive_ended(json.load(open(sys.argv[1])))", eventFile(file))
		if !strings.Contains(got, want) {
			t.Errorf("start.archive_ended(%s) printed %q, want %q in it", file, got, want)
		}
	}
}

func TestTypeScriptExampleChecksAndRuns(t *testing.T) {
	bin := filepath.Join(root, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "tsc")); err != nil {
		t.Skip("node_modules/.bin/tsc missing: make node (make test does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	dir := t.TempDir()
	tsc := exec.Command(filepath.Join(bin, "tsc"), "-p", filepath.Join(root, "examples/start/ts/tsconfig.json"), "--noEmit", "false", "--outDir", filepath.Join(dir, "js"))
	if out, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("tsc -p examples/start/ts: %v\n%s", err, out)
	}
	for _, m := range []string{"client-sfn", "client-s3"} {
		writeFile(t, filepath.Join(dir, "node_modules", "@aws-sdk", m, "index.js"), jsSDKStub)
	}
	script := filepath.Join(dir, "js", "start.js")
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(node, args...)
		cmd.Env = append(env, "NODE_PATH="+filepath.Join(dir, "node_modules"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	checkCalls(t, "start.ts", run(exampleEnv(""), script), run(exampleEnv("the-control-bucket"), script))
	for file, want := range eventsRead {
		got := run(os.Environ(), "-e", "require(process.argv[1]).archiveEnded(JSON.parse(require('fs').readFileSync(process.argv[2], 'utf8')))", script, eventFile(file))
		if !strings.Contains(got, want) {
			t.Errorf("archiveEnded(%s) printed %q, want %q in it", file, got, want)
		}
	}
}

// eventsRead are examples/notify's events and what a handler that read
// each prints.
var eventsRead = map[string]string{
	"succeeded.json": "order-42: s3://archives/zips/photos-2024.zip, 20973951 bytes, CRC-32 913a7974",
	"failed.json":    "FAILED: SourceChangedError",
}

func eventFile(name string) string {
	p, _ := filepath.Abs(filepath.Join(root, "examples/notify/testdata", name))
	return p
}

// checkCalls holds what an example sent, started and dropped, to the
// request in examples/start/request.json.
func checkCalls(t *testing.T, example, started, dropped string) {
	t.Helper()
	want := readJSON(t, []byte(mustRead(t, "examples/start/request.json")))
	for _, c := range []struct {
		out, api, body string
		fields         map[string]string
	}{
		{started, "StartExecution", "input", map[string]string{"stateMachineArn": "the-state-machine"}},
		{dropped, "PutObject", "Body", map[string]string{"Bucket": "the-control-bucket", "Key": "requests/order-42.json"}},
	} {
		var got *call
		for _, line := range strings.Split(c.out, "\n") {
			if rest, ok := strings.CutPrefix(line, "SDK-CALL "); ok {
				got = new(call)
				if err := json.Unmarshal([]byte(rest), got); err != nil {
					t.Fatalf("%s: stand-in's record %q: %v", example, rest, err)
				}
			}
		}
		if got == nil || got.API != c.api {
			t.Errorf("%s made no %s call; it printed:\n%s", example, c.api, c.out)
			continue
		}
		for k, v := range c.fields {
			if got.Input[k] != v {
				t.Errorf("%s: %s's %s is %q, want %q", example, c.api, k, got.Input[k], v)
			}
		}
		if body := readJSON(t, []byte(got.Input[c.body])); !reflect.DeepEqual(body, want) {
			t.Errorf("%s: %s's %s is %s, want examples/start/request.json", example, c.api, c.body, got.Input[c.body])
		}
	}
}

func readJSON(t *testing.T, doc []byte) any {
	t.Helper()
	var v any
	if err := json.NewDecoder(bytes.NewReader(doc)).Decode(&v); err != nil {
		t.Fatalf("%q: %v", doc, err)
	}
	return v
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pythonBoto3Stub stands in for boto3: a client's call prints itself.
const pythonBoto3Stub = `import json


class _Client:
    def __init__(self, service):
        self.service = service

    def _record(self, api, **kwargs):
        kwargs = {k: v.decode() if isinstance(v, bytes) else v for k, v in kwargs.items()}
        print("SDK-CALL " + json.dumps({"api": api, "input": kwargs}))

    def start_execution(self, **kwargs):
        assert self.service == "stepfunctions", self.service
        self._record("StartExecution", **kwargs)
        return {"executionArn": "the-execution", "startDate": None}

    def put_object(self, **kwargs):
        assert self.service == "s3", self.service
        self._record("PutObject", **kwargs)
        return {"ETag": "\"etag\""}


def client(service, **kwargs):
    return _Client(service)
`

// jsSDKStub stands in for @aws-sdk/client-sfn and @aws-sdk/client-s3: a
// command sent prints itself.
const jsSDKStub = `'use strict';
class Command {
  constructor(input) { this.input = input; }
}
class StartExecutionCommand extends Command {}
class PutObjectCommand extends Command {}
class Client {
  constructor(config) { this.config = config; }
  async send(command) {
    const api = command.constructor.name.replace(/Command$/, '');
    console.log('SDK-CALL ' + JSON.stringify({ api, input: command.input }));
    return api === 'StartExecution' ? { executionArn: 'the-execution', startDate: new Date() } : { ETag: '"etag"' };
  }
}
module.exports = { SFNClient: Client, S3Client: Client, StartExecutionCommand, PutObjectCommand };
`
