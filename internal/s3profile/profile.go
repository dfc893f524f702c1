// Package s3profile measures an S3 server with a few requests and turns what
// it measured into the cost model's profile of that server (plan.Model), so
// auto chooses its layout for the server a run meets rather than for AWS.
//
// The choice it changes is the one between chained runs and copies: AWS's S3
// completes a multipart upload without reading its parts again, so a chain's
// rounds cost it round trips only; a server that concatenates parts at
// CompleteMultipartUpload (versitygw, MinIO on a filesystem) pays for every
// byte each round assembles, and copies there run at its disk's rate, not
// S3's. Measured once per endpoint and cached (Cache), as the measuring
// writes some 48 MiB.
package s3profile

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/plan"
)

// Sizes of the measurement: a sample object of samplePieces pieces, each
// at least S3's smallest part, so its pieces can be uploaded and completed
// as a multipart upload's parts.
const (
	piece        = 8 << 20
	samplePieces = 3
	sampleSize   = piece * samplePieces
	heads        = 5  // HEADs for the round trip's median
	burstHeads   = 64 // HEADs for the request rate
	burstWidth   = 16 // … this many in flight
)

// Measured is what the requests measured of one server. Rates are bytes/s
// unless named otherwise.
type Measured struct {
	Endpoint string    `json:"endpoint"`
	At       time.Time `json:"measuredAt"`
	// RequestSeconds is a HEAD's median round trip; RequestRate the HEADs
	// a second answered with burstWidth in flight.
	RequestSeconds float64 `json:"requestSeconds"`
	RequestRate    float64 `json:"requestsPerSecond"`
	// GetOneRate is one GetObject alone; GetRate and IngestRate the
	// sample's pieces read and uploaded (UploadPart with its CRC-32, as
	// workers send parts) all at once.
	GetOneRate float64 `json:"getOneBytesPerSecond"`
	GetRate    float64 `json:"getBytesPerSecond"`
	IngestRate float64 `json:"ingestBytesPerSecond"`
	// CopyRate is one UploadPartCopy of the whole sample.
	CopyRate float64 `json:"copyBytesPerSecond"`
	// CompleteSeconds is CompleteMultipartUpload of one small part;
	// CompletePerByte what it takes more per byte of parts it assembles
	// (0 for a server that does not read them again, as S3).
	CompleteSeconds float64 `json:"completeSeconds"`
	CompletePerByte float64 `json:"completeSecondsPerByte"`
}

// Client is what measuring needs of S3.
type Client interface {
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPart(context.Context, *s3.UploadPartInput, ...func(*s3.Options)) (*s3.UploadPartOutput, error)
	UploadPartCopy(context.Context, *s3.UploadPartCopyInput, ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error)
	CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
}

// Measure measures the server c reaches with objects under
// s3://bucket/prefix (a folder of its own is made there and removed, with
// every upload it opened, whatever happens). It takes about a second on a
// server that writes 100 MB/s.
func Measure(ctx context.Context, c Client, bucket, prefix string) (m Measured, err error) {
	var id [6]byte
	_, _ = rand.Read(id[:])
	p := &probe{c: c, bucket: bucket, prefix: prefix + "profile-" + hex.EncodeToString(id[:]) + "/"}
	defer func() {
		if cerr := p.clean(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil {
			err = fmt.Errorf("measure the S3 server (s3://%s/%s): %w", bucket, p.prefix, err)
		}
	}()
	m.At = time.Now().UTC()
	for _, step := range []func(context.Context, *Measured) error{p.put, p.requests, p.gets, p.ingest, p.copy, p.completeSmall} {
		if err := step(ctx, &m); err != nil {
			return m, err
		}
	}
	return m, nil
}

// probe is one measurement's objects and uploads.
type probe struct {
	c              Client
	bucket, prefix string
	sample         []byte

	mu      sync.Mutex
	keys    []string          // objects written
	uploads map[string]string // upload ID → key, open
	// assembled is the sample's Complete, in seconds.
	assembled float64
}

func (p *probe) key(name string) *string { return aws.String(p.prefix + name) }

func (p *probe) put(ctx context.Context, m *Measured) error {
	p.sample = make([]byte, sampleSize)
	_, _ = rand.Read(p.sample)
	p.wrote("sample")
	_, err := p.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &p.bucket, Key: p.key("sample"), Body: bytes.NewReader(p.sample), ContentLength: aws.Int64(sampleSize)})
	if err != nil {
		return fmt.Errorf("PutObject: %w", err)
	}
	return nil
}

// requests: HEADs one after another (their median), then a burst.
func (p *probe) requests(ctx context.Context, m *Measured) error {
	head := func(ctx context.Context, _ int) error {
		_, err := p.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &p.bucket, Key: p.key("sample")})
		if err != nil {
			return fmt.Errorf("HeadObject: %w", err)
		}
		return nil
	}
	var rtts []float64
	for range heads {
		secs, err := timed(func() error { return head(ctx, 0) })
		if err != nil {
			return err
		}
		rtts = append(rtts, secs)
	}
	slices.Sort(rtts)
	m.RequestSeconds = rtts[len(rtts)/2]
	secs, err := timed(func() error { return each(ctx, burstHeads, burstWidth, head) })
	m.RequestRate = burstHeads / secs
	return err
}

// gets: the whole sample in one GET, then its pieces all at once.
func (p *probe) gets(ctx context.Context, m *Measured) error {
	get := func(ctx context.Context, rng *string, want int) error {
		out, err := p.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &p.bucket, Key: p.key("sample"), Range: rng})
		if err != nil {
			return fmt.Errorf("GetObject: %w", err)
		}
		defer out.Body.Close()
		var n int64
		buf := make([]byte, 256<<10)
		for {
			k, err := out.Body.Read(buf)
			n += int64(k)
			if err != nil {
				if n != int64(want) {
					return fmt.Errorf("GetObject: %d bytes of %d: %v", n, want, err)
				}
				return nil
			}
		}
	}
	secs, err := timed(func() error { return get(ctx, nil, sampleSize) })
	if err != nil {
		return err
	}
	m.GetOneRate = sampleSize / secs
	secs, err = timed(func() error {
		return each(ctx, samplePieces, samplePieces, func(ctx context.Context, i int) error {
			return get(ctx, aws.String(fmt.Sprintf("bytes=%d-%d", i*piece, (i+1)*piece-1)), piece)
		})
	})
	m.GetRate = sampleSize / secs
	return err
}

// ingest: the sample's pieces as the parts of an upload, all at once, with
// their CRC-32s; then its Complete, against completeSmall's.
func (p *probe) ingest(ctx context.Context, m *Measured) error {
	up, err := p.create(ctx, "ingested")
	if err != nil {
		return err
	}
	parts := make([]types.CompletedPart, samplePieces)
	secs, err := timed(func() error {
		return each(ctx, samplePieces, samplePieces, func(ctx context.Context, i int) error {
			b := p.sample[i*piece : (i+1)*piece]
			sum := s3part.CRCBase64(crc32.ChecksumIEEE(b))
			out, err := p.c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &p.bucket, Key: p.key("ingested"), UploadId: &up,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(b), ContentLength: aws.Int64(piece), ChecksumCRC32: &sum})
			if err != nil {
				return fmt.Errorf("UploadPart: %w", err)
			}
			parts[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32}
			return nil
		})
	})
	if err != nil {
		return err
	}
	m.IngestRate = sampleSize / secs
	p.assembled, err = timed(func() error { return p.complete(ctx, "ingested", up, parts) })
	return err
}

// copy: the whole sample copied into an upload's part, server-side.
func (p *probe) copy(ctx context.Context, m *Measured) error {
	up, err := p.create(ctx, "copied")
	if err != nil {
		return err
	}
	secs, err := timed(func() error {
		_, err := p.c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: &p.bucket, Key: p.key("copied"), UploadId: &up, PartNumber: aws.Int32(1),
			CopySource: aws.String(p.bucket + "/" + p.prefix + "sample")})
		return err
	})
	if err != nil {
		return fmt.Errorf("UploadPartCopy: %w", err)
	}
	m.CopyRate = sampleSize / secs
	return nil
}

// completeSmall: an upload of one small part completed, the fixed cost;
// what the sample's Complete took more is per byte.
func (p *probe) completeSmall(ctx context.Context, m *Measured) error {
	up, err := p.create(ctx, "small")
	if err != nil {
		return err
	}
	b := p.sample[:1024]
	sum := s3part.CRCBase64(crc32.ChecksumIEEE(b))
	out, err := p.c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &p.bucket, Key: p.key("small"), UploadId: &up,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(b), ContentLength: aws.Int64(1024), ChecksumCRC32: &sum})
	if err != nil {
		return fmt.Errorf("UploadPart: %w", err)
	}
	m.CompleteSeconds, err = timed(func() error {
		return p.complete(ctx, "small", up, []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32}})
	})
	m.CompletePerByte = max(0, p.assembled-m.CompleteSeconds) / sampleSize
	return err
}

func (p *probe) create(ctx context.Context, name string) (string, error) {
	out, err := p.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &p.bucket, Key: p.key(name), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	if err != nil {
		return "", fmt.Errorf("CreateMultipartUpload: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.uploads == nil {
		p.uploads = map[string]string{}
	}
	p.uploads[aws.ToString(out.UploadId)] = name
	return aws.ToString(out.UploadId), nil
}

func (p *probe) complete(ctx context.Context, name, up string, parts []types.CompletedPart) error {
	p.wrote(name)
	_, err := p.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &p.bucket, Key: p.key(name), UploadId: &up,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		return fmt.Errorf("CompleteMultipartUpload: %w", err)
	}
	p.mu.Lock()
	delete(p.uploads, up)
	p.mu.Unlock()
	return nil
}

func (p *probe) wrote(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keys = append(p.keys, name)
}

// clean aborts what is open and deletes what was written (a key that was
// never written deletes as nothing).
func (p *probe) clean(ctx context.Context) error {
	var errs []error
	for up, name := range p.uploads {
		if _, err := p.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &p.bucket, Key: p.key(name), UploadId: aws.String(up)}); err != nil && !s3err.NotFound(err) {
			errs = append(errs, fmt.Errorf("abort the upload of %s: %w", name, err))
		}
	}
	for _, name := range p.keys {
		if _, err := p.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &p.bucket, Key: p.key(name)}); err != nil && !s3err.NotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func timed(fn func() error) (float64, error) {
	t0 := time.Now()
	err := fn()
	return max(time.Since(t0).Seconds(), 1e-6), err
}

// each runs fn for 0..n-1, width at a time; the first error stops it.
func each(ctx context.Context, n, width int, fn func(context.Context, int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(width)
	for i := range n {
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}

// Model is plan.Model's profile of the measured server for a run made
// here, in one process, whose workers build partsInFlight parts each:
// the server's rates are the capacity every worker shares, one GET alone
// is a worker's link, and the fixed costs are a few round trips each (no
// state machine, no Lambda to start). Prices stay AWS's, so auto weighs
// cost as it would there; S3's request rates are not assumed (a server
// that refuses a rate says so, and the clients slow to it).
func (m Measured) Model(partsInFlight int) plan.Model {
	out := plan.DefaultModel
	rtt := m.RequestSeconds
	out.WorkerBandwidth = m.GetOneRate
	out.RequestLatency = rtt
	out.CopyRate = m.CopyRate
	out.Concurrency = partsInFlight
	out.StartSeconds = 10 * rtt
	out.FinishSeconds = m.CompleteSeconds + 5*rtt
	out.LaunchRate = 1000
	out.InvokeSeconds = 4 * rtt
	out.CompletePerPart = 0
	out.ListPageSeconds = 5 * rtt
	out.ServerIngestRate, out.ServerGetRate, out.ServerCopyRate = m.IngestRate, m.GetRate, m.CopyRate
	out.ServerRequestRate = m.RequestRate
	out.CompletePerByte = m.CompletePerByte
	out.S3ReadRate, out.S3WriteRate = 0, 0
	return out
}

// Check says whether what was measured can price a plan: every rate
// positive, every time not negative.
func (m Measured) Check() error {
	for _, v := range []struct {
		name string
		v    float64
	}{{"requestsPerSecond", m.RequestRate}, {"getOneBytesPerSecond", m.GetOneRate}, {"getBytesPerSecond", m.GetRate},
		{"ingestBytesPerSecond", m.IngestRate}, {"copyBytesPerSecond", m.CopyRate}} {
		if !(v.v > 0) {
			return fmt.Errorf("%s is %g: want a positive rate", v.name, v.v)
		}
	}
	if !(m.RequestSeconds >= 0 && m.CompleteSeconds >= 0 && m.CompletePerByte >= 0) {
		return fmt.Errorf("requestSeconds %g, completeSeconds %g and completeSecondsPerByte %g must not be negative", m.RequestSeconds, m.CompleteSeconds, m.CompletePerByte)
	}
	return nil
}
