package s3test

import (
	"bytes"
	"fmt"
	"strings"
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

// PutEach stores every object object(i) makes, each with its own checksum
// kind, and stops at the first error.
func TestPutEach(t *testing.T) {
	srv := Start(t)
	srv.CreateBucket(t, "src")
	kinds := []Checksum{ChecksumNone, ChecksumCRC32, ChecksumCRC32C, ChecksumSHA1, ChecksumSHA256, ChecksumCRC64NVME}
	const n = 60
	err := srv.PutEach(t.Context(), "src", n, 8, func(i int) (string, []byte, Checksum) {
		return fmt.Sprintf("o/%02d", i), Bytes(uint64(i), i*10), kinds[i%len(kinds)]
	})
	if err != nil {
		t.Fatal(err)
	}
	c := srv.Client(t)
	for i := range n {
		key := fmt.Sprintf("o/%02d", i)
		if got := srv.GetObject(t, "src", key); !bytes.Equal(got, Bytes(uint64(i), i*10)) {
			t.Fatalf("%s: %d bytes, not what was put", key, len(got))
		}
		head, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("src"), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		stored := map[Checksum]bool{ChecksumCRC32: head.ChecksumCRC32 != nil, ChecksumCRC32C: head.ChecksumCRC32C != nil,
			ChecksumSHA1: head.ChecksumSHA1 != nil, ChecksumSHA256: head.ChecksumSHA256 != nil, ChecksumCRC64NVME: head.ChecksumCRC64NVME != nil}
		want := kinds[i%len(kinds)]
		if want == ChecksumNone {
			// S3 (since 2025) and versitygw store a CRC64NVME of an object put without a checksum.
			want = ChecksumCRC64NVME
		}
		for k, has := range stored {
			if has != (k == want) {
				t.Errorf("%s: stored %s = %v, want only %q", key, k, has, want)
			}
		}
	}
	err = srv.PutEach(t.Context(), "no-such-bucket", 3, 2, func(i int) (string, []byte, Checksum) { return "k", nil, ChecksumNone })
	if err == nil || !strings.Contains(err.Error(), "no-such-bucket") {
		t.Errorf("PutEach into a missing bucket: %v, want an error naming it", err)
	}
}
