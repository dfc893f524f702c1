package create

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/internal/presign"
)

// A request's id and options.presign are checked with everything else,
// before anything is written; a deployment signs only links it allows.
func TestRequestOutputOptions(t *testing.T) {
	cases := []struct {
		name, fields, options string
		maxPresign            int
		wantErr               string
	}{
		{"id-and-presign", `"id":"order-42",`, `"presign":"7d"`, 7 * 86400, ""},
		{"id-too-long", `"id":"` + strings.Repeat("x", 129) + `",`, ``, 0, "id is 129 characters; at most 128"},
		{"id-control", `"id":"a\nb",`, ``, 0, `id "a\nb" has control characters`},
		{"presign-over-7d", ``, `"presign":"169h"`, 7 * 86400, "options.presign 169h: a presigned link lives 1s to 7d"},
		{"presign-not-a-duration", ``, `"presign":"soon"`, 7 * 86400, `options.presign "soon" is not a duration`},
		{"presign-fraction", ``, `"presign":"1.5s"`, 7 * 86400, "whole seconds"},
		{"presign-not-allowed", ``, `"presign":"1h"`, 0, "this deployment does not sign links"},
		{"presign-over-the-deployment", ``, `"presign":"2h"`, 3600, "signs links for at most 1h0m0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := DecodeRequest([]byte(`{` + c.fields + `"source":{"bucket":"src"},"destination":{"bucket":"dst","key":"a.zip"},"options":{` + c.options + `}}`))
			if err != nil {
				t.Fatal(err)
			}
			err = req.Validate()
			if err == nil {
				err = checkAllowed(Config{MaxPresignSeconds: c.maxPresign}, req)
			}
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("err = %v, want %q", err, c.wantErr)
			}
		})
	}
}

// signer is a LinkSigner that records what it is asked to sign.
type signer struct {
	archive presign.Object
	report  *presign.Object
	d       time.Duration
}

func (s *signer) SignLinks(_ context.Context, archive presign.Object, report *presign.Object, d time.Duration) (*presign.Links, string, error) {
	s.archive, s.report, s.d = archive, report, d
	r := "https://report"
	return &presign.Links{Archive: "https://archive", Report: &r, Expires: time.Now().Add(d)}, "", nil
}

// The output's links are of the job's archive and its report (none when
// the report was not written), for the request's lifetime; without a
// signer the archive is still returned, with a warning instead of links.
func TestDescribeSignsTheArchiveAndItsReport(t *testing.T) {
	job := &Job{Execution: "e1", Destination: Destination{Bucket: "dst", Key: "z/a.zip"}, Output: OutputSpec{RequestID: "r1", Presign: "90m", Started: time.Now().Add(-3 * time.Second)}}
	for _, tc := range []struct {
		name, report string
		signer       bool
	}{{"with-report", "s3://dst/z/a.zip.report.json", true}, {"no-report", "", true}, {"no-signer", "s3://dst/z/a.zip.report.json", false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := &signer{}
			f := &Finalizer{}
			if tc.signer {
				f.Links = s
			}
			out := &FinalizeOutput{Report: tc.report}
			f.describe(context.Background(), job, out, "duo")
			if out.Version != OutputVersion || out.RequestID != "r1" || out.Execution != "e1" || out.Seconds < 3 || out.Seconds > 60 {
				t.Errorf("version %d requestId %q execution %q seconds %v", out.Version, out.RequestID, out.Execution, out.Seconds)
			}
			if !tc.signer {
				if out.Links != nil || len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "no links") {
					t.Errorf("links %+v warnings %q; want none and why", out.Links, out.Warnings)
				}
				return
			}
			if out.Links == nil || s.archive != (presign.Object{Bucket: "dst", Key: "z/a.zip"}) || s.d != 90*time.Minute {
				t.Fatalf("signed %+v for %s; want s3://dst/z/a.zip for 90m", s.archive, s.d)
			}
			if wantReport := tc.report != ""; (s.report != nil) != wantReport || wantReport && *s.report != (presign.Object{Bucket: "dst", Key: "z/a.zip.report.json"}) {
				t.Errorf("report signed: %+v, want it only when written", s.report)
			}
		})
	}
}
