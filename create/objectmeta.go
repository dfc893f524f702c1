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

// MaxKeptMetadataBytes bounds an object's metadata extra field
// (objmeta.MaxFieldBytes): it sizes the pin round's batches when metadata
// is kept (KeptLookupsPerBatch). An object over it (a server more generous
// than S3) fails the run, naming it.
const MaxKeptMetadataBytes = objmeta.MaxFieldBytes

// MaxKeptMetadataTotal bounds the metadata a run keeps, all objects
// together: the planner holds every entry's field until the plan is
// written, beside the entries themselves (docs/performance.md, "Planning at scale": some
// 1.2 GiB at a million entries of its 2,048 MB), so a run past it is
// refused rather than run out of memory.
const MaxKeptMetadataTotal = 256 << 20

// KeptLookupsPerBatch is the most pin lookups one reader invocation
// answers when the request keeps metadata: each answer carries its field in
// base64 (at most MaxKeptMetadataBytes·4/3, about 10.7 KiB, and some 300
// bytes more), and a batch's result must stay under Step Functions' 256 KiB
// (20 × 11 KiB = 220 KiB).
const KeptLookupsPerBatch = 20

// headMeta is what an entry records of its object beyond the bytes, from
// the HeadObject that looked it up: the Unix mode and modification time
// rclone and s3fs keep in user metadata (objmeta), and, when the request
// keeps metadata, the metadata extra field (zipformat.Metadata).
type headMeta struct {
	Mode    uint32
	ModTime time.Time // zero: the metadata gives none (Last-Modified stands)
	Field   plan.MetaField
}

// metaOf reads what h says of src's metadata. An object whose metadata
// does not fit an extra field is an error naming it: it cannot be kept.
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
