package create

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/s3zip/s3zip/internal/s3prefix"
	"github.com/s3zip/s3zip/plan"
)

// Config is a deployment's settings. The Lambdas read it from the
// environment; the local runner sets it directly.
type Config struct {
	WorkBucket            string   // where plans, Map results and temporary objects go
	WorkPrefix            string   // under it, one folder per execution
	DefaultMaxConcurrency int      // Distributed Map concurrency when the request gives none
	AllowedSources        []string // "bucket" or "bucket/prefix"; empty allows any
	AllowedDestinations   []string // "bucket" or "bucket/prefix"; empty allows any
	ControlBucket         string   // where request objects and manifests may also be read
	DestinationKMSKeyID   string   // default SSE-KMS key of archives, unless a request sets options.sse
	HeadConcurrency       int      // HEADs in flight while planning
	ListConcurrency       int      // ListObjectsV2 requests in flight listing a source prefix, by default s3prefix.DefaultListConcurrency
	GetConcurrency        int      // ranged GETs in flight per part being assembled
	PartConcurrency       int      // parts in flight per worker
	MemoryBudget          int64    // bytes of part buffers in flight per worker
	DeadlineMargin        time.Duration
	MaxEntries            int   // 0 for no limit
	MaxArchiveBytes       int64 // bytes one run writes, all of a split run's archives together, or 0 for no limit; the request's splitSize bounds each alone
	// KMSKeyGranted says DestinationKMSKeyID is the only customer-managed
	// key the roles may encrypt archives with, as in a deployment, where the
	// CDK grants exactly that key. A request naming another is then refused
	// before any write instead of failing at the first. A local run leaves it
	// false, because the caller's own rights apply, which only S3 can judge.
	KMSKeyGranted bool
	// PieceSize is how much of an object one read job reads and compresses.
	// It is at most half MemoryBudget, since the compressed copy is held in
	// memory.
	PieceSize int64
	// PartsPerBatch fixes how many part jobs one worker invocation builds,
	// through Job.PartsPerBatch and the BuildParts Map's ItemBatcher. The
	// default, 0, lets each plan cut its batches for its workers with plan.Fit.
	PartsPerBatch int
	// MaxReadsPerBatch bounds how many read jobs one reader invocation runs,
	// through ReadPlan.ReadsPerBatch and the ReadEntries Map's ItemBatcher.
	MaxReadsPerBatch int
	// DirectoryPartSize is the most central directory the finalizer writes
	// in one part, and its memory holds about two such parts. It sets
	// plan.Options.DirectoryPartSize, and 0 leaves the plan's default.
	DirectoryPartSize int64
	// MaxPresignSeconds is the longest download link the finalizer signs
	// when a request asks with options.presign. 0 signs none.
	MaxPresignSeconds int
	// Model is the profile of where the run happens, for auto's choices. nil
	// means AWS, as plan.DefaultModel describes it. A local run against one
	// machine's server passes that server's calibrated profile.
	Model *plan.Model
}

// Defaults fills in unset fields.
func (c Config) Defaults() Config {
	if c.WorkPrefix == "" {
		c.WorkPrefix = "s3zip-work/"
	}
	if !strings.HasSuffix(c.WorkPrefix, "/") {
		c.WorkPrefix += "/"
	}
	if c.DefaultMaxConcurrency <= 0 {
		c.DefaultMaxConcurrency = 100
	}
	if c.HeadConcurrency <= 0 {
		c.HeadConcurrency = 64
	}
	if c.ListConcurrency <= 0 {
		c.ListConcurrency = s3prefix.DefaultListConcurrency
	}
	if c.GetConcurrency <= 0 {
		c.GetConcurrency = 32
	}
	if c.PartConcurrency <= 0 {
		c.PartConcurrency = 8
	}
	if c.MemoryBudget <= 0 {
		c.MemoryBudget = 512 << 20
	}
	if c.DeadlineMargin <= 0 {
		c.DeadlineMargin = 30 * time.Second
	}
	if c.PieceSize <= 0 {
		c.PieceSize = DefaultPieceSize
	}
	c.PieceSize = min(c.PieceSize, c.MemoryBudget/2)
	if c.MaxReadsPerBatch <= 0 {
		c.MaxReadsPerBatch = DefaultMaxReadsPerBatch
	}
	return c
}

// These are the batch sizes of the two Distributed Maps, and the one source
// of these numbers. The planner writes them into the state as
// Job.PartsPerBatch and ReadPlan.ReadsPerBatch, the ASL reads them from there
// by MaxItemsPerBatchPath, the local runner batches by the same fields, and a
// deployment changes them through PARTS_PER_BATCH and MAX_READS_PER_BATCH.
const (
	// DefaultPartsPerBatch is the batch of part jobs per worker invocation a
	// caller that fixes one with PARTS_PER_BATCH usually takes. A part is
	// 5 MiB to 5 GiB, so 8 keep an invocation well inside its timeout while
	// sparing 7 of 8 child executions. Unfixed, each plan cuts its own with
	// plan.Fit, its batches' predicted time bounded by plan.MaxBatchSeconds.
	DefaultPartsPerBatch = 8
	// DefaultMaxReadsPerBatch is the most read jobs, pieces of at most
	// PieceSize, per reader invocation. There are fewer when there are few
	// jobs for the concurrency, so that every reader gets some.
	DefaultMaxReadsPerBatch = 8
)

// ConfigFromEnv reads the Lambda environment.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		WorkBucket:          getenv("WORK_BUCKET"),
		WorkPrefix:          getenv("WORK_PREFIX"),
		AllowedSources:      s3prefix.ParsePatterns(getenv("ALLOWED_SOURCE_BUCKETS")),
		AllowedDestinations: s3prefix.ParsePatterns(getenv("ALLOWED_DESTINATIONS")),
		ControlBucket:       getenv("CONTROL_BUCKET"),
		DestinationKMSKeyID: getenv("DESTINATION_KMS_KEY_ARN"),
		KMSKeyGranted:       true,
	}
	if prefix := getenv("ALLOWED_SOURCE_PREFIX"); prefix != "" {
		for i, b := range c.AllowedSources {
			if !strings.Contains(b, "/") {
				c.AllowedSources[i] = b + "/" + prefix
			}
		}
	}
	if c.WorkBucket == "" {
		return c, fmt.Errorf("WORK_BUCKET is not set: the deployment must name the work bucket")
	}
	ints := []struct {
		name string
		dst  *int
	}{
		{"DEFAULT_MAX_CONCURRENCY", &c.DefaultMaxConcurrency},
		{"HEAD_CONCURRENCY", &c.HeadConcurrency},
		{"LIST_CONCURRENCY", &c.ListConcurrency},
		{"GET_CONCURRENCY", &c.GetConcurrency},
		{"PART_CONCURRENCY", &c.PartConcurrency},
		{"MAX_ENTRIES", &c.MaxEntries},
		{"PARTS_PER_BATCH", &c.PartsPerBatch},
		{"MAX_READS_PER_BATCH", &c.MaxReadsPerBatch},
		{"MAX_PRESIGN_SECONDS", &c.MaxPresignSeconds},
	}
	for _, v := range ints {
		if s := getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return c, fmt.Errorf("%s=%q: want a whole number", v.name, s)
			}
			*v.dst = n
		}
	}
	for _, v := range []struct {
		name string
		dst  *int64
	}{{"MEMORY_BUDGET_BYTES", &c.MemoryBudget}, {"MAX_ARCHIVE_BYTES", &c.MaxArchiveBytes}, {"PIECE_SIZE_BYTES", &c.PieceSize}, {"DIRECTORY_PART_BYTES", &c.DirectoryPartSize}} {
		if s := getenv(v.name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return c, fmt.Errorf("%s=%q: want a whole number of bytes", v.name, s)
			}
			*v.dst = n
		}
	}
	return c.Defaults(), nil
}

// workPrefix is the folder of one execution's work objects.
func (c Config) workPrefix(execution string) string {
	clean := s3prefix.KeySegment(execution)
	return c.WorkPrefix + clean + "/"
}

// logger returns l, a handler's Log, or slog's default when l is nil.
func logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.Default()
}
