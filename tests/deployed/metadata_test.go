package deployed_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
)

// `keepMetadata` as deployed, both ways: a listed prefix's objects are
// looked up by the reader function (a pin round: HeadObject, s3:GetObject
// on the sources, no new grant) and their Content-Type, Cache-Control and
// user metadata recorded; the planner asks nothing of a source object. The
// archive, extracted by the deployed extract workflow, gives every object
// back with that metadata (PutObject and CreateMultipartUpload carry the
// headers: no new grant either). No call is denied (the deployment fails
// the test on one).
func TestDeployedKeepMetadata(t *testing.T) {
	d := Deploy(t)
	defer d.logsOnFailure()
	type kept struct {
		typ, cache string
		user       map[string]string
	}
	objects := map[string]kept{
		"index.html":   {typ: "text/html; charset=utf-8", cache: "max-age=60", user: map[string]string{"mtime": "1614523456.5"}},
		"tool.sh":      {typ: "text/x-shellscript", user: map[string]string{"mode": "33261", "uid": "1000"}},
		"img/big.webp": {typ: "image/webp", cache: "public, max-age=86400"},
	}
	want := map[string][]byte{}
	for name, o := range objects {
		body := bytes.Repeat([]byte(name), 100)
		if name == "img/big.webp" {
			body = bytes.Repeat([]byte("w"), 6*mib) // extract copies it: the multipart path
		}
		in := &s3.PutObjectInput{Bucket: aws.String(sourceBucket), Key: aws.String(sourcePrefix + "meta/" + name), Body: bytes.NewReader(body),
			ContentType: aws.String(o.typ), Metadata: o.user}
		if o.cache != "" {
			in.CacheControl = aws.String(o.cache)
		}
		if _, err := d.Admin.PutObject(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		want[sourcePrefix+name] = body
	}
	req := map[string]any{
		"source":      map[string]any{"bucket": sourceBucket, "prefix": sourcePrefix + "meta/"},
		"destination": map[string]any{"bucket": destinationBucket, "key": destinationPrefix + "kept.zip"},
		"options":     map[string]any{"strategy": "stream", "keepMetadata": true},
	}
	out := d.Execute("keep-metadata-1", req)
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %.2000s", out.Status, out.Error, out.Cause)
	}
	if got := topLevelStates(out); !strings.HasPrefix(got, "PlanArchive,HasWorkerParts,ReadEntries,PlanLayout,") {
		t.Errorf("states entered: %s; want a pin round first", got)
	}
	heads := 0
	for _, c := range d.IAM.Calls(d.Functions["reader"].Role) {
		if strings.HasPrefix(c.What, "HeadObject") && strings.Contains(c.What, sourcePrefix+"meta/") {
			heads++
		}
	}
	if heads < len(objects) {
		t.Errorf("the reader made %d HeadObjects of the sources, want one per object (%d)", heads, len(objects))
	}
	for _, c := range d.IAM.Calls(d.Functions["planner"].Role) {
		if strings.Contains(c.What, "/"+sourceBucket+"/") {
			t.Errorf("the planner asked about a source object: %s", c.What)
		}
	}
	d.checkArchive(destinationPrefix+"kept.zip", want)
	d.assertClean()

	// Extracted as deployed: the archive where the extract workflow may read.
	useExtract(d)
	d.S3.PutObject(t, sourceBucket, extractArchivePrefix+"kept.zip", d.S3.GetObject(t, destinationBucket, destinationPrefix+"kept.zip"))
	const prefix = extractDestPrefix + "kept/"
	xout := d.Execute("extract-kept", map[string]any{
		"archive":     map[string]any{"bucket": sourceBucket, "key": extractArchivePrefix + "kept.zip"},
		"destination": map[string]any{"bucket": sourceBucket, "prefix": prefix},
	})
	if xout.Status != "SUCCEEDED" {
		t.Fatalf("extract %s: %s: %.2000s", xout.Status, xout.Error, xout.Cause)
	}
	var summary extract.Summary
	if err := json.Unmarshal(xout.Output, &summary); err != nil {
		t.Fatal(err)
	}
	for name, o := range objects {
		h, err := d.Admin.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(sourceBucket), Key: aws.String(prefix + name)})
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]string{aws.ToString(h.ContentType), aws.ToString(h.CacheControl)}; got != [2]string{o.typ, o.cache} {
			t.Errorf("%s: Content-Type and Cache-Control %q, want %q", name, got, [2]string{o.typ, o.cache})
		}
		user := maps.Clone(h.Metadata)
		delete(user, extract.ExecutionMetadata)
		if !maps.Equal(user, o.user) {
			t.Errorf("%s: user metadata %v, want exactly %v", name, user, o.user)
		}
		if summary.ContentTypes[o.typ] != 1 {
			t.Errorf("the output counts %d objects of %s, want 1 (%v)", summary.ContentTypes[o.typ], o.typ, summary.ContentTypes)
		}
	}
}
