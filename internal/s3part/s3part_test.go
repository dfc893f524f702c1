package s3part

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestCRCRoundTrip(t *testing.T) {
	for _, crc := range []uint32{0, 1, 0xcbf43926, 0xffffffff} {
		if got, ok := DecodeCRC(CRCBase64(crc)); !ok || got != crc {
			t.Errorf("DecodeCRC(CRCBase64(%08x)) = %08x %v", crc, got, ok)
		}
	}
	if got := CRCBase64(0xcbf43926); got != "y/Q5Jg==" {
		t.Errorf("CRCBase64(cbf43926) = %q, want y/Q5Jg== (S3's spelling)", got)
	}
	for _, v := range []string{"", "y/Q5Jg==-3", "not base64", "AAAAAAA="} {
		if _, ok := DecodeCRC(v); ok {
			t.Errorf("DecodeCRC(%q) ok, want not a CRC-32", v)
		}
	}
}

func TestCopyPart(t *testing.T) {
	dst := Part{Bucket: "out", Key: "a.zip", UploadID: "u1", Number: 7}
	big := int64(MinPartSize) + 1
	for _, c := range []struct {
		name                  string
		src                   Pinned
		from, to              int64
		wantSource, wantRange string
		wantIfMatch           string
	}{
		{"range-of-version", Pinned{Bucket: "in", Key: "a b", VersionID: "v1", Size: big}, 1, 11,
			"in/a%20b?versionId=v1", "bytes=1-10", ""},
		{"etag-pinned-whole", Pinned{Bucket: "in", Key: "k", ETag: `"e"`, Size: big}, 0, big,
			"in/k", "", `"e"`},
		{"last-byte", Pinned{Bucket: "in", Key: "k", ETag: `"e"`, Size: big}, big - 1, big,
			"in/k", fmt.Sprintf("bytes=%d-%d", big-1, big-1), `"e"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := CopyPart(dst, c.src, c.from, c.to)
			if aws.ToString(in.Bucket) != "out" || aws.ToString(in.Key) != "a.zip" || aws.ToString(in.UploadId) != "u1" || aws.ToInt32(in.PartNumber) != 7 {
				t.Errorf("destination %v %v %v %v, want out a.zip u1 7", in.Bucket, in.Key, in.UploadId, in.PartNumber)
			}
			if got := aws.ToString(in.CopySource); got != c.wantSource {
				t.Errorf("CopySource %q, want %q", got, c.wantSource)
			}
			if got := aws.ToString(in.CopySourceRange); got != c.wantRange {
				t.Errorf("CopySourceRange %q, want %q", got, c.wantRange)
			}
			if got := aws.ToString(in.CopySourceIfMatch); got != c.wantIfMatch {
				t.Errorf("CopySourceIfMatch %q, want %q", got, c.wantIfMatch)
			}
		})
	}
}
