package create

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/testenv/invreport"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// inventoryRequest archives what the report at manifestKey (in bucket inv)
// lists under prefix; extra adds source fields.
func inventoryRequest(manifestKey, prefix, dest, strategy, extra string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"source":{"inventory":{"bucket":"inv","key":%q},"prefix":%q%s},"destination":{"bucket":"dst","key":%q},"options":{"strategy":%q}}`,
		manifestKey, prefix, extra, dest, strategy))
}

// putReport writes a report of every object of src into bucket inv.
func (e *env) putReport(t *testing.T, format invreport.Format, filesOf int, extra ...invreport.Row) *invreport.Report {
	t.Helper()
	e.srv.CreateBucket(t, "inv")
	rows := append(invreport.Listed(t, e.s3, "src", ""), extra...)
	r := invreport.Build(t, format, "src", "inv", "src/daily/", rows, filesOf)
	e.srv.PutObjects(t, "inv", r.Objects)
	return r
}

// writes counts the requests that write.
func writes(c *s3metrics.Counter) int64 {
	var n int64
	for op, k := range c.Snapshot() {
		if strings.HasPrefix(op, "Put") || strings.HasPrefix(op, "Create") || strings.HasPrefix(op, "Upload") || strings.HasPrefix(op, "Complete") {
			n += k
		}
	}
	return n
}

// An inventory report, CSV or Parquet, is a source like a listing: its
// objects under the prefix are archived with their sizes and ETags, a folder
// marker and keys outside the prefix left out, and every reader reads the
// result.
func TestInventorySourceArchive(t *testing.T) {
	for _, format := range []invreport.Format{invreport.CSV, invreport.Parquet} {
		t.Run(string(format), func(t *testing.T) {
			objects := append(mixedObjects("logs/", s3test.ChecksumCRC32), mixedObjects("logs/plain/", s3test.ChecksumNone)...)
			objects = append(objects, object{"other/x.txt", 10, s3test.ChecksumNone}, object{"logs/space and+plus.txt", 33, s3test.ChecksumSHA256})
			e := newEnv(t, objects)
			// The prefix's own folder marker, as a console-made folder has.
			marker := invreport.Row{Bucket: "src", Key: "logs/", Size: 0, ETag: "d41d8cd98f00b204e9800998ecf8427e"}
			r := e.putReport(t, format, 4, marker)
			if len(r.DataKeys) < 2 {
				t.Fatalf("report has %d data files; the case needs several", len(r.DataKeys))
			}
			delete(e.want, "other/x.txt")
			res, err := e.runner().Run(context.Background(), inventoryRequest(r.ManifestKey, "logs/", "out/a.zip", "stream", ""), "exec-inv")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := res.Output.Stats.Entries, len(e.want); got != want {
				t.Errorf("archive has %d entries, want %d", got, want)
			}
			e.checkArchive(t, "out/a.zip", "logs/")
			e.assertClean(t)
		})
	}
}

// The planner reads the report, not the objects: 50 and 500 objects take
// the same requests (no HeadObject, no GetObject per object), with the
// default strategy (auto).
func TestInventoryPlannerRequestsDoNotGrowWithObjects(t *testing.T) {
	counts := map[int]map[string]int64{}
	for _, n := range []int{50, 500} {
		srv := s3test.Start(t)
		for _, b := range []string{"src", "dst", "work"} {
			srv.CreateBucket(t, b)
		}
		srv.PutObjects(t, "src", s3test.NumberedObjects("k/", n, 100), s3test.WithChecksum(s3test.ChecksumCRC32))
		e := &env{srv: srv, s3: srv.Client(t)}
		r := e.putReport(t, invreport.CSV, 1000)
		c := s3metrics.New()
		pl := &Planner{S3: srv.Client(t, c.Option()), Config: Config{WorkBucket: "work"}}
		job, err := pl.Plan(context.Background(), PlanInput{Request: inventoryRequest(r.ManifestKey, "k/", "out/a.zip", "auto", ""), Execution: "exec-count"})
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(srv.GetObject(t, "work", job.EntriesKey)), "\n"); lines != n {
			t.Fatalf("%d objects planned %d entries", n, lines)
		}
		counts[n] = c.Snapshot()
		t.Logf("%d objects: planner requests %v", n, counts[n])
	}
	if fmt.Sprint(counts[50]) != fmt.Sprint(counts[500]) {
		t.Errorf("planner requests grow with the objects: 50 → %v, 500 → %v", counts[50], counts[500])
	}
	if h := counts[500]["HeadObject"]; h > 2 {
		t.Errorf("planner made %d HeadObjects for 500 objects; only the destination's and its report's are expected", h)
	}
}

// A report that is corrupt, incomplete or names another bucket is refused
// before anything is written, with a message naming what is wrong.
func TestInventorySourceRefused(t *testing.T) {
	cases := []struct {
		name   string
		spoil  func(t *testing.T, e *env, r *invreport.Report)
		extra  string // source fields
		prefix string // "in/" when not given
		config func(*Config)
		want   []string
	}{
		{
			name: "data-file-md5-mismatch",
			spoil: func(t *testing.T, e *env, r *invreport.Report) {
				// Another report's bytes under this file's key: S3 would
				// serve them, only the MD5 tells.
				other := invreport.Build(t, invreport.CSV, "src", "inv", "x/", invreport.Listed(t, e.s3, "src", "in/small/"), 1000)
				e.srv.PutObject(t, "inv", r.DataKeys[1], other.Objects[other.DataKeys[0]])
			},
			want: []string{"MD5", "data/0001.csv.gz"},
		},
		{
			name: "data-file-missing",
			spoil: func(t *testing.T, e *env, r *invreport.Report) {
				if _, err := e.s3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("inv"), Key: &r.DataKeys[1]}); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"data/0001.csv.gz", "does not exist", "incomplete"},
		},
		{
			name: "manifest-md5-mismatch",
			spoil: func(t *testing.T, e *env, r *invreport.Report) {
				e.srv.PutObject(t, "inv", strings.TrimSuffix(r.ManifestKey, "manifest.json")+"manifest.checksum", []byte("00000000000000000000000000000000\n"))
			},
			want: []string{"manifest.json", "MD5"},
		},
		{
			name:  "another-source-bucket",
			extra: `,"bucket":"elsewhere"`,
			want:  []string{`source.bucket "elsewhere"`, `lists bucket "src"`},
		},
		{
			// As a listing's: the names would start with "/". The request
			// names no bucket; the message names the report's.
			name:   "prefix-not-a-folder",
			prefix: "in",
			want:   []string{`source prefix "in" does not end in "/"`, "give the folder, s3://src/in/"},
		},
		{
			name:   "keys-outside-allowed-sources",
			config: func(c *Config) { c.AllowedSources = []string{"src/in/small/"} },
			want:   []string{"s3://src/in/big/b.bin is outside the sources this deployment allows"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, mixedObjects("in/", s3test.ChecksumNone))
			r := e.putReport(t, invreport.CSV, 2)
			if c.spoil != nil {
				c.spoil(t, e, r)
			}
			counter := s3metrics.New()
			run := e.runner()
			run.S3 = e.srv.Client(t, counter.Option())
			if c.config != nil {
				c.config(&run.Config)
			}
			prefix := c.prefix
			if prefix == "" {
				prefix = "in/"
			}
			_, err := run.Run(context.Background(), inventoryRequest(r.ManifestKey, prefix, "out/x.zip", "stream", c.extra), "exec-refused")
			var re *failure.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("err = %T %v, want a RequestError", err, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if w := writes(counter); w != 0 {
				t.Errorf("%d writes before the refusal: %v", w, counter.Snapshot())
			}
			e.assertClean(t)
		})
	}
}
