package create

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/plan"
)

// Lookups are the read pass's questions to S3 object by object, a HeadObject
// to pin and size each of a manifest's objects and the CRC-32s the layout
// needs before the workers run. They are read jobs of their own kind, many to
// a reader invocation and many in flight in each. The planner writes the
// jobs and reads the answers, so its requests grow with pages of jobs and
// result files and with parts, never with objects.

// The lookup kinds a ReadJob.Lookup names.
const (
	// LookupPin asks HeadObject what a listing would have said of a
	// manifest's object. That is its size, its ETag as the pin, its version,
	// its last-modified time, and its CRC-32 when S3 stores the whole object's.
	LookupPin = "pin"
	// LookupCRC learns the CRC-32 of a pinned source. It takes the one S3
	// stores, else one S3 computes for a copy into a probe upload, else it
	// reads the source.
	LookupCRC = "crc"
)

// DefaultLookupsPerBatch is the most lookups one reader invocation answers.
// A lookup's answer is some 200 bytes of the batch's result, which Step
// Functions holds to 256 KiB, and MaxInputBytesPerBatch cuts the input side.
const DefaultLookupsPerBatch = 500

// Looked is what a lookup learned of an object.
type Looked struct {
	// Missing says a LookupPin found that a manifest's object does not exist.
	Missing   bool      `json:"missing,omitempty"`
	Size      int64     `json:"size,omitempty"`
	ETag      string    `json:"etag,omitempty"`
	VersionID string    `json:"versionId,omitempty"`
	ModTime   time.Time `json:"modTime,omitzero"`
	CRC32     plan.CRC  `json:"crc32,omitzero"`
	// Stored says what S3 stores of a pinned object's CRC-32 when it is not
	// the whole object's, StoredNone or StoredComposite.
	Stored string `json:"stored,omitempty"`
	// Mode is the Unix mode a LookupPin finds in the object's user metadata,
	// and ModTime is the mtime it gives, where it gives one. Meta is its
	// metadata extra field, when the job keeps metadata.
	Mode uint32         `json:"mode,omitempty"`
	Meta plan.MetaField `json:"meta,omitempty"`
}

// What S3 stores of an object's CRC-32 when it stores no whole-object one,
// as ReadJob.Stored and Looked.Stored say it. An empty string means not
// known, or a whole-object one.
const (
	// StoredNone means no CRC-32 at all, another algorithm or none. A CRC
	// lookup skips the HeadObject that could not answer.
	StoredNone = "none"
	// StoredComposite means a CRC-32 of the object's parts, "…-N", not of
	// the object. A CRC lookup probes from its first byte.
	StoredComposite = "composite"
)

// storedKind returns what a listing's checksum algorithms and type say S3
// stores of an object's CRC-32. It returns "" when the listing says nothing
// or S3 stores the whole object's, which a HeadObject answers.
func storedKind(algorithms []types.ChecksumAlgorithm, typ types.ChecksumType) string {
	switch {
	case len(algorithms) == 0:
		return ""
	case !slices.Contains(algorithms, types.ChecksumAlgorithmCrc32):
		return StoredNone
	case typ == types.ChecksumTypeComposite:
		return StoredComposite
	}
	return ""
}

// storedCRCs holds what the listing, the inventory or the pin round said of
// the sources whose whole-object CRC-32 S3 does not store, read when the CRC
// lookups are written. It keeps sorted keys per bucket and kind, a string
// header per key whose bytes are shared with the entry's. It is safe for
// concurrent use.
type storedCRCs struct {
	mu      sync.Mutex
	buckets map[string]*storedKeys
}

type storedKeys struct {
	none, composite []string
	sorted          bool
}

// note records that S3 stores kind of the object's CRC-32. An empty kind
// records nothing.
func (s *storedCRCs) note(bucket, key, kind string) {
	if kind == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buckets == nil {
		s.buckets = map[string]*storedKeys{}
	}
	b := s.buckets[bucket]
	if b == nil {
		b = &storedKeys{sorted: true}
		s.buckets[bucket] = b
	}
	list := &b.none
	if kind == StoredComposite {
		list = &b.composite
	}
	if n := len(*list); n > 0 && (*list)[n-1] >= key {
		b.sorted = false // a listing comes in key order, but an inventory or a manifest need not
	}
	*list = append(*list, key)
}

// noted says whether any source was noted, that is, whether some source's
// whole-object CRC-32 is not stored.
func (s *storedCRCs) noted() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buckets) > 0
}

// of returns what S3 stores of src's CRC-32, as noted. It returns "" when
// that is not known or is the whole object's.
func (s *storedCRCs) of(src plan.Source) string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[src.Bucket]
	if b == nil {
		return ""
	}
	if !b.sorted {
		sort.Strings(b.none)
		sort.Strings(b.composite)
		b.sorted = true
	}
	if _, found := slices.BinarySearch(b.none, src.Key); found {
		return StoredNone
	}
	if _, found := slices.BinarySearch(b.composite, src.Key); found {
		return StoredComposite
	}
	return ""
}

// lookUpBatch answers a batch of lookups, r.Lookups at once. The first
// failure fails the batch, and a retry asks again, since lookups write
// nothing but a probe upload, which is aborted. CRC lookups share one probe
// upload.
func (r *Reader) lookUpBatch(ctx context.Context, jobs []ReadJob) (*ReadBatchResult, error) {
	var probe *crcProbe
	for _, j := range jobs {
		if j.Lookup == LookupCRC && j.Bucket != "" {
			probe = &crcProbe{c: r.S3, bucket: j.Bucket, key: j.Key + "-" + newAttempt()}
			defer probe.close(ctx)
			break
		}
	}
	out := &ReadBatchResult{Results: make([]ReadResult, len(jobs))}
	err := forEach(ctx, r.lookups(), len(jobs), func(ctx context.Context, i int) error {
		j := jobs[i]
		looked, err := r.lookUp(ctx, j, probe)
		if err != nil {
			return fmt.Errorf("%s lookup of s3://%s/%s (entry %d): %w", j.Lookup, j.Source.Bucket, j.Source.Key, j.Entry, err)
		}
		out.Results[i] = ReadResult{Entry: j.Entry, Object: looked}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// lookups is how many lookups a reader has in flight.
func (r *Reader) lookups() int {
	if r.Lookups > 0 {
		return r.Lookups
	}
	return Config{}.Defaults().HeadConcurrency
}

// lookUp answers one lookup.
func (r *Reader) lookUp(ctx context.Context, j ReadJob, probe *crcProbe) (*Looked, error) {
	switch j.Lookup {
	case LookupPin:
		return pinObject(ctx, r.S3, j.Source, j.KeepMetadata)
	case LookupCRC:
		crc, err := sourceCRC(ctx, r.S3, probe, crcAsked{src: j.Source, size: j.Length, stored: j.Stored})
		if err != nil {
			return nil, err
		}
		return &Looked{CRC32: plan.KnownCRC(crc)}, nil
	}
	return nil, fmt.Errorf("unknown lookup %q (this reader knows %q and %q)", j.Lookup, LookupPin, LookupCRC)
}

// pinObject returns an object as HeadObject describes it, its metadata kept
// when keep is set. A missing object is an answer, not an error, since the
// planner lists every missing line.
func pinObject(ctx context.Context, c S3, src plan.Source, keep bool) (*Looked, error) {
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &src.Bucket, Key: &src.Key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		if s3err.NotFound(err) {
			return &Looked{Missing: true}, nil
		}
		return nil, s3Error("HeadObject", src.Bucket, src.Key, true, err)
	}
	l := &Looked{Size: aws.ToInt64(h.ContentLength), ETag: aws.ToString(h.ETag), VersionID: aws.ToString(h.VersionId), ModTime: aws.ToTime(h.LastModified)}
	switch crc, ok := fullObjectCRC(h); {
	case ok:
		l.CRC32 = plan.KnownCRC(crc)
	case aws.ToString(h.ChecksumCRC32) != "":
		l.Stored = StoredComposite
	default:
		l.Stored = StoredNone
	}
	m, err := metaOf(h, src, keep)
	if err != nil {
		return nil, err
	}
	l.Mode, l.Meta = m.Mode, m.Field
	if !m.ModTime.IsZero() {
		l.ModTime = m.ModTime
	}
	return l, nil
}
