package e2e_test

// Sources of every checksum kind a bucket holds, at sizes below a part, over
// a worker's memory budget (about 1 GiB for the default 512 MiB) and over
// 5 GiB (copied in ranges), through every strategy, read by the seven
// readers. S3 SDKs and the CLI upload big objects in 8 MiB parts with CRC-32
// part checksums, so S3 holds a composite ("…-N"); versitygw answers a copy
// of such a source with that composite, and a ranged copy of a source with a
// stored CRC-32 with the whole object's (docs/versitygw.md, fact i): a worker
// must then stream the part, whatever its size.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/testenv/zipcheck"
)

// sourceKind is how an object was uploaded, and so which checksum S3 keeps.
type sourceKind struct {
	name string
	alg  types.ChecksumAlgorithm // "" for none
	typ  types.ChecksumType      // of a multipart upload
}

var sourceKinds = []sourceKind{
	{"none", "", ""},
	{"crc32-full", types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject},
	{"crc32-composite", types.ChecksumAlgorithmCrc32, types.ChecksumTypeComposite},
	{"crc64nvme", types.ChecksumAlgorithmCrc64nvme, types.ChecksumTypeFullObject},
	{"sha256-composite", types.ChecksumAlgorithmSha256, types.ChecksumTypeComposite},
}

// cliPartSize is the part size of the AWS CLI and SDK upload managers.
const cliPartSize = 8 * mib

// patterned is size bytes of a cheap pattern made from one 8 MiB buffer,
// whose parts repeat only every 7 (so a range off by 1, 2, 4 or 8 parts
// would be caught).
type patterned struct {
	seed uint64
	size int64
	base []byte // cliPartSize + 64 KiB of random bytes
}

func newPatterned(seed uint64, size int64) *patterned {
	return &patterned{seed: seed, size: size, base: body(seed, cliPartSize+64<<10)}
}

// part is the n-th (from 0) cliPartSize slice of the object.
func (p *patterned) part(n int64) []byte {
	off := (n % 7) * 4099
	size := min(cliPartSize, p.size-n*cliPartSize)
	return p.base[off : off+size]
}

func (p *patterned) parts() int64 { return max(1, (p.size+cliPartSize-1)/cliPartSize) }

func (p *patterned) want(name string) zipcheck.Want {
	h := sha256.New()
	for n := range p.parts() {
		h.Write(p.part(n))
	}
	w := zipcheck.Want{Name: name, Size: p.size}
	copy(w.SHA256[:], h.Sum(nil))
	return w
}

// putKind uploads the object as a client of that kind would: a single PUT
// below one part, else a multipart upload in 8 MiB parts, the upload's
// checksum algorithm and type set as the kind says.
func (w *world) putKind(t *testing.T, bucket, key string, k sourceKind, obj *patterned) {
	t.Helper()
	ctx := context.Background()
	c := w.srv.Client(t, func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	if obj.size < cliPartSize && k.typ != types.ChecksumTypeComposite {
		b := obj.part(0)
		in := &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))), ChecksumAlgorithm: k.alg}
		if _, err := c.PutObject(ctx, in); err != nil {
			t.Fatalf("put s3://%s/%s (%s): %v", bucket, key, k.name, err)
		}
		return
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key, ChecksumAlgorithm: k.alg, ChecksumType: k.typ})
	if err != nil {
		t.Fatalf("create upload s3://%s/%s (%s): %v", bucket, key, k.name, err)
	}
	done := make([]types.CompletedPart, obj.parts())
	var g errgroup.Group
	g.SetLimit(4)
	for n := range obj.parts() {
		g.Go(func() error {
			b := obj.part(n)
			out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId, PartNumber: aws.Int32(int32(n + 1)),
				Body: bytes.NewReader(b), ContentLength: aws.Int64(int64(len(b))), ChecksumAlgorithm: k.alg})
			if err != nil {
				return fmt.Errorf("part %d: %w", n+1, err)
			}
			done[n] = types.CompletedPart{PartNumber: aws.Int32(int32(n + 1)), ETag: out.ETag,
				ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC64NVME: out.ChecksumCRC64NVME, ChecksumSHA256: out.ChecksumSHA256}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("upload s3://%s/%s (%s): %v", bucket, key, k.name, err)
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatalf("complete s3://%s/%s (%s): %v", bucket, key, k.name, err)
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	if k.typ == types.ChecksumTypeComposite && !strings.HasSuffix(aws.ToString(h.ChecksumCRC32)+aws.ToString(h.ChecksumSHA256), fmt.Sprintf("-%d", obj.parts())) {
		t.Fatalf("s3://%s/%s (%s): stored checksum %q%q, want a composite of %d parts", bucket, key, k.name, aws.ToString(h.ChecksumCRC32), aws.ToString(h.ChecksumSHA256), obj.parts())
	}
}

// kindsCase is a set of sources, one per kind (or the kinds given), of one
// size, and how the archives are built.
type kindsCase struct {
	size       int64
	kinds      []sourceKind
	strategies []string
	budget     int64 // the workers' memory budget (0: the default)
	// copyParts is the least number of copy parts each archive must have
	copyParts int
}

// runKinds uploads one source of size per kind, beside a few small
// objects, and builds and checks the archive with every strategy.
func runKinds(t *testing.T, c kindsCase) {
	w := newWorld(t, "src")
	if c.kinds == nil {
		c.kinds = sourceKinds
	}
	if c.strategies == nil {
		c.strategies = strategies
	}
	var want []zipcheck.Want
	for i, k := range c.kinds {
		obj := newPatterned(uint64(100+i), c.size+int64(i))
		key := fmt.Sprintf("kinds/%s.bin", k.name)
		w.putKind(t, "src", key, k, obj)
		want = append(want, obj.want(strings.TrimPrefix(key, "kinds/")))
		// A small object after each, so duo streams some starts of big
		// objects with the headers and copies their rest.
		small := body(uint64(200+i), 1000*(i+1))
		w.srv.PutObject(t, "src", fmt.Sprintf("kinds/%s.txt", k.name), small)
		want = append(want, zipcheck.WantBytes(k.name+".txt", small))
	}
	for _, s := range c.strategies {
		t.Run(s, func(t *testing.T) {
			var mu sync.Mutex
			var got int64       // GETs of sources, by workers and planner
			var probed []string // ranges of CRC-32 composites copied only to learn a CRC
			client := w.srv.Client(t, func(o *s3.Options) {
				o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			}, watch(func(params any) {
				mu.Lock()
				defer mu.Unlock()
				switch v := params.(type) {
				case *s3.GetObjectInput:
					if aws.ToString(v.Bucket) == "src" {
						got++
					}
				case *s3.UploadPartCopyInput:
					if strings.Contains(aws.ToString(v.Key), "crc-probe") && strings.Contains(aws.ToString(v.CopySource), "crc32-composite") {
						probed = append(probed, aws.ToString(v.CopySource)+" "+aws.ToString(v.CopySourceRange))
					}
				}
			}))
			dest := "out/" + s + ".zip"
			raw, _ := json.Marshal(listRequest(s, "src", "kinds/", dest, nil))
			r := &create.Runner{S3: client, Config: create.Config{WorkBucket: "work", DefaultMaxConcurrency: 4, MemoryBudget: c.budget, PartsPerBatch: 3}}
			t0 := time.Now()
			res, err := r.Run(context.Background(), raw, "e2e-kinds-"+s)
			if err != nil {
				t.Fatal(err)
			}
			st := res.Output.Stats
			t.Logf("%s: %d entries, archive %d bytes in %v; streamed %d, copied %d; %d copy parts; %d GETs of sources; probes of composites %v",
				s, st.Entries, res.Output.Archive.Size, time.Since(t0).Round(time.Millisecond), st.StreamedBytesActual, st.CopiedBytesActual, st.CopyParts, got, probed)
			if st.CopyParts < c.copyParts {
				t.Errorf("%d copy parts, want at least %d: the data set no longer has the plan copy in ranges", st.CopyParts, c.copyParts)
			}
			// versitygw answers a copy of a composite with the composite: a
			// one-byte copy finds that out, not a copy of the whole object.
			for _, p := range probed {
				if !strings.HasSuffix(p, " bytes=0-0") {
					t.Errorf("copied %s into the CRC probe, want at most its first byte", p)
				}
			}
			w.check(t, dest, want)
			w.clean(t)
			if _, err := w.s3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("dst"), Key: &dest}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Below a part: single PUTs with each checksum, and a one-part composite.
func TestSourceKindsSmall(t *testing.T) {
	runKinds(t, kindsCase{size: 3*mib + 1})
}

// Over the memory budget: what the ~1 GiB sources of the long suite do to
// the default 512 MiB budget, here at 1/32 of the size (20 MiB sources in
// 8 MiB parts, an 8 MiB budget), so every strategy and kind runs in the
// regular suite.
func TestSourceKindsLargerThanBudget(t *testing.T) {
	runKinds(t, kindsCase{size: 20*mib + 3, budget: 8 * mib})
}

// About 1 GiB (129 parts of 8 MiB, as in the issue), with the default
// 512 MiB budget: the two kinds whose copy answers versitygw cannot give
// (fact i), with duo and auto, which failed on them. The other kinds'
// answers are trusted whatever the size; every kind and strategy runs over
// the budget in TestSourceKindsLargerThanBudget; chain (2 minutes more here)
// built these in the issue and streams nothing of them.
func TestSourceKindsOver1GiB(t *testing.T) {
	long(t)
	runKinds(t, kindsCase{size: 1<<30 + 3, kinds: []sourceKind{sourceKinds[1], sourceKinds[2]}, strategies: []string{"duo", "auto"}})
}

// Over 5 GiB, the CRC-32 composite (the failing kind), with auto,
// the default, which failed on it as duo did: for one big object auto's
// plan is duo's layout with nothing between the copies to chain, so one
// archive covers both (a 5 GiB archive costs about 3 minutes here, most of
// it the seven readers). 5 GiB and 64 MiB, so that what follows the streamed
// start is still over 5 GiB and copied in two ranges.
// The object over 5 GiB without a checksum is
// TestArchiveOver4GiBWithObjectOver5GiB.
func TestSourceKindsOver5GiB(t *testing.T) {
	long(t)
	runKinds(t, kindsCase{size: 5<<30 + 64*mib + 12345, kinds: []sourceKind{sourceKinds[2]}, strategies: []string{"auto"}, copyParts: 2})
}
