package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// create --keep-metadata puts the objects' metadata in the archive, and
// extract gives it back: the flags as typed, end to end here.
func TestCreateKeepMetadataThenExtract(t *testing.T) {
	srv := cliServer(t)
	c := srv.Client(t)
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("cli"), Key: aws.String("kept/page.html"),
		Body: strings.NewReader("<p>"), ContentType: aws.String("text/html; charset=windows-1252"), CacheControl: aws.String("no-store"),
		Metadata: map[string]string{"author": "ops"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := run(ctx, []string{"create", "--source", "s3://cli/kept/", "--dest", "s3://cli/kept.zip", "--keep-metadata", "--endpoint", srv.Endpoint()}, io.Discard); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"extract", "s3://cli/kept.zip", "s3://cli/back/", "--endpoint", srv.Endpoint()}, &out); err != nil {
		t.Fatal(err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("cli"), Key: aws.String("back/page.html")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(h.ContentType) != "text/html; charset=windows-1252" || aws.ToString(h.CacheControl) != "no-store" || h.Metadata["author"] != "ops" {
		t.Errorf("back/page.html: Content-Type %q, Cache-Control %q, metadata %v; want the source's", aws.ToString(h.ContentType), aws.ToString(h.CacheControl), h.Metadata)
	}
	if !strings.Contains(out.String(), "types       1 text/html; charset=windows-1252\n") {
		t.Errorf("summary:\n%s", out.String())
	}
}
