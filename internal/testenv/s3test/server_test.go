package s3test

import (
	"bytes"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestStartPutGet(t *testing.T) {
	srv := Start(t)
	srv.CreateBucket(t, "src")
	cases := []struct {
		name     string
		checksum Checksum
	}{
		{"none", ChecksumNone},
		{"crc32", ChecksumCRC32},
		{"sha256", ChecksumSHA256},
	}
	c := srv.Client(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte("hello " + tc.name)
			srv.PutObject(t, "src", tc.name, body, WithChecksum(tc.checksum))
			if got := srv.GetObject(t, "src", tc.name); !bytes.Equal(got, body) {
				t.Fatalf("get = %q, want %q", got, body)
			}
			head, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{
				Bucket: aws.String("src"), Key: aws.String(tc.name), ChecksumMode: types.ChecksumModeEnabled})
			if err != nil {
				t.Fatal(err)
			}
			gotCRC, gotSHA := head.ChecksumCRC32 != nil, head.ChecksumSHA256 != nil
			if gotCRC != (tc.checksum == ChecksumCRC32) || gotSHA != (tc.checksum == ChecksumSHA256) {
				t.Errorf("head checksums crc32=%v sha256=%v, want %q", aws.ToString(head.ChecksumCRC32), aws.ToString(head.ChecksumSHA256), tc.checksum)
			}
		})
	}
}

func TestPutMultipartObject(t *testing.T) {
	srv := Start(t)
	srv.CreateBucket(t, "src")
	p1 := bytes.Repeat([]byte{'a'}, MinPartSize)
	p2 := []byte("tail")
	for _, ck := range []Checksum{ChecksumNone, ChecksumCRC32} {
		key := "mp-" + string(ck)
		srv.PutMultipartObject(t, "src", key, [][]byte{p1, p2}, WithChecksum(ck))
		got := srv.GetObject(t, "src", key)
		if !bytes.Equal(got, append(append([]byte{}, p1...), p2...)) {
			t.Fatalf("%s: content differs (len %d)", key, len(got))
		}
	}
}

func TestFindBinaryEnv(t *testing.T) {
	t.Setenv(EnvBinary, "/nonexistent/versitygw")
	if _, err := FindBinary(); err == nil {
		t.Fatal("FindBinary with a bad $S3ZIP_VERSITYGW: want error")
	}
}
