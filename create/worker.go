package create

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3part"

	"golang.org/x/sync/semaphore"

	"github.com/s3zip/s3zip/plan"
)

// Worker builds a batch of parts: upload parts from generated headers and
// ranged reads of sources, copy parts with ranged UploadPartCopy.
type Worker struct {
	S3     S3
	Config Config
	Log    *slog.Logger
	// Now returns the current time; nil means time.Now. Tests set it.
	Now func() time.Time
}

// BatchInput is a Distributed Map batch: the part jobs and the job.
type BatchInput struct {
	Items      []plan.PartJob `json:"Items"`
	BatchInput struct {
		Job Job `json:"job"`
	} `json:"BatchInput"`
}

// BatchResult is the worker's output: a few fields per part, whatever the
// number of entries the parts hold.
type BatchResult struct {
	Parts []PartResult `json:"parts"`
	// CRCsKey names the batchCRCs object in the job's work bucket that holds
	// the CRC-32s the batch's parts computed. It is empty when none did.
	CRCsKey string `json:"crcsKey,omitempty"`
}

// batchCRCs is the document at BatchResult.CRCsKey. It holds each part's
// PartResult.CRCs under the part's partKey.
type batchCRCs struct {
	Parts map[string]map[string]string `json:"parts"`
}

// crcsKey returns the key of a batch's CRC-32 document. A batch is named by
// its first part, so a retried batch writes the same object again, with the
// same CRCs.
func crcsKey(job *Job, first *plan.PartJob) string {
	return fmt.Sprintf("%scrcs/%s.json", job.WorkPrefix, strings.ReplaceAll(partKey(first.Archive, first.Number), "/", "-"))
}

// putCRCs writes the CRC-32s the batch's parts computed to the work prefix
// and names the object in out.
func putCRCs(ctx context.Context, c S3, job *Job, first *plan.PartJob, out *BatchResult) error {
	doc := batchCRCs{Parts: map[string]map[string]string{}}
	for _, r := range out.Parts {
		if len(r.CRCs) > 0 {
			doc.Parts[partKey(r.Archive, r.Part)] = r.CRCs
		}
	}
	if len(doc.Parts) == 0 {
		return nil
	}
	key := crcsKey(job, first)
	if err := writeJSON(ctx, c, job.WorkBucket, key, doc); err != nil {
		return fmt.Errorf("the batch's CRC-32s: %w", err)
	}
	out.CRCsKey = key
	return nil
}

// Handle builds every part of the batch, a bounded number at a time within a
// memory budget. The first error stops the batch. Parts are idempotent, so a
// retried batch uploads the same bytes under the same part numbers. Near the
// Lambda deadline it stops starting parts and returns DeadlineError.
func (w *Worker) Handle(ctx context.Context, in BatchInput) (*BatchResult, error) {
	job := in.BatchInput.Job
	if job.UploadID == "" && job.Archives == 0 || job.WorkBucket == "" || job.EntriesKey == "" {
		return nil, fmt.Errorf("batch input has no job (uploadId, workBucket, entriesKey): the Map's BatchInput must carry the planner's output")
	}
	log := logger(w.Log).With("execution", job.Execution)
	b := w.partBuilder(&job)
	defer b.probe.close(ctx)
	results, started, err := b.buildAll(ctx, in.Items)
	if err != nil {
		log.Error("batch failed", "error", err.Error())
		return nil, err
	}
	if started < len(in.Items) {
		if _, hasDeadline := ctx.Deadline(); ctx.Err() != nil && !hasDeadline {
			return nil, ctx.Err()
		}
		return nil, &DeadlineError{Done: started, Left: len(in.Items) - started}
	}
	out := &BatchResult{}
	for _, r := range results {
		out.Parts = append(out.Parts, r...)
	}
	if len(in.Items) > 0 {
		if err := putCRCs(ctx, w.S3, &job, &in.Items[0], out); err != nil {
			return nil, err
		}
	}
	log.Info("batch built", "parts", len(out.Parts))
	return out, nil
}

// partBuilder builds the parts of one batch. Its fields hold what every part
// of the batch shares, and a part's own inputs are its methods' arguments.
type partBuilder struct {
	s3  S3
	cfg Config
	job *Job
	// probe is the upload the batch's CRC probes copy into. It is the batch's
	// own, never the archive's, and is aborted when the batch ends.
	probe *crcProbe
	log   *slog.Logger
	now   func() time.Time
}

// partBuilder returns the builder of a batch of job's parts.
func (w *Worker) partBuilder(job *Job) *partBuilder {
	now := w.Now
	if now == nil {
		now = time.Now
	}
	return &partBuilder{s3: w.S3, cfg: w.Config.Defaults(), job: job, log: logger(w.Log), now: now,
		probe: &crcProbe{c: w.S3, bucket: job.WorkBucket, key: fmt.Sprintf("%spart-probe-%s", job.WorkPrefix, newAttempt())}}
}

// buildAll builds items and returns their results by item, how many items it
// started, and the first error. It builds the job's PartsInFlight parts at a
// time, or cfg.PartConcurrency when the job does not say, within
// cfg.MemoryBudget. At most cfg.PartConcurrency of them are upload parts,
// which hold their bytes and a fan-out of GETs, and a Lambda has 1,024 file
// descriptors. Near the context's deadline it starts no more.
func (b *partBuilder) buildAll(ctx context.Context, items []plan.PartJob) ([][]PartResult, int, error) {
	cfg, log := b.cfg, b.log.With("execution", b.job.Execution)
	deadline, hasDeadline := ctx.Deadline()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mem := semaphore.NewWeighted(cfg.MemoryBudget)
	inFlight := cfg.PartConcurrency
	if b.job.PartsInFlight > 0 {
		inFlight = b.job.PartsInFlight // what the plan was priced with
	}
	slots := make(chan struct{}, inFlight)
	uploads := make(chan struct{}, cfg.PartConcurrency) // plan.Model.UploadsInFlight
	var (
		mu       sync.Mutex
		firstErr error
		results  = make([][]PartResult, len(items))
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		mu.Unlock()
	}
	started := 0
	for i := range items {
		item := &items[i]
		if hasDeadline && deadline.Sub(b.now()) < cfg.DeadlineMargin {
			break
		}
		need := int64(0)
		if item.Kind == plan.PartUpload {
			need = min(item.Size(), cfg.MemoryBudget)
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		upload := item.Kind == plan.PartUpload
		if upload {
			select {
			case uploads <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
		}
		if err := mem.Acquire(ctx, need); err != nil {
			break
		}
		started++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				mem.Release(need)
				if upload {
					<-uploads
				}
				<-slots
			}()
			t0 := b.now()
			r, err := b.forArchive(item).buildJob(ctx, item)
			if err != nil {
				fail(fmt.Errorf("%spart %d (%s, bytes %d-%d): %w", archiveOf(item), item.Number, item.Kind, item.Start, item.End-1, err))
				return
			}
			results[i] = r
			log.Debug("part built", "part", item.Number, "kind", item.Kind, "bytes", item.Size(), "millis", b.now().Sub(t0).Milliseconds())
		}()
	}
	wg.Wait()
	return results, started, firstErr
}

// forArchive returns the builder of item's archive in a split run. It is b,
// sending to the upload the part job names.
func (b *partBuilder) forArchive(item *plan.PartJob) *partBuilder {
	if item.Upload == nil {
		return b
	}
	a := *b
	a.job = b.job.forArchive(item.Upload)
	return &a
}

// archiveOf names the archive of a split run's part in a message.
func archiveOf(item *plan.PartJob) string {
	if item.Upload == nil {
		return ""
	}
	return item.Upload.Key + " "
}

// buildJob builds a part job. It first copies the parts the job carries,
// whose CRC-32s S3's answers teach into a copyCRCs, then builds the part
// itself, whose headers need them.
func (b *partBuilder) buildJob(ctx context.Context, item *plan.PartJob) ([]PartResult, error) {
	var out []PartResult
	known := newCopyCRCs()
	for k := range item.Carried {
		c := &item.Carried[k]
		if c.Kind != plan.PartCopy || c.Source == nil {
			return nil, fmt.Errorf("carried part %d is a %s part; only copies are carried", c.Number, c.Kind)
		}
		r, err := b.carry(ctx, c, known)
		if err != nil {
			return nil, fmt.Errorf("carried part %d: %w", c.Number, err)
		}
		out = append(out, *r)
	}
	r, err := b.buildPart(ctx, item, known)
	if err != nil {
		return nil, err
	}
	out = append([]PartResult{*r}, out...)
	for k := range out {
		out[k].Archive = item.Archive // the finalizer completes each archive of a split run
	}
	return out, nil
}

// carry copies a carried part and records what S3's answer teaches of its
// entry's CRC-32 in known.
func (b *partBuilder) carry(ctx context.Context, c *plan.PartJob, known *copyCRCs) (*PartResult, error) {
	if err := b.askBeforeCopy(ctx, c, known); err != nil {
		return nil, err
	}
	r, err := b.copyPart(ctx, c)
	if err != nil {
		return nil, err
	}
	return r, b.learnFromCopy(ctx, c, r.ChecksumCRC32, known)
}

// buildPart builds the part itself, given what its job's copies taught.
func (b *partBuilder) buildPart(ctx context.Context, item *plan.PartJob, known *copyCRCs) (*PartResult, error) {
	switch item.Kind {
	case plan.PartCopy:
		return b.copyPart(ctx, item)
	case plan.PartChain:
		return b.chainPart(ctx, item, known)
	case plan.PartUpload:
		entries, err := readEntries(ctx, b.s3, b.job, item)
		if err != nil {
			return nil, err
		}
		known.apply(entries)
		// pipePart sends the part in one pass when its CRC-32s can be had
		// without reading. Otherwise, or when S3 finds the piped bytes'
		// CRC-32 wrong, the part is assembled.
		r, err := b.pipePart(ctx, &item.Part, entries, known)
		if err != nil && !errors.Is(err, errNotPiped) && !s3err.IsCode(err, "BadDigest") {
			return nil, err
		}
		if err != nil {
			b.log.Debug("part assembled, not piped", "execution", b.job.Execution, "part", item.Number, "reason", err.Error())
			r, err = b.upload().uploadPart(ctx, &item.Part, entries, known.tails, nil) // worker parts end before the directory
			if err != nil {
				return nil, err
			}
		}
		r.addCRCs(known.whole)
		return r, nil
	}
	return nil, fmt.Errorf("part kind %q is not built by this worker", item.Kind)
}

// readEntries reads the part's entries from the plan with one ranged GET.
func readEntries(ctx context.Context, c S3, job *Job, item *plan.PartJob) ([]plan.PlacedEntry, error) {
	if item.Count == 0 {
		return nil, nil
	}
	from, to := item.EntriesRange[0], item.EntriesRange[1]
	buf := make([]byte, to-from)
	if err := getRange(ctx, c, &sourceRef{Bucket: job.WorkBucket, Key: job.EntriesKey, work: true}, from, buf); err != nil {
		return nil, fmt.Errorf("plan entries: %w", err)
	}
	entries, err := plan.DecodeEntries(bytes.NewReader(buf))
	if err != nil {
		return nil, err
	}
	if len(entries) != item.Count || entries[0].Index != item.First {
		first := plan.EntryIndex(-1)
		if len(entries) > 0 {
			first = entries[0].Index
		}
		return nil, fmt.Errorf("plan entries bytes %d-%d hold %d entries from %d, want %d from %d", from, to-1, len(entries), first, item.Count, item.First)
	}
	return entries, nil
}

// upload returns the archive's upload that b sends parts to.
func (b *partBuilder) upload() archiveUpload { return archiveUpload{c: b.s3, cfg: b.cfg, job: b.job} }

// copyPart copies a range of a source into the upload, pinned by ETag.
func (b *partBuilder) copyPart(ctx context.Context, item *plan.PartJob) (*PartResult, error) {
	job := b.job
	src := item.Source
	if src == nil {
		return nil, fmt.Errorf("copy part has no source")
	}
	from, to := item.SourceRange[0], item.SourceRange[1]
	stored, err := b.storedForRange(ctx, item)
	if err != nil {
		return nil, err
	}
	in := s3part.CopyPart(destPart(job, item.Number), pinned(*src, item.SourceSize), from, to)
	out, err := b.s3.UploadPartCopy(ctx, in)
	if err != nil {
		return nil, s3Error("UploadPartCopy", src.Bucket, src.Key, true, err)
	}
	etag, got, err := copied(out, src.Bucket, src.Key)
	if err != nil {
		return nil, err
	}
	if reason := implausibleCopyCRC(stored, wholeCopy(item), got); reason != "" {
		// If-Match pinned the copied bytes, but a part checksum that is not
		// theirs would fail the completion or be stored as the archive's.
		// versitygw 1.8 reports the source's stored checksum for a copy.
		// The same part number uploaded again, streamed with a checksum
		// computed from its bytes, replaces the copy whatever the range's
		// size; docs/versitygw.md, "Which copy answer is trusted when".
		// It is logged at Info because it is how such a server is handled,
		// not a fault of the run.
		b.log.Info("server reported an implausible CRC-32 for a copied part; streaming the range instead",
			"execution", job.Execution, "part", item.Number, "source", "s3://"+src.Bucket+"/"+src.Key, "reason", reason, "bytes", item.Size())
		withStored := *item
		withStored.CRC32 = stored // what tells the range's CRC-32 with the least reading
		r, err := b.streamCopyRange(ctx, &withStored)
		if err != nil {
			return nil, fmt.Errorf("copy of s3://%s/%s bytes %d-%d: S3 reported %s (%s); streaming the range instead: %w", src.Bucket, src.Key, from, to-1, got, reason, err)
		}
		return r, nil
	}
	return &PartResult{Part: item.Number, ETag: etag, ChecksumCRC32: got, CopiedBytes: item.Size()}, nil
}
