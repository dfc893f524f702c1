// Package badinput_test feeds the planner malformed and hostile requests and
// manifests against a real S3-compatible server (versitygw on loopback) and
// checks that each is refused BEFORE ANY WRITE, with an error of the type the
// state machine tells apart and a message that names the problem.
//
// "Before any write" is checked twice: the planner's S3 client records every
// mutating call (there must be none), and every bucket's objects and
// multipart uploads are listed before and after (they must be identical).
package badinput_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/testenv/s3test"
)

// recorder is the planner's S3 client; it records every call that writes.
type recorder struct {
	*s3.Client
	mu     sync.Mutex
	writes []string
}

func (r *recorder) record(op string, bucket, key *string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, fmt.Sprintf("%s s3://%s/%s", op, aws.ToString(bucket), aws.ToString(key)))
}

func (r *recorder) PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	r.record("PutObject", in.Bucket, in.Key)
	return r.Client.PutObject(ctx, in, opts...)
}

func (r *recorder) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	r.record("CreateMultipartUpload", in.Bucket, in.Key)
	return r.Client.CreateMultipartUpload(ctx, in, opts...)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.writes
	r.writes = nil
	return w
}

// kind is the error type a case must produce (Lambda reports it as the error type).
type kind string

const (
	requestErr kind = "RequestError"
	limitErr   kind = "LimitError"
	existsErr  kind = "DestinationExistsError"
)

func (k kind) matches(err error) bool {
	var re *failure.RequestError
	var le *failure.LimitError
	var de *failure.DestinationExistsError
	switch k {
	case requestErr:
		return errors.As(err, &re)
	case limitErr:
		return errors.As(err, &le)
	case existsErr:
		return errors.As(err, &de)
	}
	return false
}

// The deployment every case runs under unless it changes it.
func baseConfig() create.Config {
	return create.Config{
		WorkBucket:          "work",
		ControlBucket:       "ctl",
		AllowedSources:      []string{"src/p/"},
		AllowedDestinations: []string{"dst/out/"},
	}
}

type request map[string]any

func (r request) raw(t *testing.T) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func listReq(bucket, prefix, destKey string, opts map[string]any) request {
	r := request{
		"source":      map[string]any{"bucket": bucket, "prefix": prefix},
		"destination": map[string]any{"bucket": "dst", "key": destKey},
	}
	if opts != nil {
		r["options"] = opts
	}
	return r
}

func manifestReq(key string, opts map[string]any) request {
	r := request{
		"source":      map[string]any{"manifest": map[string]any{"bucket": "ctl", "key": key}, "bucket": "src"},
		"destination": map[string]any{"bucket": "dst", "key": "out/m.zip"},
	}
	if opts != nil {
		r["options"] = opts
	}
	return r
}

type badCase struct {
	name     string
	raw      string  // the request document as sent (when set)
	req      request // or this, encoded
	manifest string  // put at ctl/manifests/<name>.csv before the snapshot; use manifestReq("manifests/<name>.csv")
	execName string  // default "bad-<name>"
	cfg      func(*create.Config)
	want     kind
	msg      string // a substring the error must contain
}

func cases() []badCase {
	okSource := map[string]any{"bucket": "src", "prefix": "p/"}
	okDest := map[string]any{"bucket": "dst", "key": "out/a.zip"}
	long := strings.Repeat("n", 65_536) // one byte over the ZIP name limit
	return []badCase{
		// --- the request document ---------------------------------------------------------
		{name: "empty-document", raw: "", want: requestErr, msg: "request is missing"},
		{name: "not-json", raw: `{"source": {"bucket": "src"`, want: requestErr, msg: "not valid JSON"},
		{name: "json-array", raw: `[1,2,3]`, want: requestErr, msg: "not valid JSON of the documented shape"},
		{name: "unknown-top-level-field", req: request{"source": okSource, "destination": okDest, "dest": okDest}, want: requestErr, msg: `unknown field "dest"`},
		{name: "unknown-option", req: request{"source": okSource, "destination": okDest, "options": map[string]any{"compress": "deflate"}}, want: requestErr, msg: `unknown field "compress"`},
		{name: "unknown-compression", req: request{"source": okSource, "destination": okDest, "options": map[string]any{"compression": "zstd"}}, want: requestErr, msg: `options.compression "zstd": want none, deflate or auto`},
		{name: "checksums-file-without-digests", req: request{"source": okSource, "destination": okDest, "options": map[string]any{"checksumsFile": "SHA256SUMS"}}, want: requestErr, msg: `options.checksumsFile needs options.digests ["sha256"]`},
		{name: "source-wrong-type", raw: `{"source": "s3://src/p/", "destination": {"bucket": "dst", "key": "out/a.zip"}}`, want: requestErr, msg: "cannot unmarshal string"},
		{name: "size-as-string", req: request{"source": okSource, "destination": okDest, "options": map[string]any{"partSize": "5MiB"}}, want: requestErr, msg: "partSize"},
		{name: "trailing-document", raw: `{"source": {"bucket": "src", "prefix": "p/"}, "destination": {"bucket": "dst", "key": "out/a.zip"}} {"x": 1}`, want: requestErr, msg: "data after its JSON object"},
		{name: "oversized-document", req: request{"source": okSource, "destination": okDest, "options": map[string]any{"metadata": map[string]any{"pad": strings.Repeat("x", 70_000)}}}, want: requestErr, msg: "at most 65536 are accepted"},
		{name: "missing-source", req: request{"destination": okDest}, want: requestErr, msg: "source is missing"},
		{name: "missing-destination", req: request{"source": okSource}, want: requestErr, msg: "destination.bucket is missing"},
		{name: "missing-destination-key", req: request{"source": okSource, "destination": map[string]any{"bucket": "dst"}}, want: requestErr, msg: "destination.key is missing"},
		{name: "missing-execution-name", req: listReq("src", "p/", "out/a.zip", nil), execName: "-", want: requestErr, msg: "execution name is missing"},
		{name: "source-bucket-uppercase", req: listReq("Src_Bucket", "p/", "out/a.zip", nil), want: requestErr, msg: `source.bucket "Src_Bucket" is not a valid S3 bucket name`},
		{name: "destination-bucket-too-short", req: request{"source": okSource, "destination": map[string]any{"bucket": "ds", "key": "out/a.zip"}}, want: requestErr, msg: `destination.bucket "ds" is not a valid S3 bucket name`},
		{name: "destination-bucket-double-dot", req: request{"source": okSource, "destination": map[string]any{"bucket": "dst..x", "key": "out/a.zip"}}, want: requestErr, msg: `"dst..x" is not a valid S3 bucket name`},
		{name: "destination-key-folder", req: listReq("src", "p/", "out/", nil), want: requestErr, msg: `destination.key "out/" ends in /`},
		{name: "destination-key-over-1024", req: listReq("src", "p/", "out/"+strings.Repeat("k", 1100)+".zip", nil), want: requestErr, msg: "S3 keys are at most 1024"},
		{name: "destination-inside-source-prefix", req: request{"source": okSource, "destination": map[string]any{"bucket": "src", "key": "p/archive.zip"}}, want: requestErr, msg: "is inside the source prefix s3://src/p/"},
		{name: "destination-inside-whole-bucket-source", req: request{"source": map[string]any{"bucket": "dst"}, "destination": okDest}, cfg: func(c *create.Config) { c.AllowedSources = nil }, want: requestErr, msg: "inside the source prefix s3://dst/"},
		{name: "prefix-with-manifest", req: request{"source": map[string]any{"manifest": map[string]any{"bucket": "ctl", "key": "m.csv"}, "prefix": "p/"}, "destination": okDest}, want: requestErr, msg: "source.prefix cannot be used with source.manifest"},
		{name: "inventory-with-manifest", req: request{"source": map[string]any{"manifest": map[string]any{"bucket": "ctl", "key": "m.csv"}, "inventory": map[string]any{"bucket": "inv", "key": "r/manifest.json"}}, "destination": okDest}, want: requestErr, msg: "source.manifest and source.inventory cannot both be given"},
		{name: "inventory-not-a-manifest-json", req: request{"source": map[string]any{"inventory": map[string]any{"bucket": "inv", "key": "r/data/0.csv.gz"}}, "destination": okDest}, want: requestErr, msg: `source.inventory.key "r/data/0.csv.gz" does not name a manifest.json`},
		{name: "inventory-bad-bucket", req: request{"source": map[string]any{"inventory": map[string]any{"bucket": "Inv_Reports", "key": "r/manifest.json"}}, "destination": okDest}, want: requestErr, msg: `source.inventory.bucket "Inv_Reports" is not a valid S3 bucket name`},
		{name: "unknown-strategy", req: listReq("src", "p/", "out/a.zip", map[string]any{"strategy": "fastest"}), want: requestErr, msg: "options.strategy"},
		{name: "unknown-preference", req: listReq("src", "p/", "out/a.zip", map[string]any{"prefer": "cheap"}), want: requestErr, msg: "options.prefer"},
		{name: "unknown-name-policy", req: listReq("src", "p/", "out/a.zip", map[string]any{"names": "basename"}), want: requestErr, msg: `name policy "basename"`},
		{name: "unknown-duplicates-policy", req: listReq("src", "p/", "out/a.zip", map[string]any{"duplicates": "skip"}), want: requestErr, msg: `duplicate policy "skip"`},
		{name: "bad-storage-class", req: listReq("src", "p/", "out/a.zip", map[string]any{"storageClass": "CHEAP"}), want: requestErr, msg: `storageClass "CHEAP" is not an S3 storage class`},
		{name: "bad-sse-type", req: listReq("src", "p/", "out/a.zip", map[string]any{"sse": map[string]any{"type": "rot13"}}), want: requestErr, msg: `options.sse.type "rot13"`},
		{name: "too-many-tags", req: listReq("src", "p/", "out/a.zip", map[string]any{"tags": elevenTags()}), want: requestErr, msg: "S3 allows 10"},
		{name: "metadata-header-injection", req: listReq("src", "p/", "out/a.zip", map[string]any{"metadata": map[string]any{"x\r\nx-amz-acl": "public-read"}}), want: requestErr, msg: "is not a valid header name"},
		{name: "max-concurrency-out-of-range", req: listReq("src", "p/", "out/a.zip", map[string]any{"maxConcurrency": 20000}), want: requestErr, msg: "options.maxConcurrency 20000"},
		{name: "part-size-below-5mib", req: listReq("src", "p/", "out/a.zip", map[string]any{"partSize": 1 << 20}), want: requestErr, msg: "options.partSize 1048576"},
		{name: "every-problem-at-once", req: request{"source": map[string]any{"bucket": "X"}, "destination": map[string]any{"bucket": "Y", "key": "z/"}, "options": map[string]any{"strategy": "?", "names": "?"}}, want: requestErr, msg: "bad request (5 problems)"},

		// --- requestObject (the EventBridge route) --------------------------------------------
		{name: "request-object-outside-control-bucket", req: request{"requestObject": map[string]any{"bucket": "src", "key": "p/a.txt"}}, want: requestErr, msg: "read only from the control bucket ctl"},
		{name: "request-object-with-source", req: request{"requestObject": map[string]any{"bucket": "ctl", "key": "requests/ok.json"}, "source": okSource}, want: requestErr, msg: "must not also give source or destination"},
		{name: "request-object-bad-key", req: request{"requestObject": map[string]any{"bucket": "ctl", "key": ""}}, want: requestErr, msg: "requestObject.key is missing"},
		{name: "request-object-points-to-request-object", req: request{"requestObject": map[string]any{"bucket": "ctl", "key": "requests/nested.json"}}, want: requestErr, msg: "points to another request object"},
		{name: "request-object-unknown-field", req: request{"requestObject": map[string]any{"bucket": "ctl", "key": "requests/unknown-field.json"}}, want: requestErr, msg: `request object s3://ctl/requests/unknown-field.json: bad request: request is not valid JSON of the documented shape: json: unknown field "sourc"`},
		{name: "request-object-invalid-inside", req: request{"requestObject": map[string]any{"bucket": "ctl", "key": "requests/escape.json"}}, want: requestErr, msg: "outside the sources this deployment allows"},
		{name: "request-object-oversized", req: request{"requestObject": map[string]any{"bucket": "ctl", "key": "requests/big.json"}}, want: requestErr, msg: "request object s3://ctl/requests/big.json is over 65536 bytes"},
		{name: "request-object-absent", req: request{"requestObject": map[string]any{"bucket": "ctl", "key": "requests/none.json"}}, want: requestErr, msg: "request object s3://ctl/requests/none.json does not exist"},

		// --- allow-lists -------------------------------------------------------------------------
		{name: "source-bucket-not-allowed", req: listReq("other", "", "out/a.zip", nil), want: requestErr, msg: "source s3://other/ is outside the sources this deployment allows"},
		{name: "source-prefix-not-allowed", req: listReq("src", "secret/", "out/a.zip", nil), want: requestErr, msg: "source s3://src/secret/ is outside the sources"},
		{name: "source-prefix-widened", req: listReq("src", "", "out/a.zip", nil), want: requestErr, msg: "source s3://src/ is outside the sources"},
		{name: "destination-bucket-not-allowed", req: request{"source": okSource, "destination": map[string]any{"bucket": "other", "key": "out/a.zip"}}, want: requestErr, msg: "destination s3://other/out/a.zip is outside the destinations this deployment allows"},
		{name: "destination-prefix-not-allowed", req: listReq("src", "p/", "elsewhere/a.zip", nil), want: requestErr, msg: "destination s3://dst/elsewhere/a.zip is outside the destinations"},
		{name: "manifest-outside-control-and-sources", req: request{"source": map[string]any{"manifest": map[string]any{"bucket": "other", "key": "m.csv"}}, "destination": okDest}, want: requestErr, msg: "manifest s3://other/m.csv is outside the sources this deployment allows"},
		{name: "manifest-line-outside-sources", manifest: "key,bucket\np/a.txt,src\nsecret/s.txt,src\nx.txt,other\n", want: requestErr, msg: "manifest line 3: s3://src/secret/s.txt is outside the sources this deployment allows"},

		// --- manifest lines -----------------------------------------------------------------------
		{name: "manifest-size-not-a-number", manifest: "key,size\np/a.txt,ten\n", want: requestErr, msg: `manifest line 2: size "ten" is not a whole number of bytes`},
		{name: "manifest-size-negative", manifest: "p/a.txt,-1\n", want: requestErr, msg: "manifest line 1: negative size -1"},
		{name: "manifest-size-overflow", manifest: "p/a.txt,99999999999999999999\n", want: requestErr, msg: "is not a whole number of bytes"},
		{name: "manifest-crc-not-hex", manifest: "p/a.txt,10,xyz\n", want: requestErr, msg: `crc32 "xyz": want 8 hex digits`},
		{name: "manifest-crc-bad-base64", manifest: "p/a.txt,10,AAAA==\n", want: requestErr, msg: "not the base64 of 4 bytes"},
		{name: "manifest-unknown-column", manifest: "key,colour\np/a.txt,red\n", want: requestErr, msg: `unknown column "colour"`},
		{name: "manifest-jsonl-unknown-field", manifest: `{"key":"p/a.txt","sise":10}` + "\n", want: requestErr, msg: `unknown field "sise"`},
		{name: "manifest-jsonl-no-key", manifest: `{"size":10}` + "\n", want: requestErr, msg: "manifest line 1: no key"},
		{name: "manifest-empty-key", manifest: "key,size\n,4\n", want: requestErr, msg: "manifest line 2: empty key"},
		{name: "manifest-bad-bucket", manifest: "key,bucket\np/a.txt,Bad_Bucket\n", want: requestErr, msg: `manifest line 2 bucket "Bad_Bucket" is not a valid S3 bucket name`},
		{name: "manifest-empty", manifest: "key,size\n", want: requestErr, msg: "manifest s3://ctl/manifests/manifest-empty.csv has no objects to archive"},
		{name: "manifest-object-missing", manifest: "key\np/a.txt\np/missing.txt\n", want: requestErr, msg: "manifest line 3: s3://src/p/missing.txt does not exist"},
		{name: "manifest-size-disagrees", manifest: "key,size\np/a.txt,11\n", want: requestErr, msg: "s3://src/p/a.txt is 10 bytes, the manifest says 11"},
		{name: "manifest-crc-disagrees", manifest: "key,size,crc32\np/a.txt,10,00000000\n", want: requestErr, msg: "s3://src/p/a.txt has CRC-32 "},
		{name: "manifest-crc-disagrees-base64", manifest: "key,crc32\np/b.txt,AAAAAQ==\n", want: requestErr, msg: "the manifest says 00000001"},
		{name: "manifest-absent", req: manifestReq("manifests/does-not-exist.csv", nil), want: requestErr, msg: "manifest s3://ctl/manifests/does-not-exist.csv does not exist"},

		// --- names --------------------------------------------------------------------------------
		{name: "name-dot-dot", manifest: "key,name\np/a.txt,../../etc/cron.d/x\n", want: requestErr, msg: `(name "../../etc/cron.d/x"): ".." path segment`},
		{name: "name-dot-dot-inside", manifest: "key,name\np/a.txt,a/../../b\n", want: requestErr, msg: `".." path segment`},
		{name: "name-absolute", manifest: "key,name\np/a.txt,/etc/passwd\n", want: requestErr, msg: `(name "/etc/passwd"): absolute path`},
		{name: "name-drive-letter", manifest: "key,name\np/a.txt,C:/Windows/x.dll\n", want: requestErr, msg: "drive letter"},
		{name: "name-backslash", manifest: "key,name\np/a.txt,..\\evil.txt\n", want: requestErr, msg: "backslash"},
		{name: "name-nul", manifest: "key,name\np/a.txt,a\x00b\n", want: requestErr, msg: "NUL byte"},
		{name: "name-invalid-utf8", manifest: "key,name\np/a.txt,caf\xe9.txt\n", want: requestErr, msg: "name is not valid UTF-8"},
		{name: "name-over-zip-limit", manifest: "key,name\np/a.txt," + long + "\n", want: requestErr, msg: "name is 65536 bytes, over the ZIP limit of 65535"},
		{name: "names-all-listed", manifest: "key,name\np/a.txt,/abs\np/b.txt,x/../y\np/c.txt,ok.txt\n", want: requestErr, msg: "2 entries cannot be named in the archive"},
		{name: "name-duplicate-in-manifest", manifest: "key,name\np/a.txt,same.txt\np/b.txt,same.txt\n", want: requestErr, msg: `1 name would appear more than once in the archive; "same.txt" from keys ["p/a.txt" "p/b.txt"]`},
		{name: "name-duplicate-flat-listing", req: listReq("src", "p/", "out/a.zip", map[string]any{"names": "flat"}), want: requestErr, msg: `"a.txt" from keys ["p/a.txt" "p/sub/a.txt"]`},

		// --- the source, the destination and the deployment's limits -------------------------------
		{name: "empty-source-prefix", req: listReq("src", "p/empty/", "out/a.zip", nil), want: requestErr, msg: "s3://src/p/empty/ has no objects to archive"},
		{name: "destination-exists", req: listReq("src", "p/", "out/exists.zip", nil), want: existsErr, msg: "destination s3://dst/out/exists.zip already exists; set options.overwrite"},
		{name: "more-entries-than-allowed", req: listReq("src", "p/", "out/a.zip", nil), cfg: func(c *create.Config) { c.MaxEntries = 3 }, want: limitErr, msg: "4 entries; this deployment allows at most 3 (MAX_ENTRIES)"},
		{name: "more-manifest-entries-than-allowed", manifest: "p/a.txt\np/b.txt\n", cfg: func(c *create.Config) { c.MaxEntries = 1 }, want: limitErr, msg: "2 entries; this deployment allows at most 1"},
		{name: "more-bytes-than-allowed", req: listReq("src", "p/", "out/a.zip", nil), cfg: func(c *create.Config) { c.MaxArchiveBytes = 200 }, want: limitErr, msg: "this deployment allows at most 200 (MAX_ARCHIVE_BYTES)"},
		// Each archive of the split run is under the bound; together they are not.
		{name: "split-bytes-together-more-than-allowed", req: listReq("src", "p/", "out/a.zip", map[string]any{"splitEntries": 1}), cfg: func(c *create.Config) { c.MaxArchiveBytes = splitBound }, want: limitErr,
			msg: fmt.Sprintf("the 4 archives would be %d bytes together; this deployment allows a run at most %d (MAX_ARCHIVE_BYTES bounds what a run writes", splitTotal, splitBound)},
	}
}

func elevenTags() map[string]any {
	m := map[string]any{}
	for i := 0; i < 11; i++ {
		m[fmt.Sprintf("t%d", i)] = "v"
	}
	return m
}

// snapshot lists every bucket's objects and multipart uploads.
func snapshot(t *testing.T, c *s3.Client) []string {
	t.Helper()
	ctx := context.Background()
	bs, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs.Buckets {
		name := aws.ToString(b.Name)
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: &name})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range page.Contents {
				out = append(out, fmt.Sprintf("object s3://%s/%s %d %s", name, aws.ToString(o.Key), aws.ToInt64(o.Size), aws.ToString(o.ETag)))
			}
		}
		ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &name})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range ups.Uploads {
			out = append(out, fmt.Sprintf("upload s3://%s/%s %s", name, aws.ToString(u.Key), aws.ToString(u.UploadId)))
		}
	}
	sort.Strings(out)
	return out
}

func diff(before, after []string) (added, removed []string) {
	in := map[string]int{}
	for _, s := range before {
		in[s]++
	}
	for _, s := range after {
		if in[s] > 0 {
			in[s]--
			continue
		}
		added = append(added, s)
	}
	for s, n := range in {
		for ; n > 0; n-- {
			removed = append(removed, s)
		}
	}
	return added, removed
}

type world struct {
	srv *s3test.Server
	c   *s3.Client
}

func newWorld(t *testing.T) *world {
	t.Helper()
	srv := s3test.Start(t)
	w := &world{srv: srv, c: srv.Client(t, func(o *s3.Options) {
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})}
	for _, b := range []string{"src", "dst", "work", "ctl", "other"} {
		srv.CreateBucket(t, b)
	}
	crc := s3test.WithChecksum(s3test.ChecksumCRC32)
	srv.PutObject(t, "src", "p/a.txt", []byte("0123456789"), crc)
	srv.PutObject(t, "src", "p/b.txt", []byte("twenty bytes of text"), crc)
	srv.PutObject(t, "src", "p/c.txt", []byte("thirty bytes, no checksum....."))
	srv.PutObject(t, "src", "p/sub/a.txt", []byte("another a"), crc)
	srv.PutObject(t, "src", "secret/s.txt", []byte("not for archives"), crc)
	srv.PutObject(t, "other", "x.txt", []byte("other bucket"), crc)
	srv.PutObject(t, "other", "m.csv", []byte("key\nx.txt\n"))
	srv.PutObject(t, "dst", "out/exists.zip", []byte("PK\x05\x06"+strings.Repeat("\x00", 18)))
	srv.PutObject(t, "ctl", "requests/ok.json", listReq("src", "p/", "out/a.zip", nil).raw(t))
	srv.PutObject(t, "ctl", "requests/nested.json", request{"requestObject": map[string]any{"bucket": "ctl", "key": "requests/ok.json"}}.raw(t))
	srv.PutObject(t, "ctl", "requests/unknown-field.json", []byte(`{"sourc": {"bucket": "src"}, "destination": {"bucket": "dst", "key": "out/a.zip"}}`))
	srv.PutObject(t, "ctl", "requests/escape.json", listReq("src", "secret/", "out/a.zip", nil).raw(t))
	big := listReq("src", "p/", "out/a.zip", map[string]any{"metadata": map[string]any{"pad": strings.Repeat("x", 70_000)}})
	srv.PutObject(t, "ctl", "requests/big.json", big.raw(t))
	return w
}

func TestRejectedBeforeAnyWrite(t *testing.T) {
	w := newWorld(t)
	all := cases()
	// Manifests go in before the first snapshot: they are the input, not a write.
	for _, c := range all {
		if c.manifest != "" {
			w.srv.PutObject(t, "ctl", "manifests/"+c.name+".csv", []byte(c.manifest))
		}
	}
	if len(all) < 25 {
		t.Fatalf("only %d cases", len(all))
	}
	rec := &recorder{Client: w.c}
	before := snapshot(t, w.c)
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			cfg := baseConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			raw := []byte(c.raw)
			switch {
			case c.req != nil:
				raw = c.req.raw(t)
			case c.manifest != "":
				raw = manifestReq("manifests/"+c.name+".csv", nil).raw(t)
			}
			exec := "bad-" + c.name
			switch c.execName {
			case "-":
				exec = ""
			case "":
			default:
				exec = c.execName
			}
			pl := &create.Planner{S3: rec, Config: cfg}
			job, err := pl.Plan(context.Background(), create.PlanInput{Request: raw, Execution: exec})
			if err == nil {
				t.Fatalf("accepted: job %+v", job)
			}
			if !c.want.matches(err) {
				t.Errorf("error %T %q: want %s", err, err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
			if writes := rec.take(); len(writes) > 0 {
				t.Errorf("the planner wrote before refusing: %q", writes)
			}
			after := snapshot(t, w.c)
			if added, removed := diff(before, after); added != nil || removed != nil {
				t.Errorf("S3 changed: added %q, removed %q", added, removed)
				before = after
			}
			t.Logf("%s: %s", c.want, truncate(err.Error(), 300))
		})
	}
}

// TestAcceptedControl runs one good request through the same planner, client
// and deployment: the cases above fail for their own reason, not because the
// world is misconfigured. Its writes (plan files and an upload) are the ones
// every case above must not make.
func TestAcceptedControl(t *testing.T) {
	w := newWorld(t)
	rec := &recorder{Client: w.c}
	pl := &create.Planner{S3: rec, Config: baseConfig()}
	for i, raw := range [][]byte{
		listReq("src", "p/", "out/ok.zip", nil).raw(t),
		request{"requestObject": map[string]any{"bucket": "ctl", "key": "requests/ok.json"}}.raw(t),
	} {
		job, err := pl.Plan(context.Background(), create.PlanInput{Request: raw, Execution: fmt.Sprintf("ok-%d", i)})
		if err != nil {
			t.Fatalf("good request refused: %v", err)
		}
		// Plan files under the work prefix and one upload at the destination, nothing else.
		uploads := 0
		for _, w := range rec.take() {
			switch {
			case strings.HasPrefix(w, "CreateMultipartUpload s3://dst/out/"):
				uploads++
			case strings.HasPrefix(w, "PutObject s3://work/s3zip-work/"):
			default:
				t.Errorf("unexpected write %q", w)
			}
		}
		if uploads != 1 {
			t.Errorf("%d multipart uploads created, want 1", uploads)
		}
		_, err = w.c.AbortMultipartUpload(context.Background(), &s3.AbortMultipartUploadInput{Bucket: &job.Destination.Bucket, Key: &job.Destination.Key, UploadId: &job.UploadID})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TestManifestCRCNotStoredInS3 gives a wrong CRC-32 for an object S3 keeps no
// checksum of: the planner cannot check it without reading the object, so the
// refusal comes later, but it must still be a refusal, with nothing left.
func TestManifestCRCNotStoredInS3(t *testing.T) {
	w := newWorld(t)
	w.srv.PutObject(t, "ctl", "manifests/wrong-crc.csv", []byte("key,crc32\np/c.txt,00000001\n"))
	before := snapshot(t, w.c)
	for _, strategy := range []string{"stream", "duo"} {
		t.Run(strategy, func(t *testing.T) {
			cfg := baseConfig()
			cfg.PartsPerBatch = 2
			r := &create.Runner{S3: w.c, Config: cfg}
			req := manifestReq("manifests/wrong-crc.csv", map[string]any{"strategy": strategy})
			_, err := r.Run(context.Background(), req.raw(t), "wrong-crc-"+strategy)
			// The worker or finalizer that reads the object finds the mismatch
			// (failure.ChecksumMismatchError, the contract's name for it too).
			// Not retried: the manifest is wrong.
			var ce *failure.ChecksumMismatchError
			if !errors.As(err, &ce) || create.Retryable(err) {
				t.Fatalf("err = %v, want a CRC mismatch that is not retried", err)
			}
			if !strings.Contains(err.Error(), `entry "p/c.txt"`) || !strings.Contains(err.Error(), "the plan says 00000001") {
				t.Errorf("error %q does not name the entry and the manifest's CRC", err)
			}
			if added, removed := diff(before, snapshot(t, w.c)); added != nil || removed != nil {
				t.Errorf("S3 changed: added %q, removed %q", added, removed)
			}
			t.Logf("%s", truncate(err.Error(), 300))
		})
	}
}

// The split run of p/'s four objects (10 to 30 bytes), one archive each:
// each archive is under splitBound bytes (one entry, its headers and the
// end records: 130 to 165), the four together splitTotal.
const splitBound, splitTotal = 200, 581
