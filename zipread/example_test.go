package zipread_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/zipread"
)

// object is one S3 object served from memory: Open and Verify need only
// HeadObject and ranged GetObject, which an *s3.Client has.
type object []byte

func (o object) HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return &s3.HeadObjectOutput{ContentLength: aws.Int64(int64(len(o))), ETag: aws.String(`"example"`)}, nil
}

func (o object) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	var from, to int64
	if _, err := fmt.Sscanf(aws.ToString(in.Range), "bytes=%d-%d", &from, &to); err != nil {
		return nil, err
	}
	to = min(to, int64(len(o))-1)
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(o[from : to+1])), ContentLength: aws.Int64(to - from + 1)}, nil
}

// Open reads an archive's end records and central directory with ranged
// GETs, never the whole object; Verify then checks every record and every
// entry's CRC-32 against its bytes.
func ExampleOpen() {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, name := range []string{"logs/a.txt", "logs/b.txt"} {
		f, _ := w.Create(name) // DEFLATE
		f.Write([]byte(strings.Repeat(name+"\n", 1000)))
	}
	w.Close()

	ctx := context.Background()
	a, err := zipread.Open(ctx, object(buf.Bytes()), "bucket", "exports/logs.zip")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range a.Entries {
		fmt.Printf("%s: %d bytes, %d compressed, CRC-32 %08x\n", e.Name, e.UncompressedSize, e.CompressedSize, e.CRC32)
	}
	report, err := a.Verify(ctx, zipread.VerifyOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d entries, %d decompressed to check, %d problems\n", a, report.Entries, report.Deflated, len(report.Problems))
	// Output:
	// logs/a.txt: 11000 bytes, 58 compressed, CRC-32 c19f8c94
	// logs/b.txt: 11000 bytes, 58 compressed, CRC-32 50672ff0
	// s3://bucket/exports/logs.zip: 2 entries, 2 decompressed to check, 0 problems
}
