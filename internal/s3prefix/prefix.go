// Package s3prefix is what lies under an S3 prefix and which prefixes a
// setting allows. Under a prefix: its keys and objects listed with many
// requests in flight (Under.List, ListPages, which cut the keyspace as
// they learn it), its objects deleted, its multipart uploads (Under); the
// workflows keep their work objects under a prefix per execution and
// clean it up with these. Allowed: the "bucket" or "bucket/prefix"
// patterns a deployment's settings give (ParsePatterns, Allowed), and a
// name made safe as one segment of a key (KeySegment).
package s3prefix

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// ErrorNamer names a failed S3 call (op on s3://bucket/key) the way the
// caller's state machine tells failures apart, typically a TransientError
// for one a retry can help. Each workflow gives its own.
type ErrorNamer func(op, bucket, key string, err error) error

// ObjectLister lists objects.
type ObjectLister interface {
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// PrefixDeleter lists and deletes objects.
type PrefixDeleter interface {
	ObjectLister
	DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

// UploadLister lists multipart uploads.
type UploadLister interface {
	ListMultipartUploads(context.Context, *s3.ListMultipartUploadsInput, ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
}

// ErrWholeBucket is Delete's refusal of an empty prefix.
var ErrWholeBucket = errors.New("refusing to delete a whole bucket: the prefix is empty")

// Under is a prefix of a bucket, with the caller's naming of S3's failures.
type Under struct {
	Bucket, Prefix string
	Named          ErrorNamer
}

func (u Under) String() string { return "s3://" + u.Bucket + "/" + u.Prefix }

// EachPage calls fn with each page of the objects under the prefix, in key
// order, one request after another.
func (u Under) EachPage(ctx context.Context, c ObjectLister, fn func([]types.Object) error) error {
	return u.List(ctx, c, ListOptions{Concurrency: 1}, fn)
}

// Keys returns the keys under the prefix, in key order.
func (u Under) Keys(ctx context.Context, c ObjectLister) ([]string, error) {
	var keys []string
	err := u.EachPage(ctx, c, func(objs []types.Object) error {
		for _, o := range objs {
			keys = append(keys, aws.ToString(o.Key))
		}
		return nil
	})
	return keys, err
}

// Delete deletes every object under the prefix, a page (at most 1,000,
// DeleteObjects' limit) at a time, and says how many it deleted. It
// refuses an empty prefix (or "/"): that would be the whole bucket.
func (u Under) Delete(ctx context.Context, c PrefixDeleter) (int, error) {
	if u.Prefix == "" || u.Prefix == "/" {
		return 0, fmt.Errorf("%s: %w", u, ErrWholeBucket)
	}
	deleted := 0
	err := u.EachPage(ctx, c, func(objs []types.Object) error {
		if len(objs) == 0 {
			return nil
		}
		ids := make([]types.ObjectIdentifier, len(objs))
		for i, o := range objs {
			ids[i] = types.ObjectIdentifier{Key: o.Key}
		}
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &u.Bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return u.Named("DeleteObjects", u.Bucket, u.Prefix, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("DeleteObjects s3://%s/%s: %d failed, first %s: %s", u.Bucket, aws.ToString(e.Key), len(out.Errors), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		deleted += len(ids)
		return nil
	})
	return deleted, err
}

// EachUpload calls fn with each multipart upload under the prefix.
func (u Under) EachUpload(ctx context.Context, c UploadLister, fn func(types.MultipartUpload) error) error {
	in := &s3.ListMultipartUploadsInput{Bucket: &u.Bucket, Prefix: &u.Prefix}
	for {
		out, err := c.ListMultipartUploads(ctx, in)
		if err != nil {
			return u.Named("ListMultipartUploads", u.Bucket, u.Prefix, err)
		}
		for _, up := range out.Uploads {
			if err := fn(up); err != nil {
				return err
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}
