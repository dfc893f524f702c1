package faults_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// TestNoRangedCopyOfSmallSources: S3 copies a byte range only of a source
// over 5 MB, versitygw of any; the proxy refuses such copies as S3 does
// (faultproxy.Config.SourceSize) and judge counts every refusal as BAD.
// Small objects a chain part's edge cuts through, an object of exactly
// 5 MiB, and small objects stored with a composite CRC-32 (which the
// planner's CRC probe used to test with a one-byte range) must be built by
// every strategy without one.
func TestNoRangedCopyOfSmallSources(t *testing.T) {
	w := newWorld(t)
	put := func(key string, b []byte, opts ...s3test.PutOption) {
		w.srv.PutObject(t, "src", "d/"+key, b, opts...)
		w.src["d/"+key] = b
	}
	for i, size := range []int{3 * mib, 2 * mib, 4 * mib, 1 * mib, 3*mib + 17, 700 << 10} {
		put(fmt.Sprintf("small/%d.bin", i), body(uint64(500+i), size))
	}
	put("exact-5MiB.bin", body(510, 5*mib), s3test.WithChecksum(s3test.ChecksumCRC32))
	put("big.bin", body(511, 7*mib))
	for i, size := range []int{2 * mib, 600 << 10} {
		key := fmt.Sprintf("composite/%d.bin", i)
		b := body(uint64(520+i), size)
		w.srv.PutMultipartObject(t, "src", "d/"+key, [][]byte{b}, s3test.WithChecksum(s3test.ChecksumCRC32), s3test.WithChecksumType(types.ChecksumTypeComposite))
		w.src["d/"+key] = b
	}
	for i, strategy := range []string{"stream", "duo", "chain", "auto"} {
		t.Run(strategy, func(t *testing.T) {
			runThroughProxy(t, w, uint64(600+i), strategy, wantArchive)
		})
	}
}
