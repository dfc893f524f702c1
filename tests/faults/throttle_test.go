package faults_test

// S3's request rates: a proxy that serves each bucket a fraction of what
// one S3 prefix serves (faultproxy.Rates, 503 SlowDown past it), in front
// of runs that ask for far more. Every run must slow to the rate and
// complete, every byte right, in about the time the rate allows; a client
// without the limiter (the SDK's standard retryer and its retry quota)
// fails the same run.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/s3rate"
	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
)

// throttleFactor scales S3's per-prefix rates to this machine's: 110 serves
// each bucket 50 GET/HEAD and about 32 other requests a second, a
// hundredth or less of what these runs ask for unthrottled.
const throttleFactor = 110

// throttled starts a proxy enforcing rates and returns a client through it
// with the limiter of a Limits of its own, or with the SDK's standard
// retryer when limited is false.
func (w *world) throttled(t *testing.T, rates *fp.Rates, limited bool) (*fp.Proxy, *s3.Client, *s3rate.Limits) {
	t.Helper()
	p, err := fp.Start(fp.Config{Target: w.srv.Endpoint(), Rates: rates, SourceSize: w.srv.ObjectSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	limits := &s3rate.Limits{}
	c := w.srv.Client(t, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(p.URL())
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		if limited {
			s3rate.LimiterOnly(s3rate.Config{Limits: limits, MaxBackoff: 2 * time.Second})(o)
		} else {
			o.Retryer = retry.NewStandard()
		}
	})
	return p, c, limits
}

// putSmall writes n small objects (1 to 8 KiB, a third of them text) under prefix.
func (w *world) putSmall(t *testing.T, prefix string, n int) {
	t.Helper()
	objs := map[string][]byte{}
	for i := range n {
		b := body(uint64(5000+i), 1024+(i*2654435761)%(7*1024))
		if i%3 == 0 {
			b = []byte(strings.Repeat(fmt.Sprintf("line %d of a log that compresses\n", i), len(b)/34+1))
		}
		key := fmt.Sprintf("%s%02d/%05d.dat", prefix, i%16, i)
		objs[key] = b
		w.src[key] = b
	}
	w.srv.PutObjects(t, "src", objs)
}

// requests is how many requests of each class the proxy served.
func requests(p *fp.Proxy) (reads, writes, throttled int) {
	for op, c := range p.Counts() {
		served := c.Requests - c.Injected[fp.SlowDown]
		throttled += c.Injected[fp.SlowDown]
		switch op {
		case fp.GetObject, fp.HeadObject, fp.ListObjectsV2, fp.ListParts, fp.ListMultipartUploads:
			reads += served
		default:
			writes += served
		}
	}
	return reads, writes, throttled
}

// TestSustainedThrottling runs each strategy, and auto with --compress
// auto, over 400 small objects through a proxy that serves a fraction of
// what they ask: each completes, right, within 1.5 times the time the
// rates allow for the requests it made (and a few seconds of its own); the
// same run with the SDK's standard retryer fails with SlowDown.
//
// S3ZIP_THROTTLE_OBJECTS and S3ZIP_THROTTLE_FACTOR change the count and the
// factor (the case: 3000 and 55, 100 GET/s).
func TestSustainedThrottling(t *testing.T) {
	w := newWorld(t)
	w.putSmall(t, "s/", envInt(t, "S3ZIP_THROTTLE_OBJECTS", 400))
	rates := fp.ScaledRates(float64(envInt(t, "S3ZIP_THROTTLE_FACTOR", throttleFactor)))
	for _, c := range []struct {
		name, strategy, compress string
	}{
		{"stream", "stream", ""}, {"duo", "duo", ""}, {"chain", "chain", ""}, {"auto", "auto", ""}, {"auto-compress-auto", "auto", "auto"},
	} {
		t.Run(c.name, func(t *testing.T) {
			started := time.Now()
			p, client, limits := w.throttled(t, rates, true)
			dest := "out/throttled-" + c.name + ".zip"
			raw := throttledRequest(c.strategy, c.compress, dest)
			_, err := w.runner(client).Run(context.Background(), raw, "throttled-"+c.name)
			took := time.Since(started)
			reads, writes, throttled := requests(p)
			allowed := time.Duration(max(float64(reads)/rates.Read, float64(writes)/rates.Write) * float64(time.Second))
			w.judgeThrottled(t, started, p, outcome{err: err, dest: dest, want: w.wants("s/")},
				fmt.Sprintf("%d reads, %d writes served, %d SlowDown (limiter: %d); %.1f s, the rates allow %.1f s", reads, writes, throttled, limits.Throttled(), took.Seconds(), allowed.Seconds()),
				throttled > 0 && took <= allowed*3/2+5*time.Second)
		})
	}
	t.Run("standard-retryer-fails", func(t *testing.T) {
		started := time.Now()
		p, client, _ := w.throttled(t, rates, false)
		dest := "out/throttled-standard.zip"
		_, err := w.runner(client).Run(context.Background(), throttledRequest("stream", "", dest), "throttled-standard")
		_, _, throttled := requests(p)
		var obs []string
		pass := err != nil && strings.Contains(err.Error(), "SlowDown")
		obs = append(obs, fmt.Sprintf("error %v; %d SlowDown", firstLine(err), throttled))
		if w.object(t, dest) != nil {
			pass = false
			obs = append(obs, "BAD: an archive")
		}
		w.conclude(t, started, p, "clean failure naming SlowDown (the limiter's reason)", obs, pass)
	})
}

func throttledRequest(strategy, compress, dest string) json.RawMessage {
	o := map[string]any{"strategy": strategy}
	if compress != "" {
		o["compression"] = compress
	}
	raw, _ := json.Marshal(map[string]any{
		"source":      map[string]any{"bucket": "src", "prefix": "s/"},
		"destination": map[string]any{"bucket": "dst", "key": dest},
		"options":     o,
	})
	return raw
}

// judgeThrottled judges a throttled run: an archive, right, and the rate
// condition ok (said in note).
func (w *world) judgeThrottled(t *testing.T, started time.Time, p *fp.Proxy, o outcome, note string, ok bool) {
	t.Helper()
	w.judgeTimed(t, started, p, o, "archive at the rate S3 allows", note, ok)
}

// judgeTimed judges a run that must end in a right archive within a time
// (ok says whether it did; note says what was measured).
func (w *world) judgeTimed(t *testing.T, started time.Time, p *fp.Proxy, o outcome, expected, note string, ok bool) {
	t.Helper()
	var obs []string
	pass := ok
	if !ok {
		obs = append(obs, "BAD: not what was expected, or over the time allowed")
	}
	obs = append(obs, note)
	if o.err != nil {
		pass = false
		obs = append(obs, "BAD: "+firstLine(o.err))
	} else if msg, err := w.verify(t, o.dest, o.want); err != nil {
		pass = false
		obs = append(obs, "BAD: archive rejected: "+err.Error())
	} else {
		obs = append(obs, msg)
	}
	w.conclude(t, started, p, expected, obs, pass)
}

func firstLine(err error) string {
	if err == nil {
		return "none"
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// TestThrottledExtract extracts an archive of 300 small entries (a third
// DEFLATEd) through a proxy that serves the destination about 32 PUTs a
// second: every object is written, right, in about the time the rate
// allows.
func TestThrottledExtract(t *testing.T) {
	w := &extractWorld{world: newWorld(t), entries: map[string][]byte{}}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range 300 {
		name := fmt.Sprintf("d%02d/%04d.txt", i%10, i)
		b := body(uint64(9000+i), 500+i*7)
		method := zip.Store
		if i%3 == 0 {
			b, method = []byte(strings.Repeat(fmt.Sprintf("entry %d compresses\n", i), 50)), zip.Deflate
		}
		f, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b)
		w.entries[name] = b
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	w.zip = buf.Bytes()
	w.srv.PutObject(t, "src", "x/a.zip", w.zip)
	rates := fp.ScaledRates(throttleFactor)
	started := time.Now()
	p, c, limits := w.throttled(t, rates, true)
	prefix := "out/throttled/"
	_, err := extract.Run(context.Background(), c, extractRequest(prefix), nil)
	took := time.Since(started)
	reads, writes, throttled := requests(p)
	allowed := max(float64(reads)/rates.Read, float64(writes)/rates.Write)
	t.Logf("extract: %d reads, %d writes served, %d SlowDown (limiter %d); %.1f s, the rates allow %.1f s", reads, writes, throttled, limits.Throttled(), took.Seconds(), allowed)
	if throttled == 0 || took.Seconds() > allowed*1.5+5 {
		t.Errorf("extract: %d SlowDown, %.1f s against %.1f s allowed: want throttling met and the run within 1.5× (and 5 s)", throttled, took.Seconds(), allowed)
	}
	w.judgeExtract(t, started, p, "objects", prefix, err)
}

// envInt is the environment variable's number, or def when it is unset.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}
