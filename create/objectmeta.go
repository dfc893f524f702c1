package create

import (
	"errors"
	"fmt"
	"time"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/objmeta"
	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

// MaxKeptMetadataBytes bounds an object's metadata extra field and equals
// objmeta.MaxFieldBytes. It sizes KeptLookupsPerBatch, the pin round's
// batches when metadata is kept. An object over it, which only a server more
// generous than S3 can hold, fails the run, naming it.
const MaxKeptMetadataBytes = objmeta.MaxFieldBytes

// MaxKeptMetadataTotal bounds the metadata a run keeps, all objects
// together. The planner holds every entry's field beside the entries until
// the plan is written, some 1.2 GiB of its 2,048 MB at a million entries, as
// docs/performance.md, "Planning at scale", says. So a run past it is
// refused rather than run out of memory.
const MaxKeptMetadataTotal = 256 << 20

// KeptLookupsPerBatch is the most pin lookups one reader invocation answers
// when the request keeps metadata. Each answer carries its field in base64,
// at most MaxKeptMetadataBytes·4/3, about 10.7 KiB, and some 300 bytes more.
// A batch's result must stay under Step Functions' 256 KiB, and 20 × 11 KiB
// is 220 KiB.
const KeptLookupsPerBatch = 20

// headMeta is what an entry records of its object beyond the bytes, from
// the HeadObject that looked it up. It holds the Unix mode and modification
// time rclone and s3fs keep in user metadata, read by objmeta, and, when the
// request keeps metadata, the zipformat.Metadata extra field.
type headMeta struct {
	Mode    uint32
	ModTime time.Time // zero when the metadata gives none and Last-Modified stands
	Field   plan.MetaField
}

// metaOf reads what h says of src's metadata. An object whose metadata does
// not fit an extra field cannot be kept, and is an error naming it.
func metaOf(h *s3.HeadObjectOutput, src plan.Source, keep bool) (headMeta, error) {
	var m headMeta
	m.Mode, _ = objmeta.Mode(h.Metadata)
	m.ModTime, _ = objmeta.ModTime(h.Metadata)
	if !keep {
		return m, nil
	}
	kept := &zipformat.Metadata{ContentType: aws.ToString(h.ContentType), ContentEncoding: aws.ToString(h.ContentEncoding),
		CacheControl: aws.ToString(h.CacheControl), User: h.Metadata}
	if len(kept.User) == 0 {
		kept.User = nil
	}
	field, err := zipformat.AppendMetadataExtra(nil, kept)
	var tl *zipformat.MetadataTooLongError
	if errors.As(err, &tl) || err == nil && len(field) > MaxKeptMetadataBytes {
		return m, &failure.RequestError{Problems: []string{fmt.Sprintf("s3://%s/%s: its metadata is over the %d bytes s3zip keeps of an object's (S3's own stays under 8 KiB of headers); archive it without options.keepMetadata",
			src.Bucket, src.Key, MaxKeptMetadataBytes)}}
	}
	m.Field = plan.MetaField(field)
	return m, err
}
