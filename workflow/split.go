package workflow

// Split runs: one execution writes several archives (options.splitSize,
// options.splitEntries), name-0001.zip, name-0002.zip, …, each a whole ZIP
// of its own, from one split plan (plan/split.go). Each archive has its own
// multipart upload; every part job names its archive's (plan.PartJob.Upload),
// so the one Map builds all of them. The upload record lists them all, so
// that Abort aborts every one, and the finalizer, which completes them one
// after another, deletes the ones it completed when a later one fails: a
// failed split run leaves none of its archives.

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/s3x"
	"github.com/s3zip/s3zip/plan"
)

// splitLimits are the request's limits on each archive.
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

// ArchiveKey is the key of archive k (from 0) of a split run writing key:
// its name with a 4-digit number before the extension (photos.zip:
// photos-0001.zip), or at the end when it has none.
func ArchiveKey(key string, k int) string {
	ext := path.Ext(key)
	if strings.Contains(ext, "/") || ext == key[strings.LastIndex(key, "/")+1:] {
		ext = "" // a dot in a folder's name, or a name that is all extension
	}
	return fmt.Sprintf("%s-%04d%s", strings.TrimSuffix(key, ext), k+1, ext)
}

// listedArchives plans a split run whose archives each end with the
// checksums file of their own entries (options.checksumsFile), so that
// `unzip name-0002.zip && sha256sum -c SHA256SUMS` checks that archive: the
// cut leaves room for it in each (plan.Listing), then each archive's is
// written to the work prefix and added as its last entry.
func (pl *Planner) listedArchives(ctx context.Context, cfg Config, req *Request, entries []plan.Entry, execution string) (*plan.Plan, error) {
	l := req.Options.splitLimits()
	l.Listing = &plan.Listing{Name: req.Options.ChecksumsFile, Line: func(e *plan.Entry) int64 { return int64(len(checksumLine(e))) }}
	if err := l.Check(); err != nil {
		return nil, &RequestError{[]string{err.Error()}}
	}
	runs := plan.SplitEntries(entries, l)
	if err := plan.CheckArchives(len(entries), len(runs)); err != nil {
		return nil, err
	}
	listings := make([]plan.Entry, len(runs))
	prefix := cfg.workPrefix(execution)
	err := forEach(ctx, cfg.HeadConcurrency, len(runs), func(ctx context.Context, k int) error {
		var err error
		listings[k], err = pl.checksumsEntry(ctx, entries[runs[k][0]:runs[k][1]], l.Listing.Name, cfg.WorkBucket, fmt.Sprintf("%schecksums-%04d", prefix, k+1))
		return err
	})
	if err != nil {
		return nil, err
	}
	listed := make([]plan.Entry, 0, len(entries)+len(runs))
	for k, r := range runs {
		start := len(listed)
		listed = append(append(listed, entries[r[0]:r[1]]...), listings[k])
		runs[k] = [2]int{start, len(listed)}
	}
	return plan.MakeArchives(listed, runs, layoutOptions(cfg, req), l)
}

// uploadRecord is what the planner records of the uploads it created
// (Job.uploadRecordKey): the job, and a split run's archives' uploads.
type uploadRecord struct {
	Job
	Archives []plan.Upload `json:"archives,omitempty"`
}

// forArchive is the job as the parts of one archive of a split run see
// it: its key and upload in place of the run's.
func (j *Job) forArchive(u *plan.Upload) *Job {
	if u == nil {
		return j
	}
	a := *j
	a.Destination.Key, a.UploadID = u.Key, u.UploadID
	return &a
}

// startArchiveUploads creates the upload of every archive of a split plan
// (each key checked free first, unless the request overwrites), records
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
		// Nothing records the uploads: abort them here, or they are lost.
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
func abortArchives(ctx context.Context, c uploadLister, bucket string, uploads []plan.Upload) error {
	var failed []string
	for _, u := range uploads {
		if u.UploadID == "" {
			continue
		}
		if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: aws.String(u.Key), UploadId: aws.String(u.UploadID)}); err != nil && !s3x.NotFound(err) {
			failed = append(failed, fmt.Sprintf("s3://%s/%s: %v", bucket, u.Key, err))
		}
	}
	if failed != nil {
		return fmt.Errorf("aborting %d archive uploads: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// partKey names a part among a split run's: its number, after its
// archive's number when it is not the first archive's (so a run of one
// archive keeps the keys it always had).
func partKey(archive, part int) string {
	if archive == 0 {
		return strconv.Itoa(part)
	}
	return strconv.Itoa(archive+1) + "/" + strconv.Itoa(part)
}

// readUploadRecord reads what the planner recorded; nil when it recorded nothing.
func readUploadRecord(ctx context.Context, c objectGetter, bucket, prefix string) (*uploadRecord, error) {
	doc, err := getBytes(ctx, c, bucket, prefix+"upload.json", 4<<20)
	if err != nil {
		if s3x.NotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	var rec uploadRecord
	if err := json.Unmarshal(doc, &rec); err != nil {
		return nil, fmt.Errorf("upload record s3://%s/%supload.json: %w", bucket, prefix, err)
	}
	return &rec, nil
}
