package create

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/plan"
)

// DigestSHA256 is the one digest options.digests offers.
const DigestSHA256 = "sha256"

// needsReadPass reports whether the request asks for entries' bytes.
func (o Options) needsReadPass() bool { return o.compresses() || o.sha256() }

func (o Options) compresses() bool {
	return o.Compression == CompressDeflate || o.Compression == CompressAuto
}

func (o Options) sha256() bool {
	for _, d := range o.Digests {
		if d == DigestSHA256 {
			return true
		}
	}
	return false
}

// readJobs cuts the entries that need reading into pieces.
func readJobs(entries []plan.Entry, o Options, pieceSize int64, bucket, prefix string) []ReadJob {
	level := o.Level
	if level == 0 {
		level = DefaultLevel
	}
	var jobs []ReadJob
	for i, e := range entries {
		if e.Dir || e.Size == 0 {
			continue
		}
		compress := o.compresses() && !(o.Compression == CompressAuto && compressedExtensions[strings.ToLower(path.Ext(e.Name))])
		pieces := int((e.Size + pieceSize - 1) / pieceSize)
		if compress {
			for p := 0; p < pieces; p++ {
				off := int64(p) * pieceSize
				jobs = append(jobs, ReadJob{Entry: i, Piece: p, Pieces: pieces, Source: e.Source, Offset: off, Length: min(pieceSize, e.Size-off),
					Level: level, Auto: o.Compression == CompressAuto, SHA256: o.sha256() && pieces == 1, Bucket: bucket, Key: fmt.Sprintf("%sdeflate/%d.%d", prefix, i, p)})
			}
		}
		if o.sha256() && (!compress || pieces > 1) {
			jobs = append(jobs, ReadJob{Entry: i, Piece: -1, Pieces: 1, Source: e.Source, Length: e.Size, SHA256: true, Hash: true})
		}
	}
	return jobs
}

// ReadsDone describes a finished read round as PlanLayout gets it. It says
// what the round did, where its entries and jobs are, and where the
// ReadEntries Map wrote its results.
type ReadsDone struct {
	// Stage is the round's step of planning, StagePin, StageRead or
	// StageCRC. An empty Stage means StageRead.
	Stage      string `json:"stage,omitempty"`
	EntriesKey string `json:"entriesKey,omitempty"`
	JobsKey    string `json:"jobsKey"`
	// Results is the ResultWriter manifest the ReadEntries Map wrote, or
	// nil when there was nothing to read.
	Results *MapResults `json:"results,omitempty"`
}

// ReadPlan is the state the ReadEntries Map runs on, which the planner
// returns instead of a Job when a read round must run first. Its "reads"
// field routes the execution to the Map, and a Job has no such field.
type ReadPlan struct {
	Execution      string    `json:"execution"`
	WorkBucket     string    `json:"workBucket"`
	WorkPrefix     string    `json:"workPrefix"`
	Jobs           int       `json:"jobs"`           // the read jobs, items of Reads.JobsKey
	MaxConcurrency int       `json:"maxConcurrency"` // ReadEntries' MaxConcurrencyPath
	ReadsPerBatch  int       `json:"readsPerBatch"`  // ReadEntries' MaxItemsPerBatchPath
	Reads          ReadsDone `json:"reads"`
}

// ReadsPerBatch returns the read plan's batch size, which spreads jobs over
// the concurrency with at most most per batch. Callers pass
// Config.MaxReadsPerBatch as most for read jobs and DefaultLookupsPerBatch
// for lookups.
func ReadsPerBatch(jobs, concurrency, most int) int {
	if concurrency < 1 {
		concurrency = 1
	}
	return min(most, max(1, (jobs+concurrency-1)/concurrency))
}

// readRound hands the read jobs the entries need to the ReadEntries Map.
// When there are none, as with only empty objects, it returns the entries as
// the read pass leaves them.
func (r *planRun) readRound(ctx context.Context, entries []plan.Entry) ([]plan.Entry, *ReadPlan, error) {
	// Refused now, before anything is read or written.
	if err := checksumsFileFree(entries, r.req.Options.ChecksumsFile); err != nil {
		return nil, nil, err
	}
	jobs := readJobs(entries, r.req.Options, r.cfg.PieceSize, r.cfg.WorkBucket, r.prefix)
	if len(jobs) == 0 {
		entries, err := r.readsFinished(ctx, entries)
		return entries, nil, err
	}
	rp, err := r.handOver(ctx, StageRead, entries, jobsOf(jobs))
	return nil, rp, err
}

// readDone reads the read round's entries and results and applies them.
func (r *planRun) readDone(ctx context.Context, d *ReadsDone) ([]plan.Entry, error) {
	entries, jobs, got, err := roundBack[ReadJob](ctx, r, d)
	if err != nil {
		return nil, err
	}
	var results []ReadResult
	if err := got(func(res ReadResult) error { results = append(results, res); return nil }); err != nil {
		return nil, err
	}
	// The check runs before the read results replace compressed entries'
	// sources with their work objects, so that a clash names the user's
	// object.
	if err := checksumsFileFree(entries, r.req.Options.ChecksumsFile); err != nil {
		return nil, err
	}
	if err := r.pl.applyReads(ctx, r.cfg, entries, jobs, results); err != nil {
		return nil, err
	}
	return r.readsFinished(ctx, entries)
}

// readsFinished completes what the read pass leaves, the digests of the
// entries with nothing to read and the checksums file.
func (r *planRun) readsFinished(ctx context.Context, entries []plan.Entry) ([]plan.Entry, error) {
	if r.req.Options.sha256() {
		for i := range entries {
			if e := &entries[i]; !e.Dir && e.UncompressedSize() == 0 {
				e.SHA256 = emptySHA256 // not read, as there is nothing to read
			}
		}
	}
	if name := r.req.Options.ChecksumsFile; name != "" && !r.req.Options.splitLimits().On() {
		// A split run's archives each get their own, from listedArchives.
		return r.pl.addChecksumsFile(ctx, entries, name, r.cfg.WorkBucket, r.prefix)
	}
	return entries, nil
}

// emptySHA256 is the SHA-256 of no bytes, for entries without data, which are
// not read.
var emptySHA256 = hex.EncodeToString(func() []byte { s := sha256.Sum256(nil); return s[:] }())

// checksumsFile returns the `sha256sum -c` listing of the entries' digests in
// archive order, a checksumLine each.
func checksumsFile(entries []plan.Entry) ([]byte, error) {
	var b bytes.Buffer
	for i := range entries {
		if e := &entries[i]; !e.Dir && e.SHA256 == "" {
			return nil, fmt.Errorf("internal error: entry %q has no SHA-256 after the read pass", e.Name)
		}
		b.WriteString(checksumLine(&entries[i]))
	}
	return b.Bytes(), nil
}

// checksumLine returns an entry's line of the checksums file, "<hex>  <name>\n",
// or "" for a folder. A name with a newline or carriage return is escaped the
// way sha256sum does, with a leading backslash.
func checksumLine(e *plan.Entry) string {
	if e.Dir {
		return ""
	}
	if strings.ContainsAny(e.Name, "\n\r") {
		return "\\" + e.SHA256 + "  " + strings.NewReplacer("\n", "\\n", "\r", "\\r").Replace(e.Name) + "\n"
	}
	return e.SHA256 + "  " + e.Name + "\n"
}

// checksumsFileFree refuses a checksums file named like an entry. An empty
// name asks for no checksums file.
func checksumsFileFree(entries []plan.Entry, name string) error {
	if name == "" {
		return nil
	}
	for _, e := range entries {
		if e.Name == name {
			return requestError("options.checksumsFile %q is also the name of s3://%s/%s; choose another name", name, e.Source.Bucket, e.Source.Key)
		}
	}
	return nil
}

// addChecksumsFile writes the checksums file to the work prefix and adds its
// checksumsEntry as the last entry. checksumsFileFree has checked its name.
func (pl *Planner) addChecksumsFile(ctx context.Context, entries []plan.Entry, name, bucket, prefix string) ([]plan.Entry, error) {
	e, err := pl.checksumsEntry(ctx, entries, name, bucket, prefix+"checksums")
	if err != nil {
		return nil, err
	}
	return append(entries, e), nil
}

// checksumsEntry writes the checksums file of entries to bucket/key and
// returns its STORED entry, whose CRC-32 is known from its bytes.
func (pl *Planner) checksumsEntry(ctx context.Context, entries []plan.Entry, name, bucket, key string) (plan.Entry, error) {
	body, err := checksumsFile(entries)
	if err != nil {
		return plan.Entry{}, err
	}
	out, err := pl.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))},
		func(o *s3.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired })
	if err != nil {
		return plan.Entry{}, s3Error("PutObject", bucket, key, false, err)
	}
	return plan.Entry{Name: name, Source: plan.Source{Bucket: bucket, Key: key, ETag: aws.ToString(out.ETag)}, Size: int64(len(body)),
		ModTime: time.Now().UTC(), CRC32: plan.KnownCRC(crc32.ChecksumIEEE(body)), SHA256: fmt.Sprintf("%x", sha256.Sum256(body))}, nil
}
