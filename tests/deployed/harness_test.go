// Package deployed_test runs s3zip as a user deploys it: the template from
// `cdk synth`, the packaged bootstrap binaries as Lambda processes, the state
// machine definition after CloudFormation's substitutions under the local
// Step Functions engine, and every S3, Lambda and Step Functions call checked
// against the IAM role the template gives its caller (README.md).
package deployed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/internal/testenv/iameval"
	"github.com/s3zip/s3zip/internal/testenv/mapadapter"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// The stack is synthesized with these context values (infra/bin/app.ts), so
// the roles' source and destination statements carry prefixes and conditions.
const (
	sourceBucket      = "s3zip-src"
	sourcePrefix      = "in/"
	destinationBucket = "s3zip-dst"
	destinationPrefix = "archives/"
	// pieceSize (-c pieceSize, env PIECE_SIZE_BYTES): the read pass cuts a
	// compressed test's 20 MiB log into pieces that PlanLayout joins.
	pieceSize = 6 << 20
	// SSE-KMS keys, one per place (-c …KmsKeyArn…): the work and control
	// buckets, the sources, the archives' destination, the extract
	// workflow's archives (incoming/) and its destination (extracted/). Every
	// request on an object there is checked for the KMS calls S3 makes with
	// the caller's rights (iameval.KMSRequests), so each role must hold
	// exactly the keys of what it reads and writes.
	workKey               = "arn:aws:kms:" + region + ":" + account + ":key/00000000-0000-4000-8000-00000000000a"
	sourceKey             = "arn:aws:kms:" + region + ":" + account + ":key/00000000-0000-4000-8000-00000000000b"
	destinationKey        = "arn:aws:kms:" + region + ":" + account + ":key/00000000-0000-4000-8000-00000000000c"
	extractArchiveKey     = "arn:aws:kms:" + region + ":" + account + ":key/00000000-0000-4000-8000-00000000000d"
	extractDestinationKey = "arn:aws:kms:" + region + ":" + account + ":key/00000000-0000-4000-8000-00000000000e"
	extractArchivePrefix  = "incoming/"  // ExtractWorkflow's default
	extractDestPrefix     = "extracted/" // ExtractWorkflow's default
	// S3 Inventory reports the planner may read (-c inventoryBuckets):
	// inventory_test.go archives from one.
	inventoryBucket = "s3zip-inventory"
	inventoryPrefix = "reports/"
	// maxPresignSeconds (-c maxPresignSeconds): requests may ask the
	// finalizer for links of up to a day (output_test.go).
	maxPresignSeconds = 86400
)

var (
	tmpl      *Template
	setupErr  error
	repo      string
	summaryMu sync.Mutex
	summary   = struct {
		executions, calls, denied int
		kmsCalls                  int             // of calls: the KMS calls S3 makes for SSE-KMS objects
		used                      map[string]bool // "role|policy/sid|action"
		lintErrors                int
		linted                    bool
	}{used: map[string]bool{}}
)

func TestMain(m *testing.M) {
	repo, _ = filepath.Abs(filepath.Join("..", ".."))
	dir, err := os.MkdirTemp("", "s3zip-deployed-")
	if err == nil {
		setupErr = synth(dir)
		if setupErr == nil {
			tmpl, setupErr = LoadTemplate(filepath.Join(dir, "cdk.out"))
		}
	} else {
		setupErr = err
	}
	code := m.Run()
	if tmpl != nil {
		unused, kept, awsOnly := unusedGrants()
		for _, u := range kept {
			fmt.Printf("unused grant kept: %s\n", u)
		}
		for _, u := range unused {
			fmt.Printf("unused grant: %s\n", u)
		}
		if len(awsOnly) > 0 {
			fmt.Printf("not exercisable here (AWS only): %s\n", strings.Join(awsOnly, ", "))
		}
		lint := "not run"
		if summary.linted {
			lint = fmt.Sprintf("%d errors", summary.lintErrors)
		}
		fmt.Printf("deployed: %d executions, %d calls checked (%d of them KMS), %d denied, %d unused grants; cfn-lint: %s\n",
			summary.executions, summary.calls, summary.kmsCalls, summary.denied, len(unused), lint)
	}
	_ = os.RemoveAll(dir)
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// synth builds the five functions for this machine (`make lambdas` with
// LAMBDA_ARCH set to the host's) and synthesizes the stack with them.
func synth(dir string) error {
	fns := filepath.Join(dir, "functions")
	make := exec.Command("make", "-s", "lambdas", "LAMBDA_ARCH="+runtime.GOARCH, "LAMBDA_DIR="+fns)
	make.Dir = repo
	if out, err := make.CombinedOutput(); err != nil {
		return fmt.Errorf("make lambdas LAMBDA_ARCH=%s: %v\n%s", runtime.GOARCH, err, out)
	}
	cdk := filepath.Join(repo, "node_modules", ".bin", "cdk")
	if _, err := os.Stat(cdk); err != nil {
		return fmt.Errorf("%s is missing: run `npm ci` (or `make node`) first", cdk)
	}
	cmd := exec.Command(cdk, "synth", "-q", "-o", filepath.Join(dir, "cdk.out"),
		"-c", "functionsDir="+fns, "-c", "sourceBuckets="+sourceBucket, "-c", "sourcePrefix="+sourcePrefix,
		"-c", "destinationBucket="+destinationBucket, "-c", "destinationPrefix="+destinationPrefix, "-c", "partsPerBatch=2", "-c", fmt.Sprintf("pieceSize=%d", pieceSize),
		"-c", "extractBucket="+sourceBucket, // extract_test.go: incoming/*.zip → extracted/<name>/
		"-c", "workKmsKeyArn="+workKey, "-c", "sourceKmsKeyArns="+sourceKey, "-c", "destinationKmsKeyArn="+destinationKey,
		"-c", "extractArchiveKmsKeyArns="+extractArchiveKey, "-c", "extractDestinationKmsKeyArn="+extractDestinationKey,
		"-c", "inventoryBuckets="+inventoryBucket+"/"+inventoryPrefix,
		"-c", fmt.Sprintf("maxPresignSeconds=%d", maxPresignSeconds)) // output_test.go: links signed by the finalizer
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CDK_DISABLE_VERSION_CHECK=1", "CDK_DISABLE_CLI_TELEMETRY=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cdk synth: %v\n%s", err, out)
	}
	return nil
}

func requireTemplate(t *testing.T) *Template {
	t.Helper()
	if setupErr != nil {
		t.Fatalf("synthesizing the stack: %v", setupErr)
	}
	return tmpl
}

// ---- IAM ---------------------------------------------------------------------------------

// Call is one request a role made, with the authorizations it needs.
type Call struct {
	Role, What string
	Requests   []iameval.Request
	Decisions  []iameval.Decision
}

// IAM checks every call against the caller's role policies from the template.
type IAM struct {
	policies map[string][]iameval.Policy // role logical ID → policies
	mu       sync.Mutex
	calls    []Call
	denied   []string
	// summaryOnly keeps no Call, only the denials and the suite's summary:
	// a run of millions of requests (scale_test.go) would hold gigabytes.
	summaryOnly bool
}

func (a *IAM) check(role, what string, reqs []iameval.Request) bool {
	c := Call{Role: role, What: what, Requests: reqs}
	ok := true
	var deny []string
	for _, r := range reqs {
		d, err := iameval.Evaluate(a.policies[role], r)
		if err != nil {
			deny = append(deny, fmt.Sprintf("%s: %v", r, err))
			ok = false
			continue
		}
		c.Decisions = append(c.Decisions, d)
		if !d.Allowed {
			ok = false
			why := "no statement of its policies allows it"
			if d.ExplicitDeny {
				why = "explicitly denied by " + d.Statement
			}
			deny = append(deny, fmt.Sprintf("%s needs %s (%s)", role, r, why))
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.summaryOnly {
		a.calls = append(a.calls, c)
	}
	if !ok {
		a.denied = append(a.denied, fmt.Sprintf("%s: %s", what, strings.Join(deny, "; ")))
	}
	summaryMu.Lock()
	summary.calls++
	if len(reqs) > 0 && strings.HasPrefix(reqs[0].Action, "kms:") {
		summary.kmsCalls++
	}
	if !ok {
		summary.denied++
	}
	for i, d := range c.Decisions {
		for _, s := range d.AllowedBy {
			summary.used[role+"|"+s+"|"+strings.ToLower(reqs[i].Action)] = true
		}
	}
	summaryMu.Unlock()
	return ok
}

// Calls returns the calls so far made by role ("" for all).
func (a *IAM) Calls(role string) []Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Call
	for _, c := range a.calls {
		if role == "" || c.Role == role {
			out = append(out, c)
		}
	}
	return out
}

// keptGrants are grants the runs here do not (or cannot) use, kept for a
// reason: {role name part, statement, action} → why. Anything else unused is
// counted in the summary's "unused grants".
var keptGrants = []struct{ role, sid, action, why string }{
	{"", "SourceObjectsRead", "s3:GetObjectVersion", "sources in a versioned bucket are read by the version the planner pinned (versitygw runs unversioned here)"},
	{"", "SourceObjectsReadTail", "s3:GetObjectVersion", "same, for the finalizer's tail reads"},
	{"Worker", "SourceBucketsList", "s3:ListBucket", "a deleted source must answer 404 NoSuchKey (SourceChangedError), not 403"},
	{"Reader", "SourceBucketsList", "s3:ListBucket", "same, for the read pass's ranged GETs"},
	{"", "WorkPrefixList", "s3:ListBucket", "a missing work object must answer 404, not 403"},
	{"Finalizer", "DestinationPrefixList", "s3:ListBucket", "the check after completion tells a removed archive (404) from a forbidden one"},
	{"", "WorkPrefixObjects", "s3:AbortMultipartUpload", "chain rounds left open by a failed worker are aborted (fault path)"},
	{"", "WorkUploadsList", "s3:ListBucketMultipartUploads", "cleaning the work prefix lists its open uploads (used whenever a finalizer or abort runs)"},
	{"StateMachineRole", "MapResultWriter", "s3:AbortMultipartUpload", "AWS documents it for ResultWriter (large result files are written in parts)"},
	{"StateMachineRole", "MapResultWriter", "s3:ListMultipartUploadParts", "same"},
	{"StateMachineRole", "MapChildExecutionsControl", "states:StopExecution", "a failing Map Run stops the children still running"},
	{"StateMachineRole", "MapChildExecutionsControl", "states:RedriveExecution", "a redriven execution redrives its failed Map Run's unsuccessful children (Step Functions guide, \"Redriving Map Runs\"); the local redrive runs them in process"},
	{"ExtractWorker", "DestinationObjects", "s3:GetObject", "a batch run again finds the objects its last attempt wrote (HEAD for the execution metadata; retry path, tests/asl)"},
	{"ExtractWorker", "DestinationObjects", "s3:AbortMultipartUpload", "a failing batch aborts the uploads it has open (fault path)"},
	{"ExtractFinalizer", "DestinationObjects", "s3:GetObject", "a finalizer run again finds the report it wrote (retry path)"},
	{"ExtractFinalizer", "DestinationObjects", "s3:AbortMultipartUpload", "uploads left by a batch that failed and was run again are aborted (retry path)"},
	{"ExtractAbort", "DestinationObjects", "s3:AbortMultipartUpload", "uploads of a failed run still open are aborted (fault path: a worker killed mid-entry)"},
}

func keptFor(role, sid, action string) string {
	for _, k := range keptGrants {
		if strings.Contains(role, k.role) && k.sid == sid && strings.EqualFold(k.action, action) {
			return k.why
		}
	}
	return ""
}

// unusedGrants lists every action of an Allow statement in the template that
// no checked call used (by role, statement and action), and separately the
// grants of services no call here can exercise (logs, X-Ray, KMS).
func unusedGrants() (unused, kept, awsOnly []string) {
	pols, err := tmpl.RolePolicies()
	if err != nil {
		return []string{err.Error()}, nil, nil
	}
	summaryMu.Lock()
	defer summaryMu.Unlock()
	seenAWS := map[string]bool{}
	for role, ps := range pols {
		for _, p := range ps {
			for i, s := range p.Statements {
				if s.Effect != "Allow" {
					continue
				}
				sid := s.Sid
				if sid == "" {
					sid = fmt.Sprintf("#%d", i)
				}
				for _, a := range s.Action {
					svc, _, _ := strings.Cut(a, ":")
					if svc != "s3" && svc != "lambda" && svc != "states" && svc != "kms" {
						if !seenAWS[svc] {
							seenAWS[svc] = true
							awsOnly = append(awsOnly, svc)
						}
						continue
					}
					if !summary.used[role+"|"+p.Name+"/"+sid+"|"+strings.ToLower(a)] {
						if why := keptFor(role, sid, a); why != "" {
							kept = append(kept, fmt.Sprintf("%s %s: %s (%s)", role, sid, a, why))
						} else {
							unused = append(unused, fmt.Sprintf("%s %s: %s", role, sid, a))
						}
					}
				}
			}
		}
	}
	sort.Strings(unused)
	sort.Strings(kept)
	sort.Strings(awsOnly)
	return unused, kept, awsOnly
}

// ---- the deployment ----------------------------------------------------------------------

// Deployment is one stack "deployed" here: versitygw behind the fault proxy
// behind the IAM recorder, the functions, the state machine and the rule.
type Deployment struct {
	T         *testing.T
	Template  *Template
	S3        *s3test.Server
	Admin     *s3.Client // the test's own client (root, not recorded)
	Faults    *faultproxy.Proxy
	IAM       *IAM
	Lambdas   *Lambdas
	Machine   *StateMachine
	Functions map[string]*LambdaFunction // by the name in functions/ (planner, worker, …)
	Work      string                     // the work bucket's name
	Control   string                     // the control bucket's name
	url       string                     // recorder (S3 endpoint of every caller)
	api       string                     // Lambda Invoke API and Map adapter, for execute.ts
	tokens    map[string]string          // session token → role logical ID
	kmsKeys   map[string]string          // "bucket/prefix" → the SSE-KMS key ARN its objects are encrypted with
	smS3      *s3.Client
	defFile   string
	mu        sync.Mutex
	refuse412 func(op string) bool
	tamper    func(op string, resp *http.Response)
	// executions started through the Step Functions API (sfnapi_test.go)
	executions map[string]*sfnExecution
	// ExecutionTimeout bounds one execution (3 minutes when 0).
	ExecutionTimeout time.Duration
	// invokeFault, when set, answers an invocation of fn with payload as
	// Lambda's service answers a failure of its own: 500 and
	// X-Amzn-ErrorType the exception it returns ("": none, invoke fn).
	invokeFault func(fn *LambdaFunction, payload []byte) string
}

type callerKey struct{}

// kmsKeyOf is the SSE-KMS key objects at bucket/key are encrypted with: the
// longest marked prefix's ("" where none is marked).
func (d *Deployment) kmsKeyOf(bucket, key string) string {
	best, arn := -1, ""
	for loc, k := range d.kmsKeys {
		if strings.HasPrefix(bucket+"/"+key, loc) && len(loc) > best {
			best, arn = len(loc), k
		}
	}
	return arn
}

// modifyResponse makes two answers what S3 would give this caller:
//   - a GET or HEAD of a missing key answers 404 only to a caller allowed
//     s3:ListBucket on the bucket, else 403 AccessDenied (GetObject/HeadObject
//     "Permissions"). AWS does not document which s3:prefix a conditioned
//     ListBucket grant is matched with here; the harness assumes the key
//     itself (a list of exactly that key would be allowed). Such a 403 counts
//     as a denied call.
//   - the test's tamper hook, if set, may change a response (e.g. a checksum).
func (d *Deployment) modifyResponse(resp *http.Response) error {
	r := resp.Request
	role, _ := r.Context().Value(callerKey{}).(string)
	op := string(faultproxy.Classify(r))
	if resp.StatusCode == http.StatusNotFound && (op == "GetObject" || op == "HeadObject") {
		bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		list := iameval.Request{Action: "s3:ListBucket", Resource: "arn:" + partition + ":s3:::" + bucket, Context: map[string][]string{"s3:prefix": {key}}}
		if !d.IAM.check(role, op+" of a missing key (404 needs s3:ListBucket) "+r.URL.RequestURI(), []iameval.Request{list}) {
			body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`
			resp.StatusCode, resp.Status = http.StatusForbidden, "403 Forbidden"
			resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
			resp.ContentLength = int64(len(body))
			if op == "HeadObject" {
				body = ""
			}
			_ = resp.Body.Close()
			resp.Body = io.NopCloser(strings.NewReader(body))
		}
	}
	d.mu.Lock()
	tamper := d.tamper
	d.mu.Unlock()
	if tamper != nil {
		tamper(op, resp)
	}
	return nil
}

// SetTamper installs a hook that may change S3's responses (nil removes it).
func (d *Deployment) SetTamper(f func(op string, resp *http.Response)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tamper = f
}

// SetPreconditionFailed makes the S3 side answer 412 PreconditionFailed (as
// S3 answers a conditional request whose ETag no longer matches) to every
// request whose operation refuse names; nil stops it.
func (d *Deployment) SetPreconditionFailed(refuse func(op string) bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refuse412 = refuse
}

// rateFactor reads S3ZIP_RATE_FACTOR: S3's per-prefix request rates divided
// by it are what the deployment's S3 serves each bucket, 503 SlowDown past
// them (faultproxy.ScaledRates); unset or 0, the S3 side never refuses a rate.
func rateFactor() (*faultproxy.Rates, error) {
	v := os.Getenv("S3ZIP_RATE_FACTOR")
	if v == "" || v == "0" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		return nil, fmt.Errorf("S3ZIP_RATE_FACTOR=%q: want a positive number (S3's 5,500 GET/s and 3,500 PUT/s per prefix are divided by it), or 0 for no rates", v)
	}
	return faultproxy.ScaledRates(f), nil
}

// Deploy starts a fresh deployment of the repository's template for one test.
func Deploy(t *testing.T) *Deployment {
	t.Helper()
	return DeployTemplate(t, requireTemplate(t))
}

// DeployTemplate starts a fresh deployment of tp, a cloud assembly of
// S3ZipStack from LoadTemplate (package_test.go: one synthesized outside the
// repository from the packed construct library).
func DeployTemplate(t *testing.T, tp *Template) *Deployment {
	t.Helper()
	srv := s3test.Start(t)
	d := &Deployment{T: t, Template: tp, S3: srv, Admin: srv.Client(t), tokens: map[string]string{}, Functions: map[string]*LambdaFunction{}}
	var err error
	// SourceSize: the proxy also refuses what S3 refuses and versitygw does not.
	// Rates: S3's request rates, scaled, when S3ZIP_RATE_FACTOR asks.
	rates, err := rateFactor()
	if err != nil {
		t.Fatal(err)
	}
	if d.Faults, err = faultproxy.Start(faultproxy.Config{Target: srv.Endpoint(), Seed: 1, Hold: 5 * time.Second, SourceSize: srv.ObjectSize, Rates: rates}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if refused := d.Faults.StrictRefusals(); len(refused) > 0 {
			t.Errorf("requests S3 refuses (versitygw carried them out): %s", strings.Join(refused, "; "))
		}
		_ = d.Faults.Close()
	})
	pols, err := tp.RolePolicies()
	if err != nil {
		t.Fatal(err)
	}
	d.IAM = &IAM{policies: pols}
	for role := range pols {
		d.tokens["session-"+role] = role
	}
	// Where objects are SSE-KMS encrypted: the imported buckets as marked
	// here, the template's buckets by their default encryption.
	d.kmsKeys = map[string]string{
		sourceBucket + "/" + sourcePrefix:           sourceKey,
		destinationBucket + "/" + destinationPrefix: destinationKey,
		sourceBucket + "/" + extractArchivePrefix:   extractArchiveKey,
		sourceBucket + "/" + extractDestPrefix:      extractDestinationKey,
	}
	for _, id := range tp.Of("AWS::S3::Bucket") {
		if key := tp.BucketKMSKey(id); key != "" {
			d.kmsKeys[tp.Name(id)+"/"] = key
		}
	}
	if d.Machine, err = tp.StateMachine(); err != nil {
		t.Fatal(err)
	}
	d.defFile = filepath.Join(t.TempDir(), "definition.json")
	if err := os.WriteFile(d.defFile, d.Machine.Definition, 0o644); err != nil {
		t.Fatal(err)
	}

	// The recorder: every S3 request of every caller, checked, then forwarded.
	target, _ := url.Parse(d.Faults.URL())
	// versitygw knows one identity and refuses session tokens, so a checked
	// request is signed again (SigV4, same payload hash) with the server's
	// root key and without the token. The payload hash is the client's own:
	// over http the SDK signs the body's SHA-256 (or UNSIGNED-PAYLOAD), which
	// the server still verifies against the bytes.
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }) // as the S3 client signs
	rootCreds := aws.Credentials{AccessKeyID: srv.AccessKey(), SecretAccessKey: srv.SecretKey()}
	forward := &httputil.ReverseProxy{ModifyResponse: d.modifyResponse, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host
		out := pr.Out
		for _, h := range []string{"Authorization", "X-Amz-Security-Token", "X-Amz-Date"} {
			out.Header.Del(h)
		}
		if q := out.URL.Query(); q.Has("X-Amz-Signature") {
			// A presigned URL (a download link): its signature goes too, and
			// the request is signed in headers like any other.
			for _, p := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token"} {
				q.Del(p)
			}
			out.URL.RawQuery = q.Encode()
			out.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		}
		hash := out.Header.Get("X-Amz-Content-Sha256")
		if err := signer.SignHTTP(out.Context(), rootCreds, out, hash, "s3", region, time.Now()); err != nil {
			t.Errorf("re-signing %s %s: %v", out.Method, out.URL, err)
		}
	}}
	d.url = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := r.Header.Get("X-Amz-Security-Token")
		if q := r.URL.Query(); q.Has("X-Amz-Signature") {
			token = q.Get("X-Amz-Security-Token") // a presigned URL acts as its signer
		}
		role, ok := d.tokens[token]
		if !ok {
			role = "unknown caller"
		}
		op := string(faultproxy.Classify(r))
		r = r.WithContext(context.WithValue(r.Context(), callerKey{}, role))
		var body []byte
		if op == string(faultproxy.DeleteObjects) {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if !d.IAM.check(role, op+" "+r.Method+" "+r.URL.RequestURI(), iameval.S3Requests(partition, op, r, body)) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied (the role's policy in the template does not allow this request)</Message></Error>`)
			return
		}
		// S3 then calls KMS as the caller for an SSE-KMS object; a denial there is S3's AccessDenied too.
		if kmsReqs := iameval.KMSRequests(op, r, d.kmsKeyOf); len(kmsReqs) > 0 && !d.IAM.check(role, "KMS for "+op+" "+r.URL.RequestURI(), kmsReqs) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>User is not authorized to use the KMS key (the role's policy in the template does not allow it)</Message></Error>`)
			return
		}
		d.mu.Lock()
		refuse := d.refuse412
		d.mu.Unlock()
		if refuse != nil && refuse(op) {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusPreconditionFailed)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Condition>x-amz-copy-source-If-Match</Condition></Error>`)
			return
		}
		forward.ServeHTTP(w, r)
	}))

	for _, b := range []string{sourceBucket, destinationBucket, inventoryBucket} {
		srv.CreateBucket(t, b)
	}
	for _, id := range tp.Of("AWS::S3::Bucket") {
		srv.CreateBucket(t, tp.Name(id))
	}
	fns, err := tp.Functions()
	if err != nil {
		t.Fatal(err)
	}
	var lfs []*LambdaFunction
	for _, f := range fns {
		lf := &LambdaFunction{Function: f, Token: "session-" + f.Role, ExtraEnv: map[string]string{"S3_ENDPOINT": d.url}}
		lfs = append(lfs, lf)
		d.Functions[filepath.Base(filepath.Dir(f.Bootstrap))] = lf
		if strings.HasPrefix(f.ID, "ExtractWorkflow") {
			continue // the extract workflow's (extract_test.go)
		}
		short := ""
		for _, n := range []string{"Planner", "Reader", "Worker", "Finalizer", "Abort"} {
			if strings.Contains(f.ID, n) {
				short = strings.ToLower(n)
			}
		}
		d.Functions[short] = lf
		d.Work, d.Control = f.Env["WORK_BUCKET"], f.Env["CONTROL_BUCKET"]
	}
	d.Lambdas = NewLambdas(t, lfs, srv.AccessKey(), srv.SecretKey())
	d.smS3 = s3.New(s3.Options{
		Region: region, BaseEndpoint: aws.String(d.url), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey(), srv.SecretKey(), "session-"+d.Machine.Role),
	}, func(o *s3.Options) { o.RetryMaxAttempts = 8 })
	d.api = serve(t, http.HandlerFunc(d.serveAPI))
	t.Cleanup(func() {
		d.IAM.mu.Lock()
		defer d.IAM.mu.Unlock()
		for _, den := range d.IAM.denied {
			t.Errorf("denied by the template's IAM: %s", den)
		}
	})
	return d
}

func serve(t *testing.T, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// serveAPI is what execute.ts calls as the state machine: the Lambda Invoke
// API and the Map Run's S3 side, each checked against the state machine's role.
// newAccountConcurrency is the Lambda concurrency GetAccountSettings answers: a new account's.
const newAccountConcurrency = 10

func (d *Deployment) serveAPI(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if target := r.Header.Get("X-Amz-Target"); strings.HasPrefix(target, "AWSStepFunctions.") {
		d.serveStepFunctions(w, strings.TrimPrefix(target, "AWSStepFunctions."), body)
		return
	}
	role := d.Machine.Role
	switch {
	case strings.HasPrefix(r.URL.Path, "/2015-03-31/functions/") && strings.HasSuffix(r.URL.Path, "/invocations"):
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/2015-03-31/functions/"), "/invocations")
		f := d.Lambdas.Function(name)
		arn := name
		if f != nil && !strings.HasPrefix(name, "arn:") {
			arn = f.Arn
		}
		if !d.IAM.check(role, "Invoke "+name, []iameval.Request{{Action: "lambda:InvokeFunction", Resource: arn}}) {
			w.Header().Set("X-Amzn-ErrorType", "AccessDeniedException")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"Message":"not authorized to perform lambda:InvokeFunction on %s"}`, arn)
			return
		}
		if f == nil {
			w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"Message":"Function not found: %s"}`, name)
			return
		}
		d.mu.Lock()
		fault := d.invokeFault
		d.mu.Unlock()
		if exception := ""; fault != nil {
			if exception = fault(f, body); exception != "" {
				w.Header().Set("X-Amzn-ErrorType", exception)
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprintf(w, `{"Message":"injected: Lambda answered %s"}`, exception)
				return
			}
		}
		res, err := d.Lambdas.Invoke(r.Context(), f, body)
		if err != nil {
			w.Header().Set("X-Amzn-ErrorType", "ServiceException")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"Message":%q}`, err.Error())
			return
		}
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		if res.FunctionError != "" {
			w.Header().Set("X-Amz-Function-Error", res.FunctionError)
		}
		_, _ = w.Write(res.Payload)
	case strings.TrimSuffix(r.URL.Path, "/") == "/2016-08-19/account-settings":
		// Lambda GetAccountSettings, which create --state-machine reads: a new account's concurrency.
		_ = json.NewEncoder(w).Encode(map[string]any{"AccountLimit": map[string]int{
			"ConcurrentExecutions": newAccountConcurrency, "UnreservedConcurrentExecutions": newAccountConcurrency}})
	case r.URL.Path == "/adapter/read-items":
		// A Distributed Map Run starts (and watches) child executions of this state machine.
		childArn := strings.Replace(d.Machine.Arn, ":stateMachine:", ":execution:", 1) + "/maprun:child"
		d.IAM.check(role, "Map Run child executions", []iameval.Request{
			{Action: "states:StartExecution", Resource: d.Machine.Arn},
			{Action: "states:DescribeExecution", Resource: childArn},
		})
		out, err := mapadapter.ReadItems(r.Context(), d.smS3, body)
		reply(w, out, err, "States.ItemReaderFailed")
	case r.URL.Path == "/adapter/write-results":
		var in struct{ Failed []json.RawMessage }
		_ = json.Unmarshal(body, &in)
		if len(in.Failed) > 0 {
			// A failing Map Run stops the children still running.
			childArn := strings.Replace(d.Machine.Arn, ":stateMachine:", ":execution:", 1) + "/maprun:child"
			d.IAM.check(role, "Map Run stops children", []iameval.Request{{Action: "states:StopExecution", Resource: childArn}})
		}
		out, err := mapadapter.WriteResults(r.Context(), d.smS3, body)
		reply(w, out, err, "States.ResultWriterFailed")
	default:
		http.NotFound(w, r)
	}
}

func reply(w http.ResponseWriter, out any, err error, errorType string) {
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(map[string]string{"errorType": errorType, "errorMessage": err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

// Outcome is what execute.ts prints.
type Outcome struct {
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
	Cause  string          `json:"cause"`
	Events []struct {
		Type, State, Child, Error string
		Attempt                   int
		ErrorEquals               []string
	} `json:"events"`
	// Redrive is a failed execution's redrive record (Deployment.Redrive).
	Redrive json.RawMessage `json:"redrive"`
}

// Execute runs one execution of the deployed definition with input.
func (d *Deployment) Execute(name string, input any) *Outcome {
	t := d.T
	t.Helper()
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.run(t.Context(), name, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Redrive redrives the failed execution name from its outcome failed, as
// RedriveExecution does (tests/asl/adapter.ts Redrive).
func (d *Deployment) Redrive(name string, failed *Outcome) *Outcome {
	t := d.T
	t.Helper()
	if failed.Redrive == nil {
		t.Fatalf("execution %s (%s) has no redrive record", name, failed.Status)
	}
	out, err := d.run(t.Context(), name, nil, failed.Redrive)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// run runs one execution with execute.ts (safe from any goroutine).
func (d *Deployment) run(ctx context.Context, name string, input, redrive []byte) (*Outcome, error) {
	timeout := d.ExecutionTimeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--import", "tsx", filepath.Join("tests", "deployed", "execute.ts"))
	cmd.Dir = repo
	// A file, not the environment: one variable holds at most 128 KiB on
	// Linux, and inputs over Step Functions' 256 KiB are tested too.
	inputFile, err := os.CreateTemp("", "s3zip-deployed-input-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(inputFile.Name())
	if _, err := inputFile.Write(input); err != nil {
		return nil, errors.Join(err, inputFile.Close())
	}
	if err := inputFile.Close(); err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), "DEPLOYED_URL="+d.api, "DEPLOYED_DEFINITION="+d.defFile, "DEPLOYED_INPUT_FILE="+inputFile.Name(), "DEPLOYED_EXECUTION_NAME="+name)
	if redrive != nil {
		redriveFile := inputFile.Name() + ".redrive"
		if err := os.WriteFile(redriveFile, redrive, 0o600); err != nil {
			return nil, err
		}
		defer os.Remove(redriveFile)
		cmd.Env = append(cmd.Env, "DEPLOYED_REDRIVE_FILE="+redriveFile)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("node execute.ts: %v\nstderr:\n%s", err, stderr.String())
	}
	var out Outcome
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("execute.ts output: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	summaryMu.Lock()
	summary.executions++
	summaryMu.Unlock()
	d.T.Logf("execution %s: %s %s %.300s", name, out.Status, out.Error, out.Cause)
	return &out, nil
}

// StartFromEvent is EventBridge: the event goes through each rule's pattern;
// a matching rule's input transformer builds the input, and the rule's role
// must be allowed states:StartExecution on the target. It returns the
// outcomes of the executions started (none when no rule matched).
func (d *Deployment) StartFromEvent(name string, event map[string]any) []*Outcome {
	t := d.T
	rules, err := d.Template.Rules()
	if err != nil {
		t.Fatal(err)
	}
	var outs []*Outcome
	for _, r := range rules {
		if !MatchPattern(r.Pattern, event) {
			continue
		}
		if !d.IAM.check(r.TargetRole, "EventBridge rule "+r.ID+" StartExecution", []iameval.Request{{Action: "states:StartExecution", Resource: r.TargetArn}}) {
			continue
		}
		if r.TargetArn != d.Machine.Arn {
			t.Fatalf("rule %s targets %s, not the state machine %s", r.ID, r.TargetArn, d.Machine.Arn)
		}
		input, err := TransformInput(r.InputPathsMap, r.InputTemplate, event)
		if err != nil {
			t.Fatalf("rule %s input transformer: %v", r.ID, err)
		}
		var v any
		if err := json.Unmarshal([]byte(input), &v); err != nil {
			t.Fatalf("rule %s: input %s is not JSON: %v", r.ID, input, err)
		}
		outs = append(outs, d.Execute(name, v))
	}
	return outs
}
