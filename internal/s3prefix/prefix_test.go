package s3prefix_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3prefix"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// named marks an error as named by the caller, as a workflow's ErrorNamer
// would give it its type.
func named(op, bucket, key string, err error) error {
	return fmt.Errorf("named %s s3://%s/%s: %w", op, bucket, key, err)
}

// TestUnder: the keys under a prefix (not a sibling's that shares its
// first letters), its uploads, all of its objects deleted and nothing else.
func TestUnder(t *testing.T) {
	srv := s3test.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	srv.CreateBucket(t, "bkt")
	for _, k := range []string{"run/1", "run/2", "run/deep/3", "runner/4"} {
		srv.PutObject(t, "bkt", k, []byte(k))
	}
	for _, k := range []string{"run/up1", "run/up2", "other/up3"} {
		if _, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	run := s3prefix.Under{Bucket: "bkt", Prefix: "run/", Named: named}

	keys, err := run.Keys(ctx, c)
	if want := []string{"run/1", "run/2", "run/deep/3"}; err != nil || !slices.Equal(keys, want) {
		t.Errorf("Keys = %q, %v; want %q", keys, err, want)
	}
	var uploads []string
	err = run.EachUpload(ctx, c, func(u types.MultipartUpload) error {
		uploads = append(uploads, aws.ToString(u.Key))
		return nil
	})
	slices.Sort(uploads)
	if want := []string{"run/up1", "run/up2"}; err != nil || !slices.Equal(uploads, want) {
		t.Errorf("EachUpload saw %q, %v; want %q", uploads, err, want)
	}
	if n, err := run.Delete(ctx, c); n != 3 || err != nil {
		t.Errorf("Delete = %d, %v; want 3 deleted", n, err)
	}
	rest, err := s3prefix.Under{Bucket: "bkt", Named: named}.Keys(ctx, c)
	if want := []string{"runner/4"}; err != nil || !slices.Equal(rest, want) {
		t.Errorf("after Delete the bucket holds %q, %v; want %q", rest, err, want)
	}
}

func TestUnderRefusals(t *testing.T) {
	srv := s3test.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	srv.CreateBucket(t, "bkt")
	srv.PutObject(t, "bkt", "kept", []byte("x"))
	for _, prefix := range []string{"", "/"} {
		if n, err := (s3prefix.Under{Bucket: "bkt", Prefix: prefix, Named: named}).Delete(ctx, c); n != 0 || !errors.Is(err, s3prefix.ErrWholeBucket) {
			t.Errorf("Delete under %q = %d, %v; want a refusal (ErrWholeBucket)", prefix, n, err)
		}
	}
	if keys, _ := (s3prefix.Under{Bucket: "bkt", Named: named}).Keys(ctx, c); !slices.Equal(keys, []string{"kept"}) {
		t.Errorf("the bucket holds %q after the refusals, want kept", keys)
	}
	// S3's failures reach the caller named by its ErrorNamer.
	missing := s3prefix.Under{Bucket: "missing", Prefix: "p/", Named: named}
	_, err := missing.Keys(ctx, c)
	if err == nil || !strings.HasPrefix(err.Error(), "named ListObjectsV2 s3://missing/p/") {
		t.Errorf("Keys in a missing bucket: %v, want the failure named by the caller", err)
	}
	err = missing.EachUpload(ctx, c, func(types.MultipartUpload) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), "named ListMultipartUploads s3://missing/p/") {
		t.Errorf("EachUpload in a missing bucket: %v, want the failure named by the caller", err)
	}
}

// refusingDeleter lists a page and answers DeleteObjects with a per-key error.
type refusingDeleter struct{}

func (refusingDeleter) ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return &s3.ListObjectsV2Output{Contents: []types.Object{{Key: aws.String("p/a")}, {Key: aws.String("p/b")}}}, nil
}

func (refusingDeleter) DeleteObjects(_ context.Context, in *s3.DeleteObjectsInput, _ ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error) {
	return &s3.DeleteObjectsOutput{Errors: []types.Error{{Key: in.Delete.Objects[1].Key, Code: aws.String("AccessDenied"), Message: aws.String("no")}}}, nil
}

func TestUnderDeleteReportsRefusedKeys(t *testing.T) {
	n, err := s3prefix.Under{Bucket: "bkt", Prefix: "p/", Named: named}.Delete(context.Background(), refusingDeleter{})
	if n != 0 || err == nil || !strings.Contains(err.Error(), "s3://bkt/p/b: 1 failed, first AccessDenied") {
		t.Errorf("Delete = %d, %v; want the refused key reported and none counted", n, err)
	}
}
