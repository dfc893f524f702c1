package workflow

import (
	"fmt"
	"strings"

	"github.com/s3zip/s3zip/manifest"
	"github.com/s3zip/s3zip/plan"
)

// pinJobs are the lookups of a manifest's objects, in line order: a
// HeadObject each, by the read pass's Map, to pin (ETag, version), date and
// size each object, check what the manifest says of it, and learn the
// CRC-32 S3 stores. The manifest's ETag is compared with the answer rather
// than sent as If-Match, whose failure would read as the source changing
// mid-run. entries are named (folders added): the k-th with a source is
// the k-th line's.
func pinJobs(entries []plan.Entry, lines []manifest.Line) ([]ReadJob, error) {
	jobs := make([]ReadJob, 0, len(lines))
	for i, e := range entries {
		if e.Source.Key == "" {
			continue // a folder options.directories added
		}
		if len(jobs) == len(lines) {
			break
		}
		jobs = append(jobs, ReadJob{Entry: i, Source: plan.Source{Bucket: e.Source.Bucket, Key: e.Source.Key}, Lookup: LookupPin, Line: lines[len(jobs)].LineNum})
	}
	if len(jobs) != len(lines) || (len(jobs) > 0 && entries[jobs[len(jobs)-1].Entry].Source.Key != lines[len(lines)-1].Key) {
		return nil, fmt.Errorf("internal error: %d manifest lines, and the named entries do not follow them", len(lines))
	}
	return jobs, nil
}

// applyPins sets what the pin round learned of each manifest object in its
// entry and notes what S3 stores of its CRC-32. A line's problem is
// recorded, not returned, so that one run lists every missing object and
// wrong size, in line order. An entry that is no folder after all (a name
// ending in "/", a size) is refused as naming would have.
func (r *planRun) applyPins(entries []plan.Entry, jobs []ReadJob, results []ReadResult) ([]plan.Entry, error) {
	looked, err := lookedUp(len(entries), jobs, results)
	if err != nil {
		return nil, fmt.Errorf("pin round: %w", err)
	}
	var problems []string
	folders := false // an entry is a folder, or is not, only as it turned out
	for _, j := range jobs {
		e, l := &entries[j.Entry], looked[j.Entry]
		dir := e.Dir
		if problem := pin(e, l, j.Line); problem != "" {
			problems = append(problems, problem)
			continue
		}
		folders = folders || e.Dir != dir
		r.stored.note(e.Source.Bucket, e.Source.Key, l.Stored)
	}
	if problems != nil {
		return nil, &RequestError{problems}
	}
	if folders {
		if err := checkSourceNames(r.req, entries); err != nil {
			return nil, err
		}
	}
	if r.req.Options.Directories {
		dateAddedFolders(entries)
	}
	return entries, nil
}

// pin sets what HeadObject said of a manifest's object in its entry, or
// says what is wrong with the line.
func pin(e *plan.Entry, l *Looked, line int) string {
	where := fmt.Sprintf("manifest line %d: s3://%s/%s", line, e.Source.Bucket, e.Source.Key)
	switch {
	case l.Missing:
		return where + " does not exist"
	case e.Source.ETag != "" && !sameETag(e.Source.ETag, l.ETag):
		return fmt.Sprintf("%s has ETag %s, the manifest says %s (the object is not the one the manifest describes)", where, l.ETag, e.Source.ETag)
	case e.Size >= 0 && e.Size != l.Size:
		return fmt.Sprintf("%s is %d bytes, the manifest says %d", where, l.Size, e.Size)
	case l.CRC32.Known && e.CRC32.Known && e.CRC32.Sum != l.CRC32.Sum:
		return fmt.Sprintf("%s has CRC-32 %08x, the manifest says %08x", where, l.CRC32.Sum, e.CRC32.Sum)
	}
	e.Size, e.Source.ETag, e.Source.VersionID, e.ModTime = l.Size, l.ETag, l.VersionID, l.ModTime
	if l.CRC32.Known {
		e.CRC32 = l.CRC32
	}
	e.Dir = strings.HasSuffix(e.Name, "/") && l.Size == 0
	return ""
}

// dateAddedFolders gives each folder options.directories added (a folder
// with no source) the modification time of the entry it was added for, the
// next one (plan.AddDirectories puts a folder right before it): the
// manifest's objects were dated only once looked up, after naming.
func dateAddedFolders(entries []plan.Entry) {
	for i := len(entries) - 2; i >= 0; i-- {
		if e := &entries[i]; e.Dir && e.Source.Key == "" {
			e.ModTime = entries[i+1].ModTime
		}
	}
}
