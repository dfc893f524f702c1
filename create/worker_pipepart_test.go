package create

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
	"github.com/s3zip/s3zip/plan"
)

// wholeProbes counts the workers' CRC probes that copy a whole source
// object, and the HEADs of sources: what learning a streamed entry's CRC-32
// costs, a PUT-class copy or a GET-class HEAD.
type wholeProbes struct {
	S3
	sizes map[string]int // source key → size
	mu    sync.Mutex
	whole int
	heads int
}

func (c *wholeProbes) UploadPartCopy(ctx context.Context, in *s3.UploadPartCopyInput, optFns ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	if strings.Contains(aws.ToString(in.Key), "part-probe-") {
		src, _ := url.PathUnescape(strings.TrimPrefix(aws.ToString(in.CopySource), "src/"))
		src, _, _ = strings.Cut(src, "?")
		if rng := aws.ToString(in.CopySourceRange); rng == "" || rng == fmt.Sprintf("bytes=0-%d", c.sizes[src]-1) {
			c.mu.Lock()
			c.whole++
			c.mu.Unlock()
		}
	}
	return c.S3.UploadPartCopy(ctx, in, optFns...)
}

func (c *wholeProbes) HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if aws.ToString(in.Bucket) == "src" {
		c.mu.Lock()
		c.heads++
		c.mu.Unlock()
	}
	return c.S3.HeadObject(ctx, in, optFns...)
}

// A worker piping a part of whole small objects whose CRC-32s the plan
// lacks asks S3 for the CRC-32 it stores of each (a HEAD, priced as a GET)
// instead of copying each into its probe upload (an UploadPartCopy, priced
// as a PUT: 12.5 times as much), as the model prices it (plan.WholeData);
// objects stored without one are still probed, and every archive is whole.
func TestWorkerAsksStoredCRCsBeforeProbing(t *testing.T) {
	for _, c := range []struct {
		checksum   s3test.Checksum
		wantProbes bool
	}{{s3test.ChecksumCRC32, false}, {s3test.ChecksumNone, true}} {
		t.Run("checksum-"+string(c.checksum), func(t *testing.T) {
			objects := []object{
				{"in/a.bin", 1 * mib, c.checksum}, {"in/b.bin", 2 * mib, c.checksum}, {"in/c.bin", 3*mib + 17, c.checksum},
				{"in/d.bin", 7 * mib, c.checksum}, {"in/e.bin", 6 * mib, c.checksum},
			}
			e := newEnv(t, objects)
			counted := &wholeProbes{S3: e.s3, sizes: map[string]int{}}
			for _, o := range objects {
				counted.sizes[o.key] = o.size
			}
			r := e.runner()
			r.S3 = counted
			res, err := r.Run(context.Background(), request("duo", "in/", "out/a.zip", ""), "exec-unprobed")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("checksum %q: %d whole-object probes, %d HEADs of sources; stats %+v", c.checksum, counted.whole, counted.heads, res.Output.Stats)
			if res.Output.Stats.UploadParts == 0 || res.Output.Stats.CopyParts == 0 {
				t.Fatalf("stats %+v: no part streams small objects beside a copy: the case tests nothing", res.Output.Stats)
			}
			if got := counted.whole > 0; got != c.wantProbes {
				t.Errorf("%d probes copied a whole source object: want them only where S3 stores no CRC-32 (%v)", counted.whole, c.wantProbes)
			}
			e.checkArchive(t, "out/a.zip", "in/")
			e.assertClean(t)
		})
	}
}

// A part that streams the start of an object whose rest the job copies
// learns the object's CRC-32 itself: the plan has it (a manifest, a read
// pass) or the worker asks S3 for the one it stores before the copy (the
// planner no longer does: plan.CarriedTail). With it, S3's answer for the
// rest tells the start's CRC-32 (zipformat.SplitCRC), and the part is piped
// with no probe, as the model prices it. The fake answers as S3 does (the
// copied range's CRC-32), or as versitygw 1.8 does (the whole object's
// checksum, which is why this runs on the fake): the worker believes no
// such answer, streams that copy instead, and learns the rest's CRC-32 from
// its bytes; either way the part is right.
func TestWorkerLearnsAStreamedStartFromTheCopiedRest(t *testing.T) {
	for _, c := range []struct {
		planned, lies bool
	}{{true, false}, {true, true}, {false, false}, {false, true}} {
		lies := c.lies
		t.Run(fmt.Sprintf("planned-%v/whole-checksum-answer-%v", c.planned, lies), func(t *testing.T) {
			f, in := batchCRC(t, c.planned, 3*plan.MiB, 7*plan.MiB)
			f.copyCRC, f.headCRC = true, true
			if len(in.Items) != 1 || len(in.Items[0].Carried) != 1 || in.Items[0].Carried[0].CarriedAs != plan.CarriedTail {
				t.Fatalf("items %+v: want one upload part carrying the copy of an object's rest", in.Items)
			}
			carried := in.Items[0].Carried[0]
			whole := f.objects["src/"+carried.Source.Key]
			if lies {
				f.stored["src/"+carried.Source.Key] = s3part.CRCBase64(crcOf(whole))
			}
			out, err := (&Worker{S3: f}).Handle(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if f.probed > 0 {
				t.Errorf("%d probe copies for a start whose CRC-32 the copied rest tells: want none", f.probed)
			}
			if asked := f.calls["HeadObject src/"+carried.Source.Key]; asked != map[bool]int{true: 0, false: 1}[c.planned] {
				t.Errorf("%d HEADs of the object whose rest was copied: want one only when the plan lacks its CRC-32", asked)
			}
			// The part as uploaded is the part as assembled from the sources.
			entries, err := plan.DecodeEntries(bytes.NewReader(f.objects["work/w/entries.jsonl"]))
			if err != nil {
				t.Fatal(err)
			}
			for i := range entries {
				entries[i].CRC32 = plan.KnownCRC(crcOf(f.objects["src/"+entries[i].Source.Key]))
			}
			checkAssembled(t, f, &in.Items[0], entries)
			if len(out.Parts) != 2 {
				t.Errorf("results %+v: want the part and its carried copy", out.Parts)
			}
		})
	}
}

// A chain part's worker learns the CRC-32s its headers need and the plan
// lacks (the planner asks for none of them: plan.Plan.CRCsNeeded), from
// S3's store, else a probe, else a read, before its first round; the
// archive is whole, whether the sources store a CRC-32 or not.
func TestChainWorkerLearnsItsCRCs(t *testing.T) {
	for _, checksum := range []s3test.Checksum{s3test.ChecksumCRC32, s3test.ChecksumNone} {
		t.Run("checksum-"+string(checksum), func(t *testing.T) {
			e := newEnv(t, []object{
				{"in/a.bin", 1 * mib, checksum}, {"in/b.txt", 2000, checksum}, {"in/c.bin", 3 * mib, checksum},
				{"in/d.bin", 6 * mib, checksum}, {"in/e.bin", 300 << 10, checksum},
			})
			res, err := e.runner().Run(context.Background(), request("chain", "in/", "out/a.zip", ""), "exec-chain-crcs")
			if err != nil {
				t.Fatal(err)
			}
			if res.Output.Stats.ChainParts == 0 {
				t.Fatalf("stats %+v: no chain part: the case tests nothing", res.Output.Stats)
			}
			e.checkArchive(t, "out/a.zip", "in/")
			e.assertClean(t)
		})
	}
}
