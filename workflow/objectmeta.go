package workflow

import (
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/objmeta"
	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
)

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
	if errors.As(err, &tl) {
		return m, &RequestError{[]string{fmt.Sprintf("s3://%s/%s: %v; archive it without options.keepMetadata", src.Bucket, src.Key, err)}}
	}
	m.Field = plan.MetaField(field)
	return m, err
}
