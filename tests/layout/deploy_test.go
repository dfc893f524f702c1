package layout_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/manifest"
	"github.com/s3zip/s3zip/internal/stepfn"
	"github.com/s3zip/s3zip/plan"
)

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docs/deploy.md holds what a deployment needs beyond the README's two
// commands: the bootstrap before, the limits a plan meets (as the code
// has them), what cdk destroy keeps (as the constructs' default removal
// policy has it) and the TypeScript toolchain package.json tests with.
func TestDeployDocSaysWhatADeploymentNeeds(t *testing.T) {
	doc := readDoc(t, "docs/deploy.md")
	want := []string{
		"npx cdk bootstrap", "npx cdk destroy",
		// the limits, from the constants that enforce them
		grouped(plan.MaxParts) + ", each " + humanSize(plan.MinPartSize) + " to " + humanSize(plan.MaxPartSize),
		fmt.Sprintf("%.1f TiB", float64(plan.MaxArchiveSize)/(1<<40)),
		grouped(plan.MaxArchives) + " archives",
		grouped(plan.MaxEntries),
		humanSize(create.MaxRequestBytes), humanSize(stepfn.MaxPayloadBytes), humanSize(manifest.MaxLineBytes),
		grouped(plan.MaxJobBytes) + " bytes",
		// what destroy keeps
		"work bucket", "control bucket", "access-log bucket", "/aws/vendedlogs/states/S3ZipStack-Archive",
	}
	// The default removal policy the doc describes is the constructs'.
	mw := readDoc(t, "infra/lib/map-workflow.ts")
	if !strings.Contains(mw, "props.removalPolicy ?? RemovalPolicy.RETAIN") {
		t.Errorf("infra/lib/map-workflow.ts no longer defaults removalPolicy to RETAIN: say in docs/deploy.md what cdk destroy keeps now")
	}
	want = append(want, "`removalPolicy: RemovalPolicy.RETAIN`")
	// The toolchain package.json tests with.
	var pkg struct {
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal([]byte(readDoc(t, "package.json")), &pkg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"typescript", "tsx"} {
		v := pkg.DevDependencies[name]
		if v == "" {
			t.Fatalf("package.json has no devDependency %s", name)
		}
		want = append(want, name+"@"+strings.TrimLeft(v, "^~"))
	}
	for _, w := range want {
		if !strings.Contains(doc, w) {
			t.Errorf("docs/deploy.md does not say %q", w)
		}
	}
}

// Where a request is dropped into the control bucket, the README and
// docs/deploy.md say what the dropper needs: s3:PutObject on requests/*,
// and kms:GenerateDataKey when the buckets have a KMS key.
func TestControlBucketDropSaysItsPermissions(t *testing.T) {
	for doc, marker := range map[string]string{"README.md": "**drop it**", "docs/deploy.md": "by dropping the same JSON"} {
		text := readDoc(t, doc)
		i := strings.Index(text, marker)
		if i < 0 {
			t.Errorf("%s no longer says %q: find where it documents the control-bucket drop", doc, marker)
			continue
		}
		para, _, _ := strings.Cut(text[i:], "\n\n")
		for _, w := range []string{"s3:PutObject", "requests/*", "kms:GenerateDataKey"} {
			if !strings.Contains(para, w) {
				t.Errorf("%s's control-bucket drop does not name %s:\n%s", doc, w, para)
			}
		}
	}
}

// grouped is n with thousands separated by commas: 10,000.
func grouped[N int | int64](n N) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// humanSize is a whole number of KiB, MiB or GiB: 5 MiB.
func humanSize[N int | int64](n N) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if int64(n)%u.size == 0 {
			return fmt.Sprintf("%d %s", int64(n)/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
