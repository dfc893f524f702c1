package create

import (
	"context"
	"encoding/json"
	"path"
	"strings"

	"github.com/s3zip/s3zip/plan"
)

// Entries validates a request and returns the entries the planner would
// archive for it. They are the listed prefix or the manifest's looked-up
// objects, named, with directories and duplicates resolved. Nothing is
// written, and `s3zip plan` shows a plan of these entries.
func (pl *Planner) Entries(ctx context.Context, request json.RawMessage) ([]plan.Entry, *Request, error) {
	cfg := pl.Config.Defaults()
	req, err := pl.readRequest(ctx, cfg, request)
	if err != nil {
		return nil, nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, nil, err
	}
	if err := checkAllowed(cfg, req); err != nil {
		return nil, nil, err
	}
	// The manifest's objects are looked up here, as Plan does, because
	// nothing runs a Map for a preview.
	run := &planRun{pl: pl, cfg: cfg, req: req, here: true, stored: &storedCRCs{}}
	entries, _, err := run.sources(ctx)
	return entries, req, err
}

// prefixNotFolder explains in one problem the names a relative name policy
// gives when the source prefix does not end in "/". Every key under the
// folder the user meant gets a name like "/a.txt", and the one object the
// prefix names gets "". It returns nil for other names, which are then
// checked one by one.
func prefixNotFolder(req *Request, names plan.NamePolicy, entries []plan.Entry) error {
	prefix := req.Source.Prefix
	if req.Source.Manifest != nil || names != plan.NamesRelative || prefix == "" || strings.HasSuffix(prefix, "/") {
		return nil
	}
	// The entry's bucket is named, not the request's, because an inventory's
	// request may leave source.bucket out.
	for _, e := range entries {
		if e.Name == "" {
			folder := "s3://" + e.Source.Bucket + "/"
			if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
				folder += prefix[:i+1]
			}
			return requestError("source prefix %q names the object s3://%s/%s, whose name relative to the prefix is empty: "+
				"to archive it and its neighbours, give the folder (%s); to archive it alone, set options.names \"flat\" (it is named %q)",
				prefix, e.Source.Bucket, e.Source.Key, folder, path.Base(e.Source.Key))
		}
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name, "/") {
			return requestError("source prefix %q does not end in \"/\", so the names relative to it start with \"/\" (key %q would be named %q): "+
				"give the folder, s3://%s/%s/, or set options.names \"flat\" or \"full\"",
				prefix, e.Source.Key, e.Name, e.Source.Bucket, prefix)
		}
	}
	return nil
}

// checkSourceNames rejects names that cannot go into an archive. When the
// prefix's mistake is the cause it reports that in one problem, and
// otherwise every bad name.
func checkSourceNames(req *Request, entries []plan.Entry) error {
	names, _ := plan.ParseNamePolicy(req.Options.Names)
	if err := prefixNotFolder(req, names, entries); err != nil {
		return err
	}
	if err := plan.CheckNames(entries); err != nil {
		return planError(err)
	}
	return nil
}

// sameETag compares ETags as S3 does for If-Match, where the quotes are not
// part of the value.
func sameETag(a, b string) bool { return strings.Trim(a, `"`) == strings.Trim(b, `"`) }
