package create

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/plan"
)

// splitLimits returns the request's limits on each archive.
func (o Options) splitLimits() plan.SplitLimits {
	return plan.SplitLimits{Bytes: o.SplitSize, Entries: o.SplitEntries}
}

// checkSplit adds the problems of options.splitSize and splitEntries, and of
// the options a split run cannot take.
func (o Options) checkSplit(add func(string)) {
	l := o.splitLimits()
	if l.Bytes < 0 || l.Bytes > 0 && l.Bytes < plan.MinSplitBytes {
		add(fmt.Sprintf("options.splitSize %d: the smallest archive (one empty entry with a one-character name: its two headers and the end records) is %d bytes; want at least that, or 0 for one archive", l.Bytes, plan.MinSplitBytes))
	}
	if l.Entries < 0 {
		add(fmt.Sprintf("options.splitEntries %d: want 1 or more, or 0 for no limit", l.Entries))
	}
	if l.Entries == 1 && o.ChecksumsFile != "" {
		add(fmt.Sprintf("options.splitEntries 1 with options.checksumsFile: each archive also holds its own %s; want 2 or more entries an archive", o.ChecksumsFile))
	}
}

// listedArchives plans a split run whose archives each end with
// options.checksumsFile listing their own entries, so that
// `unzip name-0002.zip && sha256sum -c SHA256SUMS` checks that archive. The
// cut leaves room for the file in each archive, as plan.Listing describes,
// then each archive's file is written to the work prefix and added as its
// last entry.
func (r *planRun) listedArchives(ctx context.Context, entries []plan.Entry) (*plan.Plan, error) {
	pl, cfg, req := r.pl, r.cfg, r.req
	l := req.Options.splitLimits()
	l.Listing = &plan.Listing{Name: req.Options.ChecksumsFile, Line: func(e *plan.Entry) int64 { return int64(len(checksumLine(e))) }}
	if err := l.Check(); err != nil {
		return nil, &failure.RequestError{Problems: []string{err.Error()}}
	}
	runs := plan.SplitEntries(entries, l)
	if err := plan.CheckArchives(len(entries), len(runs)); err != nil {
		return nil, err
	}
	listings := make([]plan.Entry, len(runs))
	prefix := r.prefix
	err := forEach(ctx, cfg.HeadConcurrency, len(runs), func(ctx context.Context, k int) error {
		var err error
		listings[k], err = pl.checksumsEntry(ctx, entries[runs[k][0]:runs[k][1]], l.Listing.Name, cfg.WorkBucket, fmt.Sprintf("%schecksums-%04d", prefix, k+1))
		return err
	})
	if err != nil {
		return nil, err
	}
	listed := make([]plan.Entry, 0, len(entries)+len(runs))
	for k, run := range runs {
		start := len(listed)
		listed = append(append(listed, entries[run[0]:run[1]]...), listings[k])
		runs[k] = [2]int{start, len(listed)}
	}
	return plan.MakeArchives(listed, runs, layoutOptions(cfg, req, r.stored), l)
}

// startArchiveUploads creates the upload of every archive of a split plan,
// checking each key is free first unless the request overwrites. It records
// them all, even when one fails, and names each in the plan's archives.
func (pl *Planner) startArchiveUploads(ctx context.Context, cfg Config, req *Request, job *Job, p *plan.Plan) error {
	rec := uploadRecord{Job: *job, Archives: make([]plan.Upload, len(p.Archives))}
	err := forEach(ctx, cfg.HeadConcurrency, len(p.Archives), func(ctx context.Context, k int) error {
		r := *req
		r.Destination.Key = ArchiveKey(req.Destination.Key, k)
		if !req.Options.Overwrite {
			if err := pl.checkKeyFree(ctx, r.Destination); err != nil {
				return err
			}
		}
		id, err := pl.createUpload(ctx, &r)
		rec.Archives[k] = plan.Upload{Key: r.Destination.Key, UploadID: id}
		return err
	})
	if werr := writeJSON(ctx, pl.S3, job.WorkBucket, job.uploadRecordKey(), rec); werr != nil {
		// Nothing records the uploads, so abort them here or they are lost.
		_ = abortArchives(context.WithoutCancel(ctx), pl.S3, job.Destination.Bucket, rec.Archives)
		return werr
	}
	if err != nil {
		return err
	}
	for k := range p.Archives {
		p.Archives[k].Upload = &rec.Archives[k]
	}
	job.Archives = len(p.Archives)
	return nil
}

// abortArchives aborts the archives' uploads that were created, and says
// which it could not.
func abortArchives(ctx context.Context, c S3, bucket string, uploads []plan.Upload) error {
	var failed []string
	for _, u := range uploads {
		if u.UploadID == "" {
			continue
		}
		if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: aws.String(u.Key), UploadId: aws.String(u.UploadID)}); err != nil && !s3err.NotFound(err) {
			failed = append(failed, fmt.Sprintf("s3://%s/%s: %v", bucket, u.Key, err))
		}
	}
	if failed != nil {
		return fmt.Errorf("aborting %d archive uploads: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}
