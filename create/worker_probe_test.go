package create

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// lateCopies is S3 as a worker that gives up on a copy sees it: the server
// had the request and carries it out anyway, after the worker moved on.
// Copies of sources whose key ends in slow take delay; a caller whose
// context ends first gets its error while the copy still happens.
// Completions wait for such copies, as they would have landed by then.
type lateCopies struct {
	*s3test.PartSizes
	slow  string
	delay time.Duration
	late  sync.WaitGroup
}

func (c *lateCopies) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, optFns ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	if !strings.HasSuffix(*in.CopySource, c.slow) {
		return c.Client.UploadPartCopy(ctx, in, optFns...)
	}
	type result struct {
		out *s3.UploadPartCopyOutput
		err error
	}
	done := make(chan result, 1)
	c.late.Add(1)
	go func() {
		defer c.late.Done()
		time.Sleep(c.delay)
		out, err := c.Client.UploadPartCopy(context.WithoutCancel(ctx), in, optFns...)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *lateCopies) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, optFns ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	c.late.Wait()
	return c.PartSizes.CompleteMultipartUpload(ctx, in, optFns...)
}

// A part whose CRC-32s two probes tell, one of which fails at once (a
// server that answers a range of an object stored with a CRC-32 with the
// whole object's) while the other is still being copied: the worker gives
// up on the slow one and assembles the part, and the server finishes that
// copy afterwards. The probe must not have been a copy into the part's own
// number, which it would replace with its 2 MiB (EntityTooSmall at
// Complete: the compressed duo runs of issue 21 item 2).
func TestLateProbeCannotReplaceAPart(t *testing.T) {
	e := newEnv(t, []object{
		{"in/a.bin", 2 * mib, s3test.ChecksumNone},   // its CRC-32 probed whole, slowly
		{"in/b.bin", 12 * mib, s3test.ChecksumCRC32}, // its start streamed with a's, the rest copied
	})
	c := &lateCopies{PartSizes: &s3test.PartSizes{Client: e.s3, Bucket: "dst"}, slow: "in/a.bin", delay: 1500 * time.Millisecond}
	r := e.runner()
	r.S3 = c
	res, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", ""), "exec-late-probe")
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Problems(); len(p) > 0 || c.Uploads() == 0 {
		t.Errorf("%d completions checked; parts as uploaded: %v", c.Uploads(), p)
	}
	if res.Output.Stats.CopyParts == 0 {
		t.Errorf("stats %+v: nothing copied, so no part streamed b.bin's start: the case tests nothing", res.Output.Stats)
	}
	e.checkArchive(t, "out/a.zip", "in/")
	e.assertClean(t)
}
