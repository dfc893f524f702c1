package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"
)

// calibration is what this machine's S3 server does for s3zip, measured at
// the start of every bench run with an unshaped client in the server's own
// namespace: the capacities the per-worker link is scaled against and the
// local profile of plan.Model is filled from.
type calibration struct {
	// Aggregate rates with Streams requests in flight, bytes/s.
	IngestRate float64 `json:"ingestBytesPerSecond"` // UploadPart with CRC-32, as workers send parts
	GetRate    float64 `json:"getBytesPerSecond"`    // ranged GetObject
	CopyRate   float64 `json:"copyBytesPerSecond"`   // ranged UploadPartCopy into a CRC-32 upload
	// CopyOneRate is one UploadPartCopy alone, bytes/s.
	CopyOneRate float64 `json:"copyOneBytesPerSecond"`
	// CompletePerByte is CompleteMultipartUpload's time per archive byte
	// (versitygw concatenates the parts), CompleteFixed its time for a
	// one-part upload.
	CompletePerByte float64 `json:"completeSecondsPerByte"`
	CompleteFixed   float64 `json:"completeSeconds"`
	// RequestSeconds is a HeadObject's median round trip (S3's time to
	// first byte, the proxy's delay, included); RequestRate small requests
	// per second the server answers with many in flight.
	RequestSeconds float64 `json:"requestSeconds"`
	RequestRate    float64 `json:"requestsPerSecond"`
	Streams        int     `json:"streams"`
	// LinkRate is what one shaped link carries each way at once, bytes/s:
	// a worker's goodput (TCP, the proxy's delay, tbf's bursts), less than
	// the tc rate; the model's WorkerBandwidth, as AWS's is a Lambda's
	// observed goodput, not its NIC's rate.
	LinkRate float64 `json:"linkBytesPerSecond"`
	// ThroughGetRate and ThroughIngestRate are what every worker link
	// together carries in (GetObject) and out (UploadPart) at once: the
	// server's streaming capacity as the workers see it, the proxy, the
	// links and the workers' own share of the 2 cores included (the
	// model's ServerGetRate and ServerIngestRate).
	ThroughGetRate    float64 `json:"throughGetBytesPerSecond"`
	ThroughIngestRate float64 `json:"throughIngestBytesPerSecond"`
	// LaunchRate is worker processes started per second, all namespaces
	// at once; PlanSeconds and FinishSeconds a one-object run's planning
	// and finishing through the real runner (main.go).
	LaunchRate  float64 `json:"launchesPerSecond"`
	PlanSeconds float64 `json:"planSeconds"`
	// InvokeSeconds is a worker invocation's fixed cost (timeInvocation).
	InvokeSeconds float64 `json:"invokeSeconds"`
	FinishSeconds float64 `json:"finishSeconds"`
	Seconds       float64 `json:"seconds"` // how long calibrating took
}

const (
	calibBucket  = "calibration"
	calibObject  = "source.bin"
	calibSize    = 256 << 20
	calibPiece   = 16 << 20
	calibStreams = 8
)

// calibrate measures the server through c. It leaves nothing behind.
func calibrate(ctx context.Context, c *s3.Client) (cal calibration, err error) {
	t0 := time.Now()
	cal.Streams = calibStreams
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(calibBucket)}); err != nil {
		return cal, fmt.Errorf("create bucket %s: %w", calibBucket, err)
	}
	defer func() {
		if cerr := emptyAndDeleteBucket(context.WithoutCancel(ctx), c, calibBucket); cerr != nil && err == nil {
			err = cerr
		}
	}()
	data := seededBytes(calibSize, 7, 7)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(calibBucket), Key: aws.String(calibObject),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(calibSize)}); err != nil {
		return cal, fmt.Errorf("put calibration source: %w", err)
	}
	pieces := calibSize / calibPiece

	// Ingest: parts sent as workers send them, CRC-32 computed and sent.
	up, err := createCRCUpload(ctx, c, "ingest")
	if err != nil {
		return cal, err
	}
	var parts []types.CompletedPart
	var mu sync.Mutex
	secs, err := timed(func() error {
		return forEach(ctx, pieces, calibStreams, func(ctx context.Context, i int) error {
			b := data[i*calibPiece : (i+1)*calibPiece]
			sum := crcB64(b)
			out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(calibBucket), Key: aws.String("ingest"), UploadId: up,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(b), ContentLength: aws.Int64(calibPiece), ChecksumCRC32: &sum})
			if err != nil {
				return fmt.Errorf("UploadPart: %w", err)
			}
			mu.Lock()
			parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32})
			mu.Unlock()
			return nil
		})
	})
	if err != nil {
		return cal, err
	}
	cal.IngestRate = calibSize / secs

	// Complete: the parts just sent, then a one-part upload for the fixed
	// cost; the first takes the median of three uploads of the same parts
	// (each copied into place), as one Complete alone varies.
	sort.Slice(parts, func(a, b int) bool { return *parts[a].PartNumber < *parts[b].PartNumber })
	var fulls []float64
	for i := 0; i < 3; i++ {
		key := fmt.Sprintf("assemble-%d", i)
		if i == 0 {
			key = "ingest"
		} else {
			if up, parts, err = copyUpload(ctx, c, key, pieces); err != nil {
				return cal, err
			}
		}
		secs, err := timed(func() error { return complete(ctx, c, key, up, parts) })
		if err != nil {
			return cal, err
		}
		fulls = append(fulls, secs)
	}
	sort.Float64s(fulls)
	full := fulls[1]
	small, err := createCRCUpload(ctx, c, "small")
	if err != nil {
		return cal, err
	}
	sum := crcB64(data[:1024])
	out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(calibBucket), Key: aws.String("small"), UploadId: small,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(data[:1024]), ContentLength: aws.Int64(1024), ChecksumCRC32: &sum})
	if err != nil {
		return cal, fmt.Errorf("UploadPart: %w", err)
	}
	cal.CompleteFixed, err = timed(func() error {
		return complete(ctx, c, "small", small, []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32}})
	})
	if err != nil {
		return cal, err
	}
	cal.CompletePerByte = max(full-cal.CompleteFixed, 0) / calibSize

	// Ranged GETs.
	secs, err = timed(func() error {
		return forEach(ctx, pieces, calibStreams, func(ctx context.Context, i int) error {
			return getPiece(ctx, c, calibBucket, calibObject, i, calibPiece)
		})
	})
	if err != nil {
		return cal, err
	}
	cal.GetRate = calibSize / secs

	// Copies: one alone, then Streams at once.
	cp, err := createCRCUpload(ctx, c, "copy")
	if err != nil {
		return cal, err
	}
	copyPiece := func(ctx context.Context, i int) error {
		_, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(calibBucket), Key: aws.String("copy"), UploadId: cp,
			PartNumber: aws.Int32(int32(i + 1)), CopySource: aws.String(calibBucket + "/" + calibObject),
			CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", (i%pieces)*calibPiece, (i%pieces+1)*calibPiece-1))})
		if err != nil {
			return fmt.Errorf("UploadPartCopy: %w", err)
		}
		return nil
	}
	secs, err = timed(func() error { return copyPiece(ctx, 0) })
	if err != nil {
		return cal, err
	}
	cal.CopyOneRate = calibPiece / secs
	secs, err = timed(func() error { return forEach(ctx, pieces, calibStreams, copyPiece) })
	if err != nil {
		return cal, err
	}
	cal.CopyRate = calibSize / secs
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(calibBucket), Key: aws.String("copy"), UploadId: cp}); err != nil {
		return cal, fmt.Errorf("AbortMultipartUpload: %w", err)
	}

	// Small requests: latency one at a time, then the rate with many in flight.
	var lat []float64
	head := func(ctx context.Context, _ int) error {
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(calibBucket), Key: aws.String(calibObject)})
		return err
	}
	for i := 0; i < 20; i++ {
		s, err := timed(func() error { return head(ctx, i) })
		if err != nil {
			return cal, fmt.Errorf("HeadObject: %w", err)
		}
		lat = append(lat, s)
	}
	sort.Float64s(lat)
	cal.RequestSeconds = lat[len(lat)/2]
	const many = 2000
	secs, err = timed(func() error { return forEach(ctx, many, 64, head) })
	if err != nil {
		return cal, fmt.Errorf("HeadObject: %w", err)
	}
	cal.RequestRate = many / secs
	cal.Seconds = time.Since(t0).Seconds()
	return cal, nil
}

// linkSeconds is about how long one calibrateLink sample lasts, in pieces
// of linkPiece; linksSample what calibrateLinks moves through each link.
const (
	linkSeconds = 5
	linkPiece   = 2 << 20
	linksSample = 8 << 20
)

// calibrateLink measures one shaped link's goodput as a worker uses it:
// ranged GETs in and UploadParts out at the same time, a part's worth of
// requests in flight each way, through the client shaped (dialled in a
// namespace behind the link, whose tc rate is rate). The slower direction's
// rate is a sample's; the link's is the median of three, each about
// linkSeconds long (a sample of 2.7 s varied from 66 to 92% of the tc rate
// here, of 5 s from 86 to 91%).
func calibrateLink(ctx context.Context, base, shaped *s3.Client, bkt string, rate float64) (float64, error) {
	size := max(int(rate*linkSeconds)/linkPiece, calibStreams) * linkPiece
	var links []float64
	for i := 0; i < 3; i++ {
		in, out, err := sampleLink(ctx, base, shaped, bkt, "link-calibration.bin", size, settle)
		if err != nil {
			return 0, err
		}
		links = append(links, min(in, out))
	}
	return median(links), nil
}

// calibrateLinks streams through every worker's link at once, each as
// calibrateLink's first sample does, and returns the bytes/s all of them
// carry in and out together.
func calibrateLinks(ctx context.Context, base *s3.Client, nets []lambdaNet, bkt string) (in, out float64, err error) {
	// Every link starts when all are set up, and the rates are all bytes
	// over the slowest link's time.
	var ready sync.WaitGroup
	ready.Add(len(nets))
	var mu sync.Mutex
	var inSecs, outSecs float64
	err = forEach(ctx, len(nets), len(nets), func(ctx context.Context, k int) error {
		gated := false
		gate := func() { gated = true; ready.Done(); ready.Wait() }
		in, out, err := sampleLink(ctx, base, shapedClient(base, nets[k]), bkt, fmt.Sprintf("links-calibration-%d.bin", k), linksSample, gate)
		if !gated {
			ready.Done() // failed while setting up: the others must not wait for it
		}
		if err != nil {
			return err
		}
		mu.Lock()
		inSecs, outSecs = max(inSecs, linksSample/in), max(outSecs, linksSample/out)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	total := float64(len(nets) * linksSample)
	return total / inSecs, total / outSecs, nil
}

// sampleLink moves size bytes through shaped each way at once under key, in
// pieces of linkPiece, calibStreams requests in flight each way, and returns
// the bytes/s in and out; it calls ready when set up, just before it starts
// the clock.
func sampleLink(ctx context.Context, base, shaped *s3.Client, bkt, key string, size int, ready func()) (float64, float64, error) {
	const piece, streams = linkPiece, calibStreams
	data := seededBytes(size, 3, 3)
	if _, err := base.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bkt), Key: aws.String(key), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(size))}); err != nil {
		return 0, 0, fmt.Errorf("put link sample: %w", err)
	}
	defer base.DeleteObject(context.WithoutCancel(ctx), &s3.DeleteObjectInput{Bucket: aws.String(bkt), Key: aws.String(key)})
	up, err := base.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bkt), Key: aws.String(key + ".up")})
	if err != nil {
		return 0, 0, fmt.Errorf("CreateMultipartUpload: %w", err)
	}
	defer base.AbortMultipartUpload(context.WithoutCancel(ctx), &s3.AbortMultipartUploadInput{Bucket: aws.String(bkt), Key: aws.String(key + ".up"), UploadId: up.UploadId})
	pieces := size / piece
	var in, out float64
	ready()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		in, err = timedNow(func() error {
			return forEach(gctx, pieces, streams, func(ctx context.Context, i int) error {
				return getPiece(ctx, shaped, bkt, key, i, piece)
			})
		})
		return err
	})
	g.Go(func() (err error) {
		out, err = timedNow(func() error {
			return forEach(gctx, pieces, streams, func(ctx context.Context, i int) error {
				_, err := shaped.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bkt), Key: aws.String(key + ".up"), UploadId: up.UploadId,
					PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(data[i*piece : (i+1)*piece]), ContentLength: aws.Int64(int64(piece))})
				if err != nil {
					return fmt.Errorf("UploadPart: %w", err)
				}
				return nil
			})
		})
		return err
	})
	if err := g.Wait(); err != nil {
		return 0, 0, fmt.Errorf("calibrate the link: %w", err)
	}
	return float64(size) / in, float64(size) / out, nil
}

func (c calibration) String() string {
	return fmt.Sprintf("UploadPart %.0f MB/s, GetObject %.0f MB/s, UploadPartCopy %.0f MB/s (%d in flight; one alone %.0f MB/s), CompleteMultipartUpload %.0f ms + %.2f s/GiB, request %.1f ms, %.0f requests/s (%.1f s)",
		c.IngestRate/1e6, c.GetRate/1e6, c.CopyRate/1e6, c.Streams, c.CopyOneRate/1e6, c.CompleteFixed*1000, c.CompletePerByte*(1<<30),
		c.RequestSeconds*1000, c.RequestRate, c.Seconds)
}

func createCRCUpload(ctx context.Context, c *s3.Client, key string) (*string, error) {
	out, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(calibBucket), Key: aws.String(key),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32, ChecksumType: types.ChecksumTypeFullObject})
	if err != nil {
		return nil, fmt.Errorf("CreateMultipartUpload %s: %w", key, err)
	}
	return out.UploadId, nil
}

// copyUpload is a CRC-32 upload of the calibration source in pieces, each
// copied server-side, ready to complete.
func copyUpload(ctx context.Context, c *s3.Client, key string, pieces int) (*string, []types.CompletedPart, error) {
	up, err := createCRCUpload(ctx, c, key)
	if err != nil {
		return nil, nil, err
	}
	parts := make([]types.CompletedPart, pieces)
	err = forEach(ctx, pieces, calibStreams, func(ctx context.Context, i int) error {
		out, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(calibBucket), Key: aws.String(key), UploadId: up,
			PartNumber: aws.Int32(int32(i + 1)), CopySource: aws.String(calibBucket + "/" + calibObject),
			CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", i*calibPiece, (i+1)*calibPiece-1))})
		if err != nil {
			return fmt.Errorf("UploadPartCopy: %w", err)
		}
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.CopyPartResult.ETag, ChecksumCRC32: out.CopyPartResult.ChecksumCRC32}
		return nil
	})
	return up, parts, err
}

func complete(ctx context.Context, c *s3.Client, key string, upload *string, parts []types.CompletedPart) error {
	_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(calibBucket), Key: aws.String(key), UploadId: upload,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		return fmt.Errorf("CompleteMultipartUpload %s: %w", key, err)
	}
	return nil
}

func crcB64(b []byte) string {
	var s [4]byte
	binary.BigEndian.PutUint32(s[:], crc32.ChecksumIEEE(b))
	return base64.StdEncoding.EncodeToString(s[:])
}

// timed times f, once the kernel has written back what was written before
// it: the server's disk writing out the calibration's last 256 MiB would be
// timed with whatever f asks of it (one Complete of 256 MiB took from 0.10 to
// 0.71 s without this, 0.12 to 0.21 s with it). The runs start settled too
// (settle in runOnceFrom).
func timed(f func() error) (float64, error) {
	settle()
	return timedNow(f)
}

func timedNow(f func() error) (float64, error) {
	t := time.Now()
	err := f()
	return time.Since(t).Seconds(), err
}

// getPiece GETs the i-th piece of size bytes of an object and drops it.
func getPiece(ctx context.Context, c *s3.Client, bkt, key string, i, size int) error {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bkt), Key: aws.String(key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", i*size, (i+1)*size-1))})
	if err != nil {
		return fmt.Errorf("GetObject: %w", err)
	}
	defer out.Body.Close()
	_, err = io.Copy(io.Discard, out.Body)
	return err
}

// seededBytes is n bytes of the PCG stream seeded with s1 and s2,
// little-endian words (the last n%8 bytes zero).
func seededBytes(n int, s1, s2 uint64) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(s1, s2))
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	return b
}

// settle writes every dirty page back to disk.
func settle() { syscall.Sync() }

func forEach(ctx context.Context, n, limit int, f func(context.Context, int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for i := 0; i < n; i++ {
		g.Go(func() error { return f(ctx, i) })
	}
	return g.Wait()
}

func emptyAndDeleteBucket(ctx context.Context, c *s3.Client, bucket string) error {
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", bucket, err)
		}
		for _, o := range page.Contents {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key}); err != nil {
				return fmt.Errorf("delete s3://%s/%s: %w", bucket, aws.ToString(o.Key), err)
			}
		}
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("delete bucket %s: %w", bucket, err)
	}
	return nil
}
