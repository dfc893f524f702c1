package main

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/plan"
)

// defaultWorkers is --workers for both create and plan, so that plan
// predicts the run create makes.
const defaultWorkers = 8

// requestFlags are the flags create and plan share, saying what to archive
// and how.
type requestFlags struct {
	fs                          *flags
	source, manifest, endpoint  *string
	inventory                   *string
	strategy, names, duplicates *string
	prefer                      *string
	compress, digest, sumsFile  *string
	workers, level              *int
	partSize                    *int64
	splitSize                   *int64
	splitEntries                *int
	directories, keepMetadata   *bool
}

func addRequestFlags(fs *flags, manifestHelp string) *requestFlags {
	return &requestFlags{
		fs:          fs,
		source:      fs.String("source", "", "archive every object under `s3://bucket/prefix/` (end the prefix in / to name a folder)"),
		manifest:    fs.String("manifest", "", manifestHelp),
		inventory:   fs.String("inventory", "", "archive the objects an S3 Inventory report (CSV or Parquet) lists: its `s3://bucket/…/manifest.json`; with --source, only its keys under that prefix"),
		endpoint:    fs.String("endpoint", "", "S3 endpoint `URL` (default: AWS, or $S3_ENDPOINT / $AWS_ENDPOINT_URL_S3)"),
		strategy:    fs.String("strategy", string(plan.StrategyAuto), "how parts are built: auto, stream, duo or chain"),
		prefer:      fs.String("prefer", string(plan.PreferTime), "what auto minimises: time (the fastest plan, or a cheaper one within 2% of its time) or cost (the cheapest within 1.5× of that time)"),
		names:       fs.String("names", "relative", "entry names: relative (to the prefix), flat (base names) or full (whole keys)"),
		duplicates:  fs.String("duplicates", "error", "two objects with one name: error, or suffix (\"a (2).txt\")"),
		workers:     fs.Int("workers", defaultWorkers, "parts built at once (the Distributed Map's MaxConcurrency), 1 to 10000"),
		partSize:    sizeFlag(fs, "part-size", 0, "target `size` of streamed parts (bytes, or 5MiB to 5GiB; default 16MiB)"),
		directories: fs.Bool("directories", false, "add directory entries for folder paths"),
		keepMetadata: fs.Bool("keep-metadata", false, "record each object's Content-Type, Content-Encoding, Cache-Control and user metadata in the archive "+
			"(an extra field other readers skip; s3zip extract writes them back): one HeadObject per object, in the read pass"),
		compress:     fs.String("compress", "none", "none (STORED), deflate (every entry that shrinks) or auto (skip compressed formats and entries whose start does not shrink)"),
		digest:       fs.String("digest", "", "sha256: compute every entry's SHA-256 (in the report; reads every entry)"),
		sumsFile:     fs.String("checksums-file", "", "add an entry `NAME` (e.g. SHA256SUMS) listing the digests for sha256sum -c; needs --digest sha256"),
		level:        fs.Int("level", 0, fmt.Sprintf("DEFLATE level with --compress, 1 (fastest) to 9 (smallest) (default %d)", create.DefaultLevel)),
		splitSize:    sizeFlag(fs, "split-size", 0, "split the archive into name-0001.zip, name-0002.zip, … of at most this `size` each (bytes, or 64MiB, 2GB; an entry larger stands alone), each a whole ZIP (default: one archive)"),
		splitEntries: fs.Int("split-entries", 0, "split the archive into archives of at most `N` entries each (with or without --split-size; default: no limit)"),
	}
}

// check validates the flags the way the request would be, but in the
// terms the user typed.
func (f *requestFlags) check(cmd string) error {
	var bad []string
	if _, err := plan.ParseStrategy(*f.strategy); err != nil {
		bad = append(bad, fmt.Sprintf("--strategy %q: want auto, stream, duo or chain", *f.strategy))
	}
	if _, err := plan.ParsePreference(*f.prefer); err != nil {
		bad = append(bad, fmt.Sprintf("--prefer %q: want time or cost", *f.prefer))
	} else if *f.prefer == string(plan.PreferCost) && *f.strategy != string(plan.StrategyAuto) {
		bad = append(bad, fmt.Sprintf("--prefer cost steers --strategy auto; --strategy %s is one fixed plan", *f.strategy))
	}
	if _, err := plan.ParseNamePolicy(*f.names); err != nil {
		bad = append(bad, fmt.Sprintf("--names %q: want relative, flat or full", *f.names))
	}
	if _, err := plan.ParseDuplicatePolicy(*f.duplicates); err != nil {
		bad = append(bad, fmt.Sprintf("--duplicates %q: want error or suffix", *f.duplicates))
	}
	if w := *f.workers; w < 1 || w > 10000 {
		bad = append(bad, fmt.Sprintf("--workers %d: want 1 to 10000", w))
	}
	// 0 is the request's "not given"; typed, it is a size like any other.
	if p := *f.partSize; p != 0 || f.fs.given("part-size") {
		if msg := sizeOutOfRange("part-size", p, s3part.MinPartSize, s3part.MaxPartSize); msg != "" {
			bad = append(bad, msg)
		}
	}
	switch *f.compress {
	case create.CompressNone, create.CompressDeflate, create.CompressAuto:
	default:
		bad = append(bad, fmt.Sprintf("--compress %q: want none, deflate or auto", *f.compress))
	}
	if l := *f.level; (l != 0 || f.fs.given("level")) && (l < 1 || l > 9) {
		bad = append(bad, fmt.Sprintf("--level %d: want 1 (fastest) to 9 (smallest)", l))
	} else if l != 0 && *f.compress == create.CompressNone {
		bad = append(bad, "--level applies to --compress deflate or auto; add --compress deflate")
	}
	if d := *f.digest; d != "" && d != create.DigestSHA256 {
		bad = append(bad, fmt.Sprintf("--digest %q: the only digest is sha256", d))
	}
	if *f.sumsFile != "" && *f.digest == "" {
		bad = append(bad, "--checksums-file needs --digest sha256")
	}
	// 0 is the request's "no limit"; typed, it is a limit that cannot be kept.
	if n := *f.splitSize; (n != 0 || f.fs.given("split-size")) && n < plan.MinSplitBytes {
		msg := fmt.Sprintf("--split-size %d: want at least %d bytes, the smallest archive (one empty entry with a one-character name: its two headers and the end records)", n, plan.MinSplitBytes)
		if n > 0 {
			msg += fmt.Sprintf("; a number alone is bytes: for %d mebibytes write %dMiB", n, n)
		}
		bad = append(bad, msg)
	}
	if n := *f.splitEntries; (n != 0 || f.fs.given("split-entries")) && n < 1 {
		bad = append(bad, fmt.Sprintf("--split-entries %d: want 1 or more entries an archive", n))
	}
	if len(bad) == 1 {
		return usageErrorf("%s: %s", cmd, bad[0])
	}
	if bad != nil {
		msg := fmt.Sprintf("%s: %d problems:", cmd, len(bad))
		for _, b := range bad {
			msg += "\n  " + b
		}
		return usageErrorf("%s", msg)
	}
	if err := checkEndpoint(cmd, *f.endpoint); err != nil {
		return err
	}
	return nil
}

// sourceRequest is the request's source and options from the flags.
func (f *requestFlags) sourceRequest(cmd string) (create.Request, error) {
	req := create.Request{Options: create.Options{
		Strategy: *f.strategy, Prefer: *f.prefer, Names: *f.names, Duplicates: *f.duplicates, Directories: *f.directories,
		MaxConcurrency: *f.workers, PartSize: *f.partSize, Level: *f.level, KeepMetadata: *f.keepMetadata,
		SplitSize: *f.splitSize, SplitEntries: *f.splitEntries,
	}}
	if *f.compress != create.CompressNone {
		req.Options.Compression = *f.compress
	}
	if *f.digest != "" {
		req.Options.Digests = []string{*f.digest}
	}
	req.Options.ChecksumsFile = *f.sumsFile
	switch {
	case *f.inventory != "" && *f.manifest == "":
		b, k, err := parseS3ObjectURI(*f.inventory)
		if err != nil {
			return req, usageErrorf("%s: --inventory: %v", cmd, err)
		}
		req.Source.Inventory = &create.ObjectRef{Bucket: b, Key: k}
		if *f.source != "" {
			// The prefix filters the report's keys and names entries
			// relative to it, as a listing of it would.
			if req.Source.Bucket, req.Source.Prefix, err = parseS3URI(*f.source); err != nil {
				return req, usageErrorf("%s: --source: %v", cmd, err)
			}
		}
	case *f.source != "" && *f.manifest == "":
		b, k, err := parseS3URI(*f.source)
		if err != nil {
			return req, usageErrorf("%s: --source: %v", cmd, err)
		}
		req.Source = create.Source{Bucket: b, Prefix: k}
	case *f.manifest != "" && *f.source == "" && *f.inventory == "":
		b, k, err := parseS3ObjectURI(*f.manifest)
		if err != nil {
			return req, usageErrorf("%s: --manifest: %v", cmd, err)
		}
		// Lines without a bucket name objects beside the manifest, as the CLI
		// has no flag for the request's default source bucket.
		req.Source = create.Source{Bucket: b, Manifest: &create.ObjectRef{Bucket: b, Key: k}}
	default:
		return req, usageErrorf("%s: give exactly one of --source s3://bucket/prefix/, --manifest s3://bucket/key or --inventory s3://bucket/…/manifest.json (which --source may narrow to a prefix)", cmd)
	}
	return req, nil
}

// requestFields maps the request's field names, which the workflow's
// messages use for API callers, to the flags that set them.
var requestFields = []struct {
	re   *regexp.Regexp
	flag string
}{
	{regexp.MustCompile(`set options\.overwrite to replace it`), "add --overwrite to replace it"},
	{regexp.MustCompile(`options\.overwrite`), "--overwrite"},
	{regexp.MustCompile(`options\.maxConcurrency`), "--workers"},
	{regexp.MustCompile(`options\.prefer`), "--prefer"},
	{regexp.MustCompile(`options\.partSize`), "--part-size"},
	{regexp.MustCompile(`options\.splitSize or splitEntries`), "--split-size or --split-entries"},
	{regexp.MustCompile(`options\.splitSize`), "--split-size"},
	{regexp.MustCompile(`options\.splitEntries`), "--split-entries"},
	{regexp.MustCompile(`options\.strategy`), "--strategy"},
	{regexp.MustCompile(`options\.prefer`), "--prefer"},
	{regexp.MustCompile(`options\.compression`), "--compress"},
	{regexp.MustCompile(`options\.level`), "--level"},
	{regexp.MustCompile(`options\.digests`), "--digest"},
	{regexp.MustCompile(`options\.checksumsFile`), "--checksums-file"},
	{regexp.MustCompile(`options\.names`), "--names"},
	{regexp.MustCompile(`options\.duplicates`), "--duplicates"},
	{regexp.MustCompile(`options\.directories`), "--directories"},
	{regexp.MustCompile(`options\.keepMetadata`), "--keep-metadata"},
	{regexp.MustCompile(`duplicates policy "(\w+)"`), "--duplicates $1"},
	{regexp.MustCompile(`source\.manifest(\.bucket|\.key)?`), "--manifest"},
	{regexp.MustCompile(`source\.inventory(\.bucket|\.key)?`), "--inventory"},
	{regexp.MustCompile(`source\.(bucket|prefix)`), "--source"},
	{regexp.MustCompile(`destination\.(bucket|key)`), "--dest"},
}

// cliError is an error whose message names flags where the workflow's
// named request fields; the original stays in the chain.
type cliError struct {
	msg string
	err error
}

func (e *cliError) Error() string { return e.msg }
func (e *cliError) Unwrap() error { return e.err }

// inFlagTerms rewrites the request-field names in err's message as flags.
// Only the workflow's request and destination errors speak of fields.
func inFlagTerms(err error) error {
	var re *failure.RequestError
	var de *failure.DestinationExistsError
	if err == nil || !errors.As(err, &re) && !errors.As(err, &de) {
		return err
	}
	msg := err.Error()
	if re != nil && len(re.Problems) > 1 && msg == re.Error() {
		// Print one problem a line, in the order the workflow found them,
		// which is the manifest's line order.
		msg = fmt.Sprintf("bad request (%d problems):", len(re.Problems))
		for _, p := range re.Problems {
			msg += "\n  " + p
		}
	}
	for _, f := range requestFields {
		msg = f.re.ReplaceAllString(msg, f.flag)
	}
	return &cliError{msg, err}
}
