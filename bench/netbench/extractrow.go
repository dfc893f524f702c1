package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3zip/s3zip/plan"
)

// extractRun is one `s3zip extract` of the bench's archive (the extract row):
// the CLI in the planner's namespace, so its requests pay S3's latency and
// every byte it moves crosses one shaped link. Its workers are goroutines of
// that one process, not separate Lambdas: for a STORED archive only local
// headers pass through them, the entries are copied server-side.
type extractRun struct {
	Workers         int              `json:"workers"`
	Objects         int              `json:"objects"`
	ArchiveBytes    int64            `json:"archiveBytes"`
	CopiedBytes     int64            `json:"copiedBytes"`     // copied server-side
	WorkerBytes     int64            `json:"workerBytes"`     // entry data read by workers
	VerifyReadBytes int64            `json:"verifyReadBytes"` // read only to check copies (versitygw)
	LinkBytes       int64            `json:"linkBytes"`       // what crossed the shaped link, both ways
	Requests        map[string]int64 `json:"requests"`
	WallSeconds     float64          `json:"wallSeconds"`
	// ReadBelow is the size below which STORED entries were read rather
	// than copied: the local profile's choice (s3zip extract --model).
	ReadBelow int64  `json:"readBelow"`
	Err       string `json:"error,omitempty"`
}

// extractRows archives the data set once (duo, not timed), then extracts it
// with 1 and n workers, choosing between copying and reading STORED entries
// with model, the local profile (as auto's runs do).
func extractRows(ctx context.Context, base *s3.Client, control lambdaNet, s3zip, endpoint string, env []string, n int, model plan.Model) ([]extractRun, error) {
	const written, archive = "extract/written.zip", "extract/a.zip"
	profile, err := os.CreateTemp("", "s3zip-netbench-model-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(profile.Name())
	if err := json.NewEncoder(profile).Encode(model); err != nil {
		profile.Close()
		return nil, err
	}
	if err := profile.Close(); err != nil {
		return nil, err
	}
	cli := func(ns string, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, s3zip}, args...)...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("s3zip %s: %v: %s", args[0], err, tail(stderr.String(), 1000))
		}
		return stdout.Bytes(), nil
	}
	// The archive is made unshaped, in the server's namespace: it is not timed.
	if _, err := cli(serverNS, "create", "--source", "s3://"+bucket+"/"+srcPrefix, "--dest", "s3://"+bucket+"/"+written,
		"--endpoint", endpoint, "--strategy", "duo", "--workers", "8", "--overwrite"); err != nil {
		return nil, err
	}
	// versitygw 1.8 answers a ranged copy of an object stored with a CRC-32
	// with the whole object's (docs/versitygw.md), and extract then reads
	// every copied range to check it; S3 answers with the range's. So the
	// archive is extracted from a copy of its bytes stored without a
	// checksum (PutObject by the bench's unshaped client), where versitygw
	// answers as S3 does.
	if err := storeWithoutChecksum(ctx, base, written, archive); err != nil {
		return nil, err
	}
	head, err := base.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(archive)})
	if err != nil {
		return nil, err
	}
	var out []extractRun
	for _, w := range []int{1, n} {
		prefix := fmt.Sprintf("extract/out-%d/", w)
		before, err := readLinkBytes([]lambdaNet{control})
		if err != nil {
			return nil, err
		}
		raw, err := cli(control.NS, "extract", "s3://"+bucket+"/"+archive, "s3://"+bucket+"/"+prefix, "--endpoint", endpoint, "--workers", fmt.Sprint(w), "--model", profile.Name(), "--json")
		after, lerr := readLinkBytes([]lambdaNet{control})
		r := extractRun{Workers: w, ArchiveBytes: aws.ToInt64(head.ContentLength)}
		if err == nil {
			err = lerr
		}
		if err != nil {
			r.Err = err.Error()
		} else {
			var doc struct {
				Result struct {
					Objects    []json.RawMessage `json:"objects"`
					Streamed   int64             `json:"streamedBytes"`
					Copied     int64             `json:"copiedBytes"`
					VerifyRead int64             `json:"verifyReadBytes"`
				} `json:"result"`
				Plan struct {
					ReadBelow int64 `json:"readBelow"`
				} `json:"plan"`
				Requests    map[string]int64 `json:"requests"`
				WallSeconds float64          `json:"wallSeconds"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				r.Err = fmt.Sprintf("s3zip extract --json: %v", err)
			} else {
				r.Objects, r.CopiedBytes, r.WorkerBytes, r.VerifyReadBytes = len(doc.Result.Objects), doc.Result.Copied, doc.Result.Streamed, doc.Result.VerifyRead
				r.Requests, r.WallSeconds, r.ReadBelow = doc.Requests, doc.WallSeconds, doc.Plan.ReadBelow
				r.LinkBytes = after.toWorkers - before.toWorkers + after.fromWorkers - before.fromWorkers
			}
		}
		if r.Err != "" {
			fmt.Printf("extract-%-3d FAILED: %s\n", w, r.Err)
		} else {
			fmt.Printf("extract-%-3d %6.2f s  %d objects  %s copied server-side, %s through workers (%.1f%%), %s read to check copies, %s over the link  %d requests  (STORED entries under %d bytes read)\n",
				w, r.WallSeconds, r.Objects, mib(r.CopiedBytes), mib(r.WorkerBytes), 100*r.workerFraction(), mib(r.VerifyReadBytes), mib(r.LinkBytes), sum(r.Requests), r.ReadBelow)
		}
		out = append(out, r)
		if err := deletePrefix(ctx, base, prefix); err != nil {
			return out, err
		}
	}
	for _, k := range []string{written, archive} {
		if _, err := base.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)}); err != nil {
			return out, err
		}
	}
	return out, nil
}

// storeWithoutChecksum copies object from to key to through a temporary
// file, with a PutObject that sends no checksum.
func storeWithoutChecksum(ctx context.Context, c *s3.Client, from, to string) error {
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(from)})
	if err != nil {
		return err
	}
	defer got.Body.Close()
	f, err := os.CreateTemp("", "s3zip-netbench-archive-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	n, err := io.Copy(f, got.Body)
	if err != nil {
		return fmt.Errorf("read s3://%s/%s: %w", bucket, from, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(to), Body: f, ContentLength: aws.Int64(n)})
	return err
}

// workerFraction is the share of the archive's entry bytes that workers read.
func (r extractRun) workerFraction() float64 {
	return float64(r.WorkerBytes) / float64(max(r.WorkerBytes+r.CopiedBytes, 1))
}

// deletePrefix deletes every object under prefix.
func deletePrefix(ctx context.Context, c *s3.Client, prefix string) error {
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		var ids []types.ObjectIdentifier
		for _, o := range page.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		if len(ids) == 0 {
			continue
		}
		if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}}); err != nil {
			return err
		}
	}
	return nil
}

// extractTable is the extract rows as Markdown.
func extractTable(rows []extractRun, link string) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nExtract: the same data set archived by `s3zip create --strategy duo` (STORED; its bytes stored again without a checksum, as versitygw 1.8 misreports ranged copies of checksummed objects and S3 does not), then `s3zip extract --workers N` run in the planner's namespace (one %s link, S3's latency; its workers are goroutines of that process; STORED entries under %d bytes read and put, the rest copied, as the local profile chose):\n\n", link, rows[0].ReadBelow)
	b.WriteString("| run | workers | objects | copied server-side | through workers | read to check copies | over the link | wall s | requests by API |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range rows {
		if r.Err != "" {
			fmt.Fprintf(&b, "| extract-%d | %d | failed | | | | | | %s |\n", r.Workers, r.Workers, mdEscape(tail(r.Err, 300)))
			continue
		}
		var ops []string
		for _, op := range sortedOps(r.Requests) {
			ops = append(ops, fmt.Sprintf("%s %d", op, r.Requests[op]))
		}
		fmt.Fprintf(&b, "| extract-%d | %d | %d | %s | %s (%.1f%%) | %s | %s | %.2f | %s |\n", r.Workers, r.Workers, r.Objects, mib(r.CopiedBytes),
			mib(r.WorkerBytes), 100*r.workerFraction(), mib(r.VerifyReadBytes), mib(r.LinkBytes), r.WallSeconds, strings.Join(ops, ", "))
	}
	return b.String()
}
