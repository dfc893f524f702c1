package create

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/s3zip/s3zip/internal/failure"

	"github.com/s3zip/s3zip/internal/manifest"
	"github.com/s3zip/s3zip/plan"
)

// pinJobs returns the lookups of a manifest's objects in line order, a
// HeadObject each by the read pass's Map. Each pins its object's ETag and
// version, dates and sizes it, checks what the manifest says of it and learns
// the CRC-32 S3 stores. The manifest's ETag is compared with the answer, not
// sent as If-Match, whose failure would read as the source changing mid-run.
// The entries are named, so the k-th one with a source is the k-th line's.
// With lines nil, a listing's or an inventory's objects are looked up the
// same way when keep asks for their metadata, which only HeadObject gives.
func pinJobs(entries []plan.Entry, lines []manifest.Line, keep bool) (roundJobs, error) {
	at := make([]int, 0, len(entries)) // the entry of each line
	for i := range entries {
		if entries[i].Source.Key != "" { // not a folder options.directories added
			at = append(at, i)
		}
	}
	if lines != nil && len(at) != len(lines) {
		return roundJobs{}, fmt.Errorf("internal error: %d manifest lines, %d named entries with an object", len(lines), len(at))
	}
	return roundJobs{n: len(at), job: func(k int) ReadJob {
		e := &entries[at[k]]
		j := ReadJob{Entry: at[k], Source: plan.Source{Bucket: e.Source.Bucket, Key: e.Source.Key}, Lookup: LookupPin, KeepMetadata: keep}
		if lines != nil {
			j.Line = lines[k].LineNum
		}
		return j
	}}, nil
}

// pinHere looks a manifest's objects up in process and pins them, for Plan
// and `s3zip plan`.
func (r *planRun) pinHere(ctx context.Context, entries []plan.Entry, jobs roundJobs) ([]plan.Entry, error) {
	got, err := r.lookUpHere(ctx, jobs)
	if err != nil {
		return nil, err
	}
	return r.applyPins(entries, jobs.refs(), got)
}

// pinned returns the manifest's entries once the pin round has looked their
// objects up.
func (r *planRun) pinned(ctx context.Context, d *ReadsDone) ([]plan.Entry, error) {
	entries, jobs, got, err := roundBack[lookupRef](ctx, r, d)
	if err != nil {
		return nil, err
	}
	return r.applyPins(entries, jobs, got)
}

// applyPins sets what the pin round learned of each manifest object in its
// entry and notes what S3 stores of its CRC-32. A line's problem is
// recorded, not returned, so that one run lists every missing object and
// wrong size, in line order. An entry whose name ends in "/" but whose
// object has a size is no folder after all, and is refused as naming would
// have refused it.
func (r *planRun) applyPins(entries []plan.Entry, jobs []lookupRef, got answers) ([]plan.Entry, error) {
	type problem struct {
		line int
		what string
	}
	var problems []problem
	folders := false // an entry is a folder, or is not, only as it turned out
	var kept int64   // metadata bytes the entries hold
	by := "the manifest"
	if r.req.Source.Manifest == nil {
		by = "the listing" // or the inventory, pinned to keep metadata
	}
	err := eachLooked(len(entries), jobs, got, func(i int, l *Looked) error {
		e := &entries[i]
		dir := e.Dir
		if what := pinEntry(e, l, by); what != "" {
			line := lineOf(jobs, i)
			where := "" // a listed object's has no line
			if line > 0 {
				where = fmt.Sprintf("manifest line %d: ", line)
			}
			problems = append(problems, problem{line, fmt.Sprintf("%ss3://%s/%s %s", where, e.Source.Bucket, e.Source.Key, what)})
			return nil
		}
		folders = folders || e.Dir != dir
		r.stored.note(e.Source.Bucket, e.Source.Key, l.Stored)
		if kept += int64(len(e.Meta)); kept > MaxKeptMetadataTotal {
			return failure.Limit("the objects' kept metadata passes %d MiB by entry %d of %d; the planner holds it with the entries (docs/metadata.md): archive fewer objects per run, or without options.keepMetadata",
				MaxKeptMetadataTotal>>20, i+1, len(entries))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pin round: %w", err)
	}
	if problems != nil {
		sort.Slice(problems, func(a, b int) bool { return problems[a].line < problems[b].line })
		bad := make([]string, len(problems))
		for k, p := range problems {
			bad[k] = p.what
		}
		return nil, &failure.RequestError{Problems: bad}
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

// lineOf returns the manifest line of entry i, searching jobs, which are in
// entry order.
func lineOf(jobs []lookupRef, i int) int {
	k := sort.Search(len(jobs), func(k int) bool { return jobs[k].Entry >= i })
	if k < len(jobs) && jobs[k].Entry == i {
		return jobs[k].Line
	}
	return 0
}

// pinEntry sets what HeadObject said of a manifest's or a listed object in
// its entry, or says what is wrong with it. by names what described the
// object first, "the manifest" or "the listing".
func pinEntry(e *plan.Entry, l *Looked, by string) string {
	said := by + " says"
	switch {
	case l.Missing:
		return "does not exist"
	case e.Source.ETag != "" && !sameETag(e.Source.ETag, l.ETag):
		return fmt.Sprintf("has ETag %s, %s %s (the object is not the one %s describes)", l.ETag, said, e.Source.ETag, by)
	case e.Size >= 0 && e.Size != l.Size:
		return fmt.Sprintf("is %d bytes, %s %d", l.Size, said, e.Size)
	case l.CRC32.Known && e.CRC32.Known && e.CRC32.Sum != l.CRC32.Sum:
		return fmt.Sprintf("has CRC-32 %08x, %s %08x", l.CRC32.Sum, said, e.CRC32.Sum)
	}
	e.Size, e.Source.ETag, e.Source.VersionID, e.ModTime = l.Size, l.ETag, l.VersionID, l.ModTime
	e.Mode, e.Meta = l.Mode, l.Meta
	if l.CRC32.Known {
		e.CRC32 = l.CRC32
	}
	e.Dir = strings.HasSuffix(e.Name, "/") && l.Size == 0
	return ""
}

// dateAddedFolders gives each folder that options.directories added, one
// with no source, the modification time of the entry it was added for.
// plan.AddDirectories puts that entry right after it. The folders are dated
// here because a manifest's objects get their dates only when looked up,
// after naming.
func dateAddedFolders(entries []plan.Entry) {
	for i := len(entries) - 2; i >= 0; i-- {
		if e := &entries[i]; e.Dir && e.Source.Key == "" {
			e.ModTime = entries[i+1].ModTime
		}
	}
}
