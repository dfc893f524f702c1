package asl_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/presign"
	"github.com/s3zip/s3zip/internal/testenv/outputschema"
)

// The execution's output is the contract of docs/output.md: the ASL's real
// output validates against docs/output.schema.json and its values are the
// archive's own (size and CRC-32 of the bytes in S3, entries and parts of
// the plan, the request's id, the checksums entry, the time since the
// execution started), and with options.presign its links download the
// archive and the report with a plain GET.
func TestASLOutputContract(t *testing.T) {
	e := newEnv(t)
	e.fns.Links = presign.Signer{Client: e.s3}
	e.fns.Configure(func(c *create.Config) { c.MaxPresignSeconds = 7 * 24 * 3600 })
	req := json.RawMessage(`{"id":"order-42","source":{"bucket":"src","prefix":"in/"},"destination":{"bucket":"dst","key":"out/contract.zip"},` +
		`"options":{"strategy":"duo","partSize":5242880,"digests":["sha256"],"checksumsFile":"SHA256SUMS","presign":"2h"}}`)
	started := time.Now()
	out := e.execute(t, req, "exec-contract")
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, out.Cause)
	}
	t.Logf("output: %s", out.Output)
	res := outputschema.Decode[create.FinalizeOutput](t, out.Output)
	body := e.srv.GetObject(t, "dst", "out/contract.zip")
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	wantEntries := len(e.want) + 1 // and SHA256SUMS
	if res.Version != 1 || res.RequestID != "order-42" || res.Execution != "exec-contract" || res.Strategy != "duo" {
		t.Errorf("version %d, requestId %q, execution %q, strategy %q; want 1, order-42, exec-contract, duo", res.Version, res.RequestID, res.Execution, res.Strategy)
	}
	if res.Archive.URI != "s3://dst/out/contract.zip" || res.Archive.Size != int64(len(body)) || res.Archive.CRC32 != fmt.Sprintf("%08x", crc32.ChecksumIEEE(body)) {
		t.Errorf("archive %+v; the object is %d bytes with CRC-32 %08x", res.Archive, len(body), crc32.ChecksumIEEE(body))
	}
	if res.Entries != wantEntries || len(zr.File) != wantEntries || res.ChecksumsFile != "SHA256SUMS" || zr.File[len(zr.File)-1].Name != "SHA256SUMS" {
		t.Errorf("entries %d, checksumsFile %q; the archive has %d entries, the last %q", res.Entries, res.ChecksumsFile, len(zr.File), zr.File[len(zr.File)-1].Name)
	}
	if res.Parts < 2 || res.Parts != res.Stats.Parts {
		t.Errorf("parts %d (stats %d); the plan has several", res.Parts, res.Stats.Parts)
	}
	if elapsed := time.Since(started).Seconds(); res.Seconds <= 0 || res.Seconds > elapsed {
		t.Errorf("seconds %.3f; the execution took at most %.3f", res.Seconds, elapsed)
	}
	if res.Report != "s3://dst/out/contract.zip.report.json" {
		t.Errorf("report %q", res.Report)
	}
	if res.Links == nil || res.Links.Report == nil {
		t.Fatalf("links %+v; the request asked for them", res.Links)
	}
	if left := time.Until(res.Links.Expires); left < 119*time.Minute || left > 2*time.Hour {
		t.Errorf("links expire %s, in %s; want 2h", res.Links.Expires, left)
	}
	for link, want := range map[string][]byte{res.Links.Archive: body, *res.Links.Report: e.srv.GetObject(t, "dst", "out/contract.zip.report.json")} {
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
			t.Errorf("GET %s: %s, %d bytes; want the %d bytes in S3", link, resp.Status, len(got), len(want))
		}
	}
	e.assertClean(t, "")
}

// Without an id or presign the output names the execution and carries no
// links or checksums entry, and still matches the schema.
func TestASLOutputContractPlain(t *testing.T) {
	e := newEnv(t)
	out := e.execute(t, request("out/plain.zip", ""), "exec-plain")
	if out.Status != "SUCCEEDED" {
		t.Fatalf("execution %s: %s: %s", out.Status, out.Error, out.Cause)
	}
	if err := outputschema.Validate(out.Output); err != nil {
		t.Errorf("%v", err)
	}
	var res map[string]any
	if err := json.Unmarshal(out.Output, &res); err != nil {
		t.Fatal(err)
	}
	if res["requestId"] != "exec-plain" || res["links"] != nil || res["checksumsFile"] != nil || res["entries"] != float64(len(e.want)) {
		t.Errorf("requestId %v, links %v, checksumsFile %v, entries %v; want the execution's name, none, none, %d", res["requestId"], res["links"], res["checksumsFile"], res["entries"], len(e.want))
	}
}

// A bad options.presign, or one the deployment does not sign, fails the
// execution with RequestError before anything is written.
func TestASLRefusesBadPresign(t *testing.T) {
	e := newEnv(t)
	e.fns.Links = presign.Signer{Client: e.s3}
	for _, tc := range []struct{ name, presign, max, want string }{
		{"too-long", "8d", "604800", "a presigned link lives 1s to 7d"},
		{"not-a-duration", "tomorrow", "604800", "tomorrow\\\" is not a duration"},
		{"not-allowed", "1h", "0", "this deployment does not sign links"},
		{"over-the-deployment", "2d", "86400", "signs links for at most 24h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.fns.Configure(func(c *create.Config) { fmt.Sscan(tc.max, &c.MaxPresignSeconds) })
			out := e.execute(t, request("out/refused.zip", fmt.Sprintf(`,"presign":%q`, tc.presign)), "exec-presign-"+tc.name)
			if out.Status != "FAILED" || out.Error != "RequestError" || !strings.Contains(out.Cause, tc.want) {
				t.Errorf("execution %s %s (%s); want FAILED RequestError saying %q", out.Status, out.Error, out.Cause, tc.want)
			}
			for _, c := range e.fns.Calls("") {
				if c.Function == "worker" || c.Function == "finalizer" {
					t.Errorf("%s invoked for a refused request", c.Function)
				}
			}
			e.assertClean(t, "out/refused.zip")
		})
	}
}
