package extract

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/s3zip/s3zip/internal/s3prefix"
	"github.com/s3zip/s3zip/plan"
)

// Config is an extract deployment's settings. The Lambdas read it from the
// environment with ConfigFromEnv; the CLI sets it directly.
type Config struct {
	WorkBucket string // where the jobs, Map results and skipped list go
	WorkPrefix string // under it, extract/<execution>/ per execution
	// A request without a destination, as the EventBridge rule sends,
	// extracts s3://B/ArchivePrefix<name>.zip into
	// s3://DestinationBucket/DestinationPrefix<name>/. DestinationBucket
	// defaults to the archive's bucket.
	ArchivePrefix     string
	DestinationBucket string
	DestinationPrefix string
	// AllowedArchives and AllowedDestinations are "bucket" or
	// "bucket/prefix" patterns; empty allows any. The IAM roles enforce the
	// same, and these give a clear error instead of an AccessDenied.
	AllowedArchives     []string
	AllowedDestinations []string
	BatchSize           int // jobs per Distributed Map batch, its MaxItemsPerBatchPath
	MaxConcurrency      int // batches at once, its MaxConcurrencyPath, when the request gives none
	Workers             int // jobs in flight within one batch
	// Model is the profile of where the extraction runs, for the choice
	// between copying a STORED entry and reading it that sets
	// Options.ReadBelow. nil is AWS's plan.DefaultModel, as for the deployed
	// planner; a local run against one machine's server may pass its profile.
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
	if c.DestinationPrefix == "" {
		c.DestinationPrefix = "extracted/"
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 4
	}
	if c.MaxConcurrency <= 0 {
		c.MaxConcurrency = 100
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	return c
}

// ConfigFromEnv reads the Lambda environment. WORK_BUCKET is required;
// WORK_PREFIX, EXTRACT_ARCHIVE_PREFIX, EXTRACT_DESTINATION_BUCKET,
// EXTRACT_DESTINATION_PREFIX, BATCH_SIZE, DEFAULT_MAX_CONCURRENCY and
// WORKERS_PER_BATCH are optional, and ALLOWED_ARCHIVES and
// ALLOWED_DESTINATIONS list "bucket/prefix" patterns separated by commas.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		WorkBucket:          getenv("WORK_BUCKET"),
		WorkPrefix:          getenv("WORK_PREFIX"),
		ArchivePrefix:       getenv("EXTRACT_ARCHIVE_PREFIX"),
		DestinationBucket:   getenv("EXTRACT_DESTINATION_BUCKET"),
		DestinationPrefix:   getenv("EXTRACT_DESTINATION_PREFIX"),
		AllowedArchives:     s3prefix.ParsePatterns(getenv("ALLOWED_ARCHIVES")),
		AllowedDestinations: s3prefix.ParsePatterns(getenv("ALLOWED_DESTINATIONS")),
	}
	if c.WorkBucket == "" {
		return c, fmt.Errorf("WORK_BUCKET is not set: the deployment must name the work bucket")
	}
	for _, v := range []struct {
		name string
		dst  *int
	}{{"BATCH_SIZE", &c.BatchSize}, {"DEFAULT_MAX_CONCURRENCY", &c.MaxConcurrency}, {"WORKERS_PER_BATCH", &c.Workers}} {
		if s := getenv(v.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				return c, fmt.Errorf("%s=%q: want a whole number", v.name, s)
			}
			*v.dst = n
		}
	}
	return c.Defaults(), nil
}

// ExecutionPrefix returns the folder of one execution's work objects, where
// the CLI keeps its run marker too.
func (c Config) ExecutionPrefix(execution string) string {
	return c.ExecutionsPrefix() + s3prefix.KeySegment(execution) + "/"
}

// ExecutionsPrefix returns the folder of every execution's work objects.
func (c Config) ExecutionsPrefix() string { return c.WorkPrefix + "extract/" }

// derivedPrefix returns where an archive is extracted when the request names
// no destination, DestinationPrefix + the key without ArchivePrefix and ".zip" + "/".
func (c Config) derivedPrefix(key string) (string, error) {
	name := strings.TrimPrefix(key, c.ArchivePrefix)
	if ext := path.Ext(name); strings.EqualFold(ext, ".zip") {
		name = strings.TrimSuffix(name, ext)
	}
	name = strings.Trim(name, "/")
	if name == "" {
		return "", fmt.Errorf("archive key %q gives no name to extract into; name a destination", key)
	}
	return c.DestinationPrefix + name + "/", nil
}

// model returns the cost model's profile, Model or else AWS's.
func (c Config) model() plan.Model {
	if c.Model != nil {
		return *c.Model
	}
	return plan.DefaultModel
}
