package s3doc_test

import (
	"context"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3doc"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// A document put is stored with its CRC-32, read back whole or from an
// offset, and one over the limit is refused by name.
func TestPutOpenReadAll(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "work")
	c := srv.Client(t)
	ctx := context.Background()
	if err := s3doc.PutJSON(ctx, c, "work", "run/job.json", map[string]int{"parts": 12}); err != nil {
		t.Fatal(err)
	}
	doc := []byte(`{"parts":12}`)
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("work"), Key: aws.String("run/job.json"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := aws.ToString(h.ChecksumCRC32), s3part.CRCBase64(crc32.ChecksumIEEE(doc)); got != want {
		t.Errorf("stored CRC-32 %q, want %q: the PUT did not carry it", got, want)
	}
	body, err := s3doc.Open(ctx, c, "work", "run/job.json", 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s3doc.ReadAll(body, "work", "run/job.json", int64(len(doc)))
	body.Close()
	if err != nil || string(got) != string(doc) {
		t.Errorf("read back %q, %v; want %q", got, err, doc)
	}
	body, err = s3doc.Open(ctx, c, "work", "run/job.json", 2)
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(body)
	body.Close()
	if string(rest) != string(doc[2:]) {
		t.Errorf("from byte 2: %q, want %q", rest, doc[2:])
	}
	body, _ = s3doc.Open(ctx, c, "work", "run/job.json", 0)
	defer body.Close()
	_, err = s3doc.ReadAll(body, "work", "run/job.json", 5)
	var tooLarge *s3doc.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 5 || err.Error() != "s3://work/run/job.json is over 5 bytes" {
		t.Errorf("over the limit: %v, want a TooLargeError naming the object and the limit", err)
	}
}
