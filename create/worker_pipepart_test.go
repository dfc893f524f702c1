package create

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/partwork"
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
// as a PUT: 12.5 times as much), as the model prices it (partwork.WholeData);
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
// planner does not: plan.CarriedTail). With it, S3's answer for the
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
// Complete).
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

// A part whose CRC-32s nobody knows is still piped in one pass when S3's
// answers to copies of its ranges tell them (pipePart): the bytes uploaded
// are the assembled part's, byte for byte, each source byte is read once,
// and the probes are copies into the part's own number. Ranges too small
// to probe are read ahead and sent from memory, still read once.
func TestWorkerPipesAPartWhoseCRCsCopiesTell(t *testing.T) {
	for _, sizes := range [][]int64{
		{3 * plan.MiB, 1 * plan.MiB, 7 * plan.MiB, 1000},
		{3 * plan.MiB, 3000, 2 * plan.MiB, 200 << 10, 6 * plan.MiB},
	} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) { testWorkerPipes(t, sizes) })
	}
}

func testWorkerPipes(t *testing.T, sizes []int64) {
	f, in := batchCRC(t, false, sizes...)
	f.copyCRC = true
	out, err := (&Worker{S3: f}).Handle(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := plan.DecodeEntries(bytes.NewReader(f.objects["work/w/entries.jsonl"]))
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		entries[i].CRC32 = plan.KnownCRC(crcOf(f.objects["src/"+entries[i].Source.Key]))
	}
	item := in.Items[0]
	checkAssembled(t, f, &item, entries)
	var data int64
	segs := partwork.Segments(entries[item.First:item.First+plan.EntryIndex(item.Count)], item.End, item.Start, item.End)
	for _, s := range segs {
		if s.Kind == partwork.SegmentData {
			data += s.To - s.From
		}
	}
	planned, err := plan.DecodeEntries(bytes.NewReader(f.objects["work/w/entries.jsonl"])) // CRC-32s unknown, as the worker has them
	if err != nil {
		t.Fatal(err)
	}
	mine := planned[item.First : item.First+plan.EntryIndex(item.Count)]
	probes, reads := partwork.SplitCRCProbes(mine, segs, partwork.CRCProbes(mine, segs, func(e *plan.PlacedEntry) bool { return !e.CRC32.Known }))
	t.Logf("part %d: %d segments, %d probed, %d read ahead", item.Number, len(segs), len(probes), len(reads))
	if small := sizes[1] < partwork.MinCRCProbe; small && len(reads) == 0 {
		t.Fatalf("part %d holds no range small enough to be read ahead: the case tests nothing", item.Number)
	}
	var served int64
	for _, n := range f.served {
		served += n
	}
	if entriesFile := f.served["work/w/entries.jsonl"]; served-entriesFile != data {
		t.Errorf("read %d source bytes for a part with %d bytes of data, want each once", served-entriesFile, data)
	}
	if f.calls["UploadPartCopy"] < len(item.Carried)+len(probes) || len(probes) == 0 {
		t.Errorf("%d UploadPartCopy calls for %d carried copies and %d probes: the part was not piped", f.calls["UploadPartCopy"], len(item.Carried), len(probes))
	}
	if f.probed != len(probes) {
		t.Errorf("%d copies into the probe upload for %d probes: a probe copied into the archive's upload, where a late one replaces a part", f.probed, len(probes))
	}
	// Every entry whose header the part carries has its CRC-32 reported.
	for _, e := range entries[item.First : item.First+plan.EntryIndex(item.Count)] {
		if got := out.Parts[0].CRCs[strconv.Itoa(int(e.Index))]; got != fmt.Sprintf("%08x", e.CRC32.Sum) {
			t.Errorf("entry %d: CRC %q reported, want %08x", e.Index, got, e.CRC32.Sum)
		}
	}
}

// checkAssembled says whether the part the fake holds for item is, byte for
// byte, the part assembled from the sources (entries with their CRC-32s).
func checkAssembled(t *testing.T, f *fakeS3, item *plan.PartJob, entries []plan.PlacedEntry) {
	t.Helper()
	want, _, err := plan.BuildPart(&item.Part, entries[item.First:item.First+plan.EntryIndex(item.Count)], plan.Directory{Offset: item.End}, func(reads []plan.DataRead) error {
		for _, r := range reads {
			copy(r.Dst, f.objects["src/"+r.Entry.Source.Key][r.From:r.To])
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.parts[int32(item.Number)]; !bytes.Equal(got, want) {
		t.Fatalf("part %d: %d bytes uploaded differ from the %d assembled", item.Number, len(got), len(want))
	}
}
