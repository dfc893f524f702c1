package workflow

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/internal/s3ref"
	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/manifest"
	"github.com/s3zip/s3zip/plan"
)

// listed lists or reads the request's sources and checks the entry limit.
func (pl *Planner) listed(ctx context.Context, cfg Config, req *Request) ([]plan.Entry, error) {
	entries, err := pl.entries(ctx, cfg, req)
	if err != nil {
		return nil, err
	}
	if cfg.MaxEntries > 0 && len(entries) > cfg.MaxEntries {
		return nil, &LimitError{fmt.Sprintf("%d entries; this deployment allows at most %d (MAX_ENTRIES)", len(entries), cfg.MaxEntries)}
	}
	return entries, nil
}

// entries lists the source prefix or reads the manifest, and names the entries.
func (pl *Planner) entries(ctx context.Context, cfg Config, req *Request) ([]plan.Entry, error) {
	names, _ := plan.ParseNamePolicy(req.Options.Names)
	dups, _ := plan.ParseDuplicatePolicy(req.Options.Duplicates)
	var entries []plan.Entry
	var err error
	switch {
	case req.Source.Manifest != nil:
		entries, err = pl.manifestEntries(ctx, cfg, req, names)
	case req.Source.Inventory != nil:
		entries, err = pl.inventoryEntries(ctx, cfg, req, names)
	default:
		entries, err = pl.listEntries(ctx, cfg, req, names)
	}
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		where := "s3://" + req.Source.Bucket + "/" + req.Source.Prefix
		if m := req.Source.Manifest; m != nil {
			where = "manifest s3://" + m.Bucket + "/" + m.Key
		}
		if inv := req.Source.Inventory; inv != nil {
			where = fmt.Sprintf("inventory s3://%s/%s under prefix %q", inv.Bucket, inv.Key, req.Source.Prefix)
		}
		return nil, requestError("%s has no objects to archive; check the bucket and prefix", where)
	}
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
	return entries, nil
}

// listEntries lists the source prefix, cfg.ListConcurrency requests in
// flight (s3x.Under.List: the entries come in key order, as one paginator
// gives them). Work objects (a killed run's plans, pads and chain rounds,
// in whatever bucket it used) are never sources: a prefix inside the work
// prefix is refused, and work objects under a prefix that contains it are
// skipped.
func (pl *Planner) listEntries(ctx context.Context, cfg Config, req *Request, names plan.NamePolicy) ([]plan.Entry, error) {
	b, prefix := req.Source.Bucket, req.Source.Prefix
	if strings.HasPrefix(prefix, cfg.WorkPrefix) {
		return nil, requestError("source s3://%s/%s is inside the work prefix %s, which holds s3zip's temporary objects, not data to archive", b, prefix, cfg.WorkPrefix)
	}
	skipped := 0
	defer func() {
		if skipped > 0 {
			pl.logger().Warn("skipped work objects under the source prefix", "source", "s3://"+b+"/"+prefix, "workPrefix", cfg.WorkPrefix, "objects", skipped)
		}
	}()
	// Pages listed ahead of their turn wait as entries, which the plan
	// holds anyway, not as S3's objects.
	page := func(objs []types.Object) []plan.Entry {
		var entries []plan.Entry
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
			entries = append(entries, plan.Entry{
				Name:    plan.NameFor(key, prefix, names),
				Source:  plan.Source{Bucket: b, Key: key, ETag: aws.ToString(o.ETag)},
				Size:    size,
				ModTime: aws.ToTime(o.LastModified),
				Dir:     strings.HasSuffix(key, "/") && size == 0,
			})
		}
		return entries
	}
	var pages [][]plan.Entry
	under := s3x.Under{Bucket: b, Prefix: prefix, Named: s3Named}
	err := s3x.ListPages(ctx, under, pl.S3, s3x.ListOptions{Concurrency: cfg.ListConcurrency}, page, func(listed []plan.Entry) error {
		pages = append(pages, listed)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// One allocation of the right size: growing a slice page by page
	// would hold its last two sizes at once.
	return slices.Concat(pages...), nil
}

func (pl *Planner) manifestEntries(ctx context.Context, cfg Config, req *Request, names plan.NamePolicy) ([]plan.Entry, error) {
	m := req.Source.Manifest
	doc, err := getBytes(ctx, pl.S3, m.Bucket, m.Key, maxManifestBytes)
	if err != nil {
		return nil, refError("manifest", m.Bucket, m.Key, err)
	}
	lines, err := manifest.Parse(bytes.NewReader(doc))
	if err != nil {
		return nil, &RequestError{[]string{fmt.Sprintf("manifest s3://%s/%s: %v", m.Bucket, m.Key, err)}}
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
		if !s3ref.Allowed(cfg.AllowedSources, bucket, l.Key) {
			bad = append(bad, fmt.Sprintf("manifest line %d: s3://%s/%s is outside the sources this deployment allows", l.LineNum, bucket, l.Key))
			continue
		}
		name := l.Name
		if name == "" {
			name = plan.NameFor(l.Key, "", names)
		}
		entries[i] = plan.Entry{Name: name, Source: plan.Source{Bucket: bucket, Key: l.Key, ETag: l.ETag}, Size: l.Size, CRC32: l.CRC32}
	}
	if bad != nil {
		return nil, &RequestError{bad}
	}
	if err := pl.pinManifest(ctx, cfg, entries, lines); err != nil {
		return nil, err
	}
	return entries, nil
}
