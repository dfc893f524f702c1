package create

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3prefix"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/arena"
	"github.com/s3zip/s3zip/internal/manifest"
	"github.com/s3zip/s3zip/plan"
)

// sources lists the source prefix, reads the inventory, or reads the
// manifest and has its objects looked up, and names the entries. The
// manifest's lookups are the pin round, run in process or handed to the
// ReadEntries Map.
func (r *planRun) sources(ctx context.Context) ([]plan.Entry, *ReadPlan, error) {
	found, lines, err := r.pl.found(ctx, r.cfg, r.req, r.stored)
	if err != nil {
		return nil, nil, err
	}
	if err := entryLimit(r.cfg, len(found)); err != nil {
		return nil, nil, err
	}
	// A manifest's objects are looked up once their entries are named, so a
	// name the archive cannot take is refused before anything is written.
	entries, err := r.pl.named(r.cfg, r.req, found)
	keep := r.req.Options.KeepMetadata
	if err != nil || r.req.Source.Manifest == nil && !keep {
		return entries, nil, err
	}
	jobs, err := pinJobs(entries, lines, keep)
	if err != nil {
		return nil, nil, err
	}
	if r.here {
		entries, err = r.pinHere(ctx, entries, jobs)
		return entries, nil, err
	}
	rp, err := r.handOver(ctx, StagePin, entries, jobs)
	return nil, rp, err
}

// entryLimit refuses more entries than the deployment allows.
func entryLimit(cfg Config, n int) error {
	if cfg.MaxEntries > 0 && n > cfg.MaxEntries {
		return failure.Limit("%d entries; this deployment allows at most %d (MAX_ENTRIES)", n, cfg.MaxEntries)
	}
	return nil
}

// found lists the source prefix, reads the inventory, or reads the manifest
// with each entry's line, and refuses a source with nothing in it. A
// manifest's objects are not looked up yet. stored notes what the listing
// and the inventory say S3 stores of the objects' CRC-32s.
func (pl *Planner) found(ctx context.Context, cfg Config, req *Request, stored *storedCRCs) ([]plan.Entry, []manifest.Line, error) {
	names, _ := plan.ParseNamePolicy(req.Options.Names)
	var entries []plan.Entry
	var lines []manifest.Line
	var err error
	switch {
	case req.Source.Manifest != nil:
		entries, lines, err = pl.manifestEntries(ctx, cfg, req, names)
	case req.Source.Inventory != nil:
		entries, err = pl.inventoryEntries(ctx, cfg, req, names, stored)
	default:
		entries, err = pl.listEntries(ctx, cfg, req, names, stored)
	}
	if err != nil {
		return nil, nil, err
	}
	if len(entries) == 0 {
		where := "s3://" + req.Source.Bucket + "/" + req.Source.Prefix
		if m := req.Source.Manifest; m != nil {
			where = "manifest s3://" + m.Bucket + "/" + m.Key
		}
		if inv := req.Source.Inventory; inv != nil {
			where = fmt.Sprintf("inventory s3://%s/%s under prefix %q", inv.Bucket, inv.Key, req.Source.Prefix)
		}
		return nil, nil, requestError("%s has no objects to archive; check the bucket and prefix", where)
	}
	return entries, lines, nil
}

// named names the entries. It adds folders when asked, checks the names,
// resolves duplicates, refuses file and folder clashes and applies the entry
// limit.
func (pl *Planner) named(cfg Config, req *Request, entries []plan.Entry) ([]plan.Entry, error) {
	dups, _ := plan.ParseDuplicatePolicy(req.Options.Duplicates)
	if req.Options.Directories {
		entries = plan.AddDirectories(entries)
	}
	if err := checkSourceNames(req, entries); err != nil {
		return nil, err
	}
	if err := plan.ResolveDuplicates(entries, dups); err != nil {
		return nil, planError(err)
	}
	if err := plan.CheckFolderClashes(entries); err != nil {
		return nil, planError(err)
	}
	if err := entryLimit(cfg, len(entries)); err != nil {
		return nil, err
	}
	return entries, nil
}

// listEntries lists the source prefix with cfg.ListConcurrency requests in
// flight, and the entries come in key order, as one paginator gives them.
// Work objects, such as a killed run's plans, pads and chain rounds in
// whatever bucket it used, are never sources. A prefix inside the work
// prefix is refused, and work objects under a prefix that contains it are
// skipped.
func (pl *Planner) listEntries(ctx context.Context, cfg Config, req *Request, names plan.NamePolicy, stored *storedCRCs) ([]plan.Entry, error) {
	b, prefix := req.Source.Bucket, req.Source.Prefix
	if strings.HasPrefix(prefix, cfg.WorkPrefix) {
		return nil, requestError("source s3://%s/%s is inside the work prefix %s, which holds s3zip's temporary objects, not data to archive", b, prefix, cfg.WorkPrefix)
	}
	skipped := 0
	defer func() {
		if skipped > 0 {
			logger(pl.Log).Warn("skipped work objects under the source prefix", "source", "s3://"+b+"/"+prefix, "workPrefix", cfg.WorkPrefix, "objects", skipped)
		}
	}()
	// Pages listed ahead of their turn wait as entries, which the plan
	// holds anyway, not as S3's objects.
	page := func(objs []types.Object) []plan.Entry {
		entries := make([]plan.Entry, 0, len(objs))
		// A page's keys and ETags go in one arena.Strings block instead of
		// two strings per object held from S3's answer.
		var text arena.Strings
		n := 0
		for _, o := range objs {
			n += len(aws.ToString(o.Key)) + len(aws.ToString(o.ETag))
		}
		text.Reserve(n)
		for _, o := range objs {
			key := aws.ToString(o.Key)
			size := aws.ToInt64(o.Size)
			if key == prefix && strings.HasSuffix(key, "/") && size == 0 {
				continue // the folder marker of the prefix itself names nothing inside it
			}
			if strings.HasPrefix(key, cfg.WorkPrefix) {
				skipped++
				continue
			}
			key = text.Join(key)
			stored.note(b, key, storedKind(o.ChecksumAlgorithm, o.ChecksumType))
			entries = append(entries, plan.Entry{
				Name:    plan.NameFor(key, prefix, names),
				Source:  plan.Source{Bucket: b, Key: key, ETag: text.Join(aws.ToString(o.ETag))},
				Size:    size,
				ModTime: aws.ToTime(o.LastModified),
				Dir:     strings.HasSuffix(key, "/") && size == 0,
			})
		}
		return entries
	}
	var pages [][]plan.Entry
	under := s3prefix.Under{Bucket: b, Prefix: prefix, Named: s3Named}
	err := s3prefix.ListPages(ctx, under, pl.S3, s3prefix.ListOptions{Concurrency: cfg.ListConcurrency}, s3prefix.Pages[[]plan.Entry]{Keep: page, Each: func(listed []plan.Entry) error {
		pages = append(pages, listed)
		return nil
	}})
	if err != nil {
		return nil, err
	}
	return joinPages(pages), nil
}

// joinPages joins listed pages into one slice of the right size and lets
// each page go once it is copied. Growing a slice page by page would hold
// its last two sizes at once. The collector, whose limit lambdaenv.MemoryShare
// keeps under the function's memory, takes the pages back as the copy grows,
// so ten million entries, 1.6 GB, are not held twice.
func joinPages(pages [][]plan.Entry) []plan.Entry {
	n := 0
	for _, p := range pages {
		n += len(p)
	}
	entries := make([]plan.Entry, 0, n)
	for i := range pages {
		entries = append(entries, pages[i]...)
		pages[i] = nil
	}
	return entries
}

// manifestEntries reads the manifest and returns its lines and an entry per
// line. The entries' objects are looked up later, by pinJobs.
func (pl *Planner) manifestEntries(ctx context.Context, cfg Config, req *Request, names plan.NamePolicy) ([]plan.Entry, []manifest.Line, error) {
	m := req.Source.Manifest
	doc, err := getBytes(ctx, pl.S3, m.Bucket, m.Key, maxManifestBytes)
	if err != nil {
		return nil, nil, refError("manifest", m.Bucket, m.Key, err)
	}
	lines, err := manifest.Parse(bytes.NewReader(doc))
	if err != nil {
		return nil, nil, &failure.RequestError{Problems: []string{fmt.Sprintf("manifest s3://%s/%s: %v", m.Bucket, m.Key, err)}}
	}
	var bad []string
	entries := make([]plan.Entry, len(lines))
	for i, l := range lines {
		bucket := l.Bucket
		if bucket == "" {
			bucket = req.Source.Bucket
		}
		if bucket == "" {
			bad = append(bad, fmt.Sprintf("manifest line %d: no bucket, and the request has no source.bucket", l.LineNum))
			continue
		}
		if msg := checkBucket(fmt.Sprintf("manifest line %d bucket", l.LineNum), bucket); msg != "" {
			bad = append(bad, msg)
			continue
		}
		if strings.HasPrefix(l.Key, cfg.WorkPrefix) {
			bad = append(bad, fmt.Sprintf("manifest line %d: s3://%s/%s is under the work prefix %s, which holds s3zip's temporary objects, not data to archive", l.LineNum, bucket, l.Key, cfg.WorkPrefix))
			continue
		}
		if !s3prefix.Allowed(cfg.AllowedSources, bucket, l.Key) {
			bad = append(bad, fmt.Sprintf("manifest line %d: s3://%s/%s is outside the sources this deployment allows", l.LineNum, bucket, l.Key))
			continue
		}
		name := l.Name
		if name == "" {
			name = plan.NameFor(l.Key, "", names)
		}
		// An entry whose name ends in "/" and whose manifest size is absent
		// or 0 is a folder until applyPins finds its object says otherwise.
		entries[i] = plan.Entry{Name: name, Source: plan.Source{Bucket: bucket, Key: l.Key, ETag: l.ETag}, Size: l.Size, CRC32: l.CRC32,
			Dir: strings.HasSuffix(name, "/") && l.Size <= 0}
	}
	if bad != nil {
		return nil, nil, &failure.RequestError{Problems: bad}
	}
	return entries, lines, nil
}
