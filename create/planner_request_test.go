package create

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3metrics"
)

const (
	grantedKey = "arn:aws:kms:eu-west-1:123456789012:key/1111aaaa-0000-0000-0000-000000000001"
	otherKey   = "arn:aws:kms:eu-west-1:123456789012:key/2222bbbb-0000-0000-0000-000000000002"
)

// deployedConfig is the configuration the deployed planner reads, with the
// KMS key the CDK granted ("" for none).
func deployedConfig(t *testing.T, key string) Config {
	t.Helper()
	env := map[string]string{"WORK_BUCKET": "work", "DESTINATION_KMS_KEY_ARN": key, "DEFAULT_MAX_CONCURRENCY": "4", "PARTS_PER_BATCH": "2"}
	cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A request naming an SSE-KMS key the deployment's roles may not use would
// fail with AccessDenied at the archive's first write on AWS; the planner
// refuses it before writing anything, naming the key and the setting that
// grants it.
func TestDeployedPlannerRefusesUngrantedKMSKey(t *testing.T) {
	e := newEnv(t, []object{{key: "p/a.txt", size: 10}})
	for _, tc := range []struct{ name, granted, may string }{
		{"another-key", grantedKey, "only " + grantedKey},
		{"no-key-granted", "", "no customer-managed key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counter := s3metrics.New()
			r := &Runner{S3: s3.New(e.s3.Options(), counter.Option()), Config: deployedConfig(t, tc.granted)}
			req := request("duo", "p/", "kms-"+tc.name+".zip", `,"sse":{"type":"aws:kms","kmsKeyId":"`+otherKey+`"}`)
			_, err := r.Run(context.Background(), req, "kms-"+tc.name)
			var refused *failure.RequestError
			if !errors.As(err, &refused) {
				t.Fatalf("error %v, want a *RequestError", err)
			}
			for _, want := range []string{otherKey, "destinationKmsKeyArn", "DESTINATION_KMS_KEY_ARN", tc.may} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			snap := counter.Snapshot()
			for _, op := range []string{"PutObject", "CreateMultipartUpload", "UploadPart", "UploadPartCopy"} {
				if snap[op] > 0 {
					t.Errorf("%d %s before the refusal (requests %v)", snap[op], op, snap)
				}
			}
		})
	}
	if left := e.srv.Leftovers(t, "work", "dst"); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// What needs no grant, or is the granted key, passes; a local run (no
// deployment, the caller's own rights) is never refused for its key.
func TestKMSKeyGrantedAccepts(t *testing.T) {
	deployed := deployedConfig(t, grantedKey)
	for _, tc := range []struct {
		name string
		cfg  Config
		sse  *SSE
	}{
		{"no-sse", deployed, nil},
		{"sse-s3", deployed, &SSE{Type: "AES256"}},
		{"aws-managed-key", deployed, &SSE{Type: "aws:kms"}},
		{"granted-arn", deployed, &SSE{Type: "aws:kms", KMSKeyID: grantedKey}},
		{"granted-key-id", deployed, &SSE{Type: "aws:kms", KMSKeyID: "1111aaaa-0000-0000-0000-000000000001"}},
		{"local-run", Config{WorkBucket: "work"}, &SSE{Type: "aws:kms", KMSKeyID: otherKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if msg := checkKMSKeyGranted(tc.cfg, tc.sse); msg != "" {
				t.Errorf("refused: %s", msg)
			}
		})
	}
	for _, id := range []string{otherKey, "2222bbbb-0000-0000-0000-000000000002", "alias/archives", "0000-0000-0000-000000000001"} {
		if checkKMSKeyGranted(deployed, &SSE{Type: "aws:kms", KMSKeyID: id}) == "" {
			t.Errorf("kmsKeyId %q accepted; only %s is granted", id, grantedKey)
		}
	}
}
