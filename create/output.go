package create

// The execution's output is a documented, versioned contract, described in
// docs/output.md and docs/output.schema.json, that EventBridge consumers of
// "Step Functions Execution Status Change" events read from detail.output.

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/presign"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/plan"
)

// OutputVersion is the version of the output's shape. Fields are only ever
// added within a version, and a field removed or changed in meaning makes
// the next one.
const OutputVersion = 1

// maxRequestIDChars bounds a request's id, which every output echoes.
const maxRequestIDChars = 128

// OutputSpec is what the output carries that only the request and the
// execution know. The planner takes it from them into the job, and the
// finalizer puts it into the output.
type OutputSpec struct {
	// RequestID is the request's id, or the execution's name without one.
	RequestID string `json:"requestId"`
	// Presign is options.presign, the links' lifetime as the request wrote it.
	Presign string `json:"presign,omitempty"`
	// ChecksumsFile is options.checksumsFile, the entry listing the SHA-256s.
	ChecksumsFile string `json:"checksumsFile,omitempty"`
	// Started is the execution's start time, from $$.Execution.StartTime.
	Started time.Time `json:"started,omitzero"`
}

func newOutputSpec(req *Request, in PlanInput) OutputSpec {
	id := req.ID
	if id == "" {
		id = in.Execution
	}
	return OutputSpec{RequestID: id, Presign: req.Options.Presign, ChecksumsFile: req.Options.ChecksumsFile, Started: in.Started}
}

// checkRequestID is Validate's check of the request's id.
func checkRequestID(id string) string {
	if n := len([]rune(id)); n > maxRequestIDChars {
		return fmt.Sprintf("id is %d characters; at most %d", n, maxRequestIDChars)
	}
	if strings.ContainsFunc(id, unicode.IsControl) {
		return fmt.Sprintf("id %q has control characters", id)
	}
	return ""
}

// checkPresign is Validate's check that options.presign is a lifetime SigV4
// allows.
func checkPresign(s string) string {
	if s == "" {
		return ""
	}
	if _, err := presign.ParseLifetime(s); err != nil {
		return "options.presign " + err.Error()
	}
	return ""
}

// checkPresignAllowed refuses links a deployment does not sign. The
// finalizer's role can read every archive it writes, so a link hands that
// right to whoever started the execution. The deployment decides with
// MAX_PRESIGN_SECONDS, set by the CDK prop maxPresignSeconds.
func checkPresignAllowed(cfg Config, s string) string {
	if s == "" {
		return ""
	}
	d, err := presign.ParseLifetime(s)
	switch {
	case err != nil:
		return "" // Validate said so
	case cfg.MaxPresignSeconds == 0:
		return fmt.Sprintf("options.presign %s: this deployment does not sign links (CDK prop maxPresignSeconds, -c maxPresignSeconds=N); leave it out and sign as the caller: s3zip status --presign %s EXECUTION_ARN", s, s)
	case d > time.Duration(cfg.MaxPresignSeconds)*time.Second:
		return fmt.Sprintf("options.presign %s: this deployment signs links for at most %s (maxPresignSeconds %d)", s, time.Duration(cfg.MaxPresignSeconds)*time.Second, cfg.MaxPresignSeconds)
	}
	return ""
}

// LinkSigner signs download links. presign.Signer, with an *s3.Client's
// credentials, is one.
type LinkSigner interface {
	SignLinks(ctx context.Context, archive presign.Object, report *presign.Object, d time.Duration) (*presign.Links, string, error)
}

// describe fills in what the output says beyond the archive and its report.
// That is the contract's version, the request's id, the plan's figures, the
// time since the execution started, and the links when the request asked.
func (f *Finalizer) describe(ctx context.Context, job *Job, out *FinalizeOutput, strategy plan.Strategy) {
	spec := job.Output
	out.Version = OutputVersion
	out.RequestID = spec.RequestID
	out.Execution = job.Execution
	out.Entries, out.Parts, out.Strategy = out.Stats.Entries, out.Stats.Parts, strategy
	out.ChecksumsFile = spec.ChecksumsFile
	if !spec.Started.IsZero() {
		out.Seconds = time.Since(spec.Started).Round(time.Millisecond).Seconds()
	}
	if spec.Presign == "" {
		return
	}
	// The archive is complete and checked, so a link that cannot be signed
	// is a warning, never a reason to discard it.
	d, err := presign.ParseLifetime(spec.Presign)
	if err == nil && f.Links == nil {
		err = fmt.Errorf("this finalizer has no signer")
	}
	if err != nil {
		out.Warnings = append(out.Warnings, fmt.Sprintf("no links: options.presign %v", err))
		return
	}
	dst := job.Destination
	var report *presign.Object
	if out.Report != "" {
		report = &presign.Object{Bucket: dst.Bucket, Key: ReportKey(dst)}
	}
	links, warning, err := f.Links.SignLinks(ctx, presign.Object{Bucket: dst.Bucket, Key: dst.Key}, report, d)
	if err != nil {
		out.Warnings = append(out.Warnings, fmt.Sprintf("no links: %v", err))
		return
	}
	for _, a := range out.Archives {
		// A split run gets each archive's link, signed alike.
		l, _, err := f.Links.SignLinks(ctx, presign.Object{Bucket: dst.Bucket, Key: strings.TrimPrefix(a.URI, "s3://"+dst.Bucket+"/")}, nil, d)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("no links: %v", err))
			return
		}
		links.Archives = append(links.Archives, l.Archive)
	}
	if len(links.Archives) > 0 {
		links.Archive = links.Archives[0]
	}
	out.Links = links
	if warning != "" {
		out.Warnings = append(out.Warnings, warning)
	}
}

// ReportKey returns the key of the JSON report written beside an archive in
// the archive's bucket, which is the archive's key plus ".report.json".
func ReportKey(d Destination) string { return d.Key + ".report.json" }

// checkReportFree says whether the report's key is free. Without overwrite a
// run never replaces an object there.
func checkReportFree(ctx context.Context, c S3, d Destination) error {
	key := ReportKey(d)
	_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.Bucket, Key: &key})
	switch {
	case err == nil:
		return &failure.DestinationExistsError{Bucket: d.Bucket, Key: d.Key,
			Msg: fmt.Sprintf("its report s3://%s/%s already exists (s3zip writes the report beside the archive); set options.overwrite to replace both, or choose another key", d.Bucket, key)}
	case s3err.NotFound(err):
		return nil
	}
	return s3Error("HeadObject", d.Bucket, key, false, err)
}
