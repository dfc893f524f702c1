package extract

// The extract workflow has four handlers, which
// statemachine/extract.asl.json runs as Plan, a Distributed Map of Batch,
// Finalize, and Abort on any failure. Run in local.go runs the same
// handlers in process for the CLI.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/s3prefix"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/objmeta"
	"github.com/s3zip/s3zip/zipread"
)

// ExecutionMetadata is the user metadata key, x-amz-meta-s3zip-execution,
// that carries the execution name on every object an extraction writes.
// Abort deletes only objects that carry its own.
const ExecutionMetadata = "s3zip-execution"

// RequestDoc is the extract request, the state machine's input.
type RequestDoc struct {
	Archive struct {
		Bucket string `json:"bucket"`
		Key    string `json:"key"`
	} `json:"archive"`
	// Destination is optional. Without it the archive is extracted into
	// the deployment's DestinationPrefix + its name, as Config.derivedPrefix says.
	Destination *struct {
		Bucket string `json:"bucket"`
		Prefix string `json:"prefix"`
	} `json:"destination,omitempty"`
	Options struct {
		Overwrite       bool  `json:"overwrite,omitempty"`
		SkipUnsupported bool  `json:"skipUnsupported,omitempty"`
		SmallStored     int64 `json:"smallStored,omitempty"`
		ReadGroup       int64 `json:"readGroup,omitempty"`
		CopyPart        int64 `json:"copyPart,omitempty"`
		MaxConcurrency  int   `json:"maxConcurrency,omitempty"`
		// ContentTypes maps extensions, "html" or ".html", to the
		// Content-Type every entry with one gets, as --content-type gives them.
		ContentTypes map[string]string `json:"contentTypes,omitempty"`
	} `json:"options"`
}

// PlanInput is the Plan state's payload.
type PlanInput struct {
	Request   json.RawMessage `json:"request"`
	Execution string          `json:"execution"`
}

// Extraction is the planner's output and the state every later step gets.
// It is small whatever the archive, since the jobs are in the work bucket.
type Extraction struct {
	Execution string `json:"execution"`
	Archive   struct {
		Bucket        string `json:"bucket"`
		Key           string `json:"key"`
		ETag          string `json:"etag"`
		Size          int64  `json:"size"`
		ChecksumCRC32 string `json:"checksumCRC32,omitempty"`
	} `json:"archive"`
	DestBucket string `json:"destinationBucket"`
	Prefix     string `json:"prefix"`
	Overwrite  bool   `json:"overwrite"`
	// ReplacesReport says a report was at the report's key when planned,
	// as Item.Replaces says of an entry's key.
	ReplacesReport bool      `json:"replacesReport,omitempty"`
	Started        time.Time `json:"started"` // less a margin for clocks, so uploads begun since may be this run's
	WorkBucket     string    `json:"workBucket"`
	WorkPrefix     string    `json:"workPrefix"` // this execution's, ends in /
	JobsKey        string    `json:"jobsKey"`    // JSONL, one Job a line, the Map's ItemReader
	SkippedKey     string    `json:"skippedKey,omitempty"`
	// Jobs is how many jobs there are; at 0 nothing is extracted and the Map is skipped.
	Jobs           int   `json:"jobs"`
	BatchSize      int   `json:"batchSize"`      // MaxItemsPerBatchPath
	MaxConcurrency int   `json:"maxConcurrency"` // MaxConcurrencyPath
	Entries        int   `json:"entries"`
	Objects        int   `json:"objects"`
	Bytes          int64 `json:"bytes"`
	Copied         int64 `json:"copiedBytes"`
	Read           int64 `json:"readBytes"`
	Skipped        int   `json:"skipped"`
	// ReadBelow is the size below which STORED entries are read rather
	// than copied, as options.smallStored or the model chose it.
	ReadBelow int64 `json:"readBelow"`
	ReadAll   bool  `json:"readAll,omitempty"` // Plan.ReadAll
	// Writes is the PUT, COPY and POST requests the jobs make to the
	// destination. WriteSeconds is the least time plan.Model.S3WriteRate
	// allows them under one prefix, as S3 serves a prefix until it splits it
	// under load, however many workers run.
	Writes       int     `json:"writes"`
	WriteSeconds float64 `json:"writeSeconds"`
}

func (e *Extraction) archive() *zipread.Archive {
	return &zipread.Archive{Bucket: e.Archive.Bucket, Key: e.Archive.Key, ETag: e.Archive.ETag, Size: e.Archive.Size, ChecksumCRC32: e.Archive.ChecksumCRC32}
}

// reportKey returns the report object's key.
func (e *Extraction) reportKey() string { return e.Prefix + ReportName }

// extractionName names the Extraction's copy in its work prefix.
const extractionName = "extraction.json"

// maxJobJSON bounds one job's JSON, so that a batch fits the Distributed
// Map's 256 KiB input, the ItemBatcher's MaxInputBytesPerBatch.
const maxJobJSON = 64 << 10

// Planner is the Plan state's handler.
type Planner struct {
	S3     Client
	Config Config
	Log    *slog.Logger
}

// Handle reads the archive's end records and central directory with ranged
// GETs, pinned by its ETag from then on. It refuses a bad archive or existing
// objects before anything is written, and writes the jobs to the work prefix.
func (p *Planner) Handle(ctx context.Context, in PlanInput) (*Extraction, error) {
	cfg := p.Config.Defaults()
	ex, opts, err := readRequest(cfg, in)
	if err != nil {
		return nil, err
	}
	plan, err := p.layOut(ctx, cfg, ex, opts)
	if err != nil {
		return nil, err
	}
	if err := p.writeJobs(ctx, ex, plan); err != nil {
		return nil, err
	}
	logf(p.Log).Info("extraction planned", "execution", ex.Execution, "archive", ex.archive().String(), "entries", ex.Entries,
		"objects", ex.Objects, "writes", ex.Writes, "writeSeconds", ex.WriteSeconds, "jobs", ex.Jobs, "copied", ex.Copied, "read", ex.Read, "readBelow", ex.ReadBelow, "skipped", ex.Skipped)
	return ex, nil
}

// readRequest decodes and checks the request before anything is read, and
// returns the extraction it asks for and the options it plans with.
func readRequest(cfg Config, in PlanInput) (*Extraction, Options, error) {
	started := time.Now().Add(-5 * time.Minute)
	var req RequestDoc
	dec := json.NewDecoder(bytes.NewReader(in.Request))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, Options{}, requestError("%v (want {\"archive\":{\"bucket\",\"key\"},\"destination\":{\"bucket\",\"prefix\"},\"options\":{…}}; docs/contract.md)", err)
	}
	if in.Execution == "" {
		return nil, Options{}, requestError("no execution name")
	}
	ex := &Extraction{Execution: in.Execution, Started: started, WorkBucket: cfg.WorkBucket, WorkPrefix: cfg.ExecutionPrefix(in.Execution)}
	ex.Archive.Bucket, ex.Archive.Key = req.Archive.Bucket, req.Archive.Key
	var problems []string
	if req.Archive.Bucket == "" || req.Archive.Key == "" || strings.HasSuffix(req.Archive.Key, "/") {
		problems = append(problems, "archive: want a bucket and the key of a ZIP object")
	} else if !s3prefix.Allowed(cfg.AllowedArchives, req.Archive.Bucket, req.Archive.Key) {
		problems = append(problems, fmt.Sprintf("archive s3://%s/%s is outside the archives this deployment may read (%s)", req.Archive.Bucket, req.Archive.Key, strings.Join(cfg.AllowedArchives, ", ")))
	}
	problems = append(problems, destination(cfg, &req, ex)...)
	o := req.Options
	if o.SmallStored < -1 || o.ReadGroup < 0 || o.CopyPart < 0 || o.MaxConcurrency < 0 {
		problems = append(problems, "options: sizes and maxConcurrency must not be negative (smallStored may be -1: copy every STORED entry)")
	}
	var types objmeta.ContentTypes
	for _, ext := range slices.Sorted(maps.Keys(o.ContentTypes)) {
		if err := types.ParseOverride(ext + "=" + o.ContentTypes[ext]); err != nil {
			problems = append(problems, "options.contentTypes: "+err.Error())
		}
	}
	if len(problems) > 0 {
		return nil, Options{}, &failure.RequestError{Of: "extract", Problems: problems}
	}
	ex.Overwrite = o.Overwrite
	ex.BatchSize, ex.MaxConcurrency = cfg.BatchSize, cfg.MaxConcurrency
	if o.MaxConcurrency > 0 {
		ex.MaxConcurrency = o.MaxConcurrency
	}
	return ex, Options{SkipUnsupported: o.SkipUnsupported, SmallStored: o.SmallStored, ReadGroup: o.ReadGroup, CopyPart: o.CopyPart, Model: cfg.Model,
		ContentTypes: types}, nil
}

// destination sets where the request extracts to, the one it names or the
// deployment's for the archive, and says what is wrong with it.
func destination(cfg Config, req *RequestDoc, ex *Extraction) []string {
	var problems []string
	if d := req.Destination; d != nil {
		ex.DestBucket, ex.Prefix = d.Bucket, d.Prefix
		if d.Bucket == "" {
			problems = append(problems, "destination.bucket is empty")
		}
		if d.Prefix != "" && !strings.HasSuffix(d.Prefix, "/") {
			problems = append(problems, fmt.Sprintf("destination.prefix %q must end in /", d.Prefix))
		}
	} else if req.Archive.Key != "" {
		ex.DestBucket = cfg.DestinationBucket
		if ex.DestBucket == "" {
			ex.DestBucket = req.Archive.Bucket
		}
		var err error
		if ex.Prefix, err = cfg.derivedPrefix(req.Archive.Key); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if strings.HasPrefix(ex.Prefix, cfg.WorkPrefix) {
		problems = append(problems, fmt.Sprintf("destination s3://%s/%s is under the work prefix %s, which s3zip keeps for its work objects and cleanup deletes: choose a prefix outside it", ex.DestBucket, ex.Prefix, cfg.WorkPrefix))
	}
	if ex.DestBucket != "" && !s3prefix.Allowed(cfg.AllowedDestinations, ex.DestBucket, ex.Prefix) {
		problems = append(problems, fmt.Sprintf("destination s3://%s/%s is outside the destinations this deployment may write (%s)", ex.DestBucket, ex.Prefix, strings.Join(cfg.AllowedDestinations, ", ")))
	}
	return problems
}

// layOut opens the archive, pins it in ex, and plans its jobs. It refuses
// an archive it cannot extract, and keys that hold objects unless the
// request overwrites them.
func (p *Planner) layOut(ctx context.Context, cfg Config, ex *Extraction, opts Options) (*Plan, error) {
	a, err := zipread.Open(ctx, p.S3, ex.Archive.Bucket, ex.Archive.Key)
	if err != nil {
		return nil, err
	}
	ex.Archive.ETag, ex.Archive.Size, ex.Archive.ChecksumCRC32 = a.ETag, a.Size, a.ChecksumCRC32
	ex.Entries = len(a.Entries)
	checked, err := Check(a, ex.Prefix, opts)
	if err != nil {
		return nil, err
	}
	if reserved := Reserved(a, ex.DestBucket, ex.Prefix, cfg.WorkPrefix, checked.Keep); len(reserved) > 0 {
		return nil, &EntriesRefusedError{Archive: a.String(), Entries: reserved, Fix: "extract into another prefix; nothing was written"}
	}
	starts, err := a.DataStarts(ctx, Copies(a, checked.Keep, opts), 16)
	if err != nil {
		return nil, sourceChanged(err, a)
	}
	plan, err := PlanJobs(a, ex.Prefix, checked, starts, opts)
	if err != nil {
		return nil, err
	}
	if err := markExisting(ctx, p.S3, ex, plan); err != nil {
		return nil, err
	}
	return plan, nil
}

// writeJobs writes the plan's jobs, cut to fit the Map's input, the
// entries it skips and the extraction itself to the work prefix, and counts
// them in ex.
func (p *Planner) writeJobs(ctx context.Context, ex *Extraction, plan *Plan) error {
	jobs := splitForMap(plan.Jobs)
	ex.Jobs, ex.Objects, ex.Bytes, ex.Copied, ex.Read, ex.Skipped = len(jobs), plan.Objects, plan.Bytes, plan.Copied, plan.Read, len(plan.Skipped)
	ex.ReadBelow, ex.ReadAll = plan.ReadBelow, plan.ReadAll
	for i := range jobs {
		ex.Writes += jobs[i].Writes()
	}
	if rate := p.Config.model().S3WriteRate; rate > 0 {
		ex.WriteSeconds = float64(ex.Writes) / rate
	}
	if len(plan.Skipped) > 0 {
		ex.SkippedKey = ex.WorkPrefix + "skipped.json"
		doc, _ := json.Marshal(plan.Skipped)
		if err := putWork(ctx, p.S3, ex.WorkBucket, ex.SkippedKey, doc); err != nil {
			return err
		}
	}
	ex.JobsKey = ex.WorkPrefix + "jobs.jsonl"
	if err := putJobs(ctx, p.S3, ex, jobs); err != nil {
		return err
	}
	// The state is kept beside the jobs for Aborter.AbortDead, which finds
	// the work of a run killed before its Abort could run.
	doc, _ := json.Marshal(ex)
	return putWork(ctx, p.S3, ex.WorkBucket, ex.WorkPrefix+extractionName, doc)
}

// putJobs puts the jobs as JSON Lines, numbered, spooled to $TMPDIR as they
// are encoded. A million entries' jobs are some hundreds of MB, which a
// buffer would hold beside the jobs themselves, twice while it grows.
func putJobs(ctx context.Context, c Client, ex *Extraction, jobs []Job) error {
	f, err := os.CreateTemp("", "s3zip-extract-jobs-*.jsonl")
	if err != nil {
		return fmt.Errorf("spool the jobs: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	crc := crc32.NewIEEE()
	w := bufio.NewWriterSize(io.MultiWriter(f, crc), 1<<20)
	enc := json.NewEncoder(w) // each value and a newline, as json.Marshal writes it
	for i := range jobs {
		jobs[i].Index = i
		if err := enc.Encode(&jobs[i]); err != nil {
			return fmt.Errorf("spool the jobs: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("spool the jobs: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("spool the jobs: %w", err)
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: &ex.WorkBucket, Key: &ex.JobsKey, Body: io.NewSectionReader(f, 0, size), ContentLength: aws.Int64(size),
		ChecksumCRC32: aws.String(s3part.CRCBase64(crc.Sum32()))})
	if err != nil {
		return classifyS3(fmt.Errorf("put work object s3://%s/%s: %w", ex.WorkBucket, ex.JobsKey, err))
	}
	return nil
}

// markExisting finds the planned keys and the report's that hold an object
// already. It refuses them unless the request overwrites, and then marks
// them in Item.Replaces, so that nothing deletes them. It holds the keys
// listed under the prefix, not the keys planned.
func markExisting(ctx context.Context, c Client, ex *Extraction, p *Plan) error {
	listed, err := under(ex.DestBucket, ex.Prefix).Keys(ctx, c)
	if err != nil {
		return fmt.Errorf("check for existing objects: %w", err)
	}
	if len(listed) == 0 {
		return nil
	}
	there := make(map[string]bool, len(listed))
	for _, k := range listed {
		there[k] = true
	}
	var exists []string
	for _, j := range p.Jobs {
		for _, it := range j.Items {
			if there[it.Key] {
				exists = append(exists, it.Key)
			}
		}
	}
	if len(exists) == 0 && !there[ex.reportKey()] {
		return nil
	}
	slices.Sort(exists)
	if !ex.Overwrite {
		e := &failure.DestinationExistsError{Bucket: ex.DestBucket, Keys: exists}
		if there[ex.reportKey()] {
			e.Report = ex.reportKey()
		}
		return e
	}
	ex.ReplacesReport = there[ex.reportKey()]
	for j := range p.Jobs {
		for i := range p.Jobs[j].Items {
			it := &p.Jobs[j].Items[i]
			it.Replaces = there[it.Key]
		}
	}
	return nil
}

// splitForMap splits read jobs whose JSON would exceed maxJobJSON into
// read jobs of neighbouring items, each reading from its first item's local
// header to its last item's bound; the pieces share the job's items.
func splitForMap(jobs []Job) []Job {
	var out []Job
	for _, j := range jobs {
		if j.Kind != KindRead {
			out = append(out, j)
			continue
		}
		cut := func(items []Item) {
			out = append(out, Job{Kind: KindRead, Items: items, Ranges: []Range{{items[0].Offset, items[len(items)-1].Bound}}})
		}
		start, size := 0, 0
		for i := range j.Items {
			b, _ := json.Marshal(&j.Items[i])
			if size+len(b) > maxJobJSON && i > start {
				cut(j.Items[start:i:i])
				start, size = i, 0
			}
			size += len(b) + 1
		}
		if start < len(j.Items) {
			cut(j.Items[start:len(j.Items):len(j.Items)])
		}
	}
	return out
}
