// Command netbench runs s3zip's strategies side by side the way they run on
// AWS, scaled to one machine: versitygw on the host, and every worker a
// separate `s3zip batch` process in its own network namespace whose link is
// capped with tc at 600 Mbit/s each way, as a Lambda's network is. The
// planner and finalizer run in this process. See bench/README.md.
//
// It needs root (network namespaces, veth pairs, qdiscs) and removes all of
// them on exit, also on failure or interrupt; `netbench -cleanup` removes
// what a killed run left.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/s3metrics"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/plan"
)

// runSpec is one line of the comparison. Adding a strategy is one line here.
type runSpec struct {
	Name     string // label in the table
	Strategy string // plan.ParseStrategy name
	Workers  int    // emulated Lambdas; 0 means -workers
	// PartsPerBatch is the Map's MaxItemsPerBatch; 0 puts every part in one
	// batch, so a single worker builds the whole archive in one invocation,
	// as the single-Lambda designs do.
	PartsPerBatch int
	Stands        string // the design it reproduces
}

// runList is the comparison: the single-Lambda anchors (stream-1, duo-1 and
// chain-1, every part in one invocation, as the published designs build),
// duo and auto at every N of scale (perBatch parts per batch), and chain at
// the largest N.
func runList(scale []int, perBatch int) []runSpec {
	runs := []runSpec{
		{"stream-1", "stream", 1, 0, "one Lambda streams every byte (Gen1)"},
		{"duo-1", "duo", 1, 0, "one Lambda, server-side copies (Duo)"},
		{"chain-1", "chain", 1, 0, "one Lambda, server-side append chains"},
	}
	for _, n := range scale {
		if n > 1 {
			runs = append(runs, runSpec{fmt.Sprintf("duo-%d", n), "duo", n, perBatch, fmt.Sprintf("duo fanned out over %d Lambdas", n)})
		}
		runs = append(runs, runSpec{fmt.Sprintf("auto-%d", n), "auto", n, perBatch, fmt.Sprintf("cost model (local profile) picks, %d Lambdas", n)})
	}
	top := scale[len(scale)-1]
	return append(runs, runSpec{fmt.Sprintf("chain-%d", top), "chain", top, perBatch, fmt.Sprintf("server-side append chains over %d Lambdas", top)})
}

// rateRunList is the comparison under S3's rates scaled by factor: each
// strategy the model chooses between, at each N of scale.
func rateRunList(scale []int, perBatch int, factor float64) []runSpec {
	var runs []runSpec
	for _, n := range scale {
		for _, s := range []string{"stream", "duo", "chain", "auto"} {
			runs = append(runs, runSpec{fmt.Sprintf("%s-%d", s, n), s, n, perBatch, fmt.Sprintf("%s over %d Lambdas, S3's rates / %g", s, n, factor)})
		}
	}
	return runs
}

// benchRates are S3's per-prefix rates divided by factor, partitioned as
// the model groups a run's requests: the sources (src/), the archive
// (out/) and the work area (its prefix) each a partition of the bucket,
// with the second's burst the model allows (plan.RateBurstSeconds).
func benchRates(factor float64) *faultproxy.Rates {
	r := faultproxy.ScaledRates(factor)
	r.PrefixDepth, r.BurstSeconds = 1, plan.RateBurstSeconds
	return r
}

const (
	bucket    = "bench"
	srcPrefix = "src/"
	region    = "us-east-1"
)

type options struct {
	count, repeats, linksWide int
	throughWide               int
	rateGiven                 bool // -rate fixes the link
	perBatch                  int
	scale                     []int
	seed                      uint64
	s3zip, versitygw          string
	out, readme, chart        string
	python, label             string
	sourceCRC                 bool
	delay                     time.Duration
	dataParent                string
	only                      map[string]bool // run names to keep; empty keeps all
	skip                      map[string]bool // run names to leave out
	extractWorkers            int
	// rateFactor, when set, has the server refuse past S3's per-prefix
	// request rates divided by it, and the model price them so.
	rateFactor float64
	sh         shaping
}

func main() {
	var o options
	var g getOptions
	getMode := flag.Bool("get", false, "compare downloads instead (make bench-get): s3zip get, s5cmd and the SDK's transfer manager on one archive, and s5cmd cp of many small objects against s3zip create + get")
	flag.StringVar(&g.s5cmd, "s5cmd", ".tools/bin/s5cmd", "s5cmd binary, for -get")
	flag.StringVar(&g.tmget, "tmget", ".tools/bin/tmget", "transfer manager downloader (bench/tmget), for -get")
	flag.IntVar(&g.smallCount, "small-count", 50000, "small objects for -get's many-files comparison")
	flag.IntVar(&g.reps, "get-repeats", 3, "repetitions of each tuned download, for -get")
	flag.StringVar(&g.link, "get-link", "600mbit", "the one shaped link of -get: a Lambda's")
	calibrateOnly := flag.Bool("calibrate", false, "only calibrate the server (print what it measured), then exit")
	cleanupOnly := flag.Bool("cleanup", false, "only remove namespaces and links a killed run left, then exit")
	render := flag.String("render", "", "only write the table, chart and README from this results.json, then exit")
	flag.IntVar(&o.count, "count", 300, "objects of the challenge distribution (5 MiB on average)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the data set")
	scale := flag.String("scale", "1,2,4,8,16,32", "N: emulated Lambdas (namespaces) for the fanned-out runs, comma-separated, ascending")
	flag.IntVar(&o.perBatch, "parts-per-batch", 1, "the Map's MaxItemsPerBatch for fanned-out runs: 1 keeps AWS's proportion of batches to workers on a data set this small")
	flag.IntVar(&o.throughWide, "through-wide", 32, "then narrow each Lambda's link further, if needed, so that what all the worker links carry together through this machine (measured with every link streaming: the proxy, the links and the workers share the cores with the server) is this many links wide; 0 keeps -links-wide's link")
	flag.IntVar(&o.linksWide, "links-wide", 64, "scale each Lambda's link to the calibrated server's UploadPart rate divided by this: twice the largest N, so that at N = 32 the server still has room for the links' uploads and downloads at once, as S3 has")
	flag.IntVar(&o.repeats, "repeats", 3, "repetitions of every run (median, min, max)")
	flag.StringVar(&o.s3zip, "s3zip", ".tools/bin/s3zip", "s3zip binary the workers run")
	flag.StringVar(&o.versitygw, "versitygw", ".tools/bin/versitygw", "versitygw binary")
	flag.StringVar(&o.out, "out", "dist/bench", "directory for results.json and table.md")
	flag.StringVar(&o.readme, "readme", "", "README to write the table into, between <!-- bench:start --> and <!-- bench:end -->")
	flag.StringVar(&o.chart, "chart", "", "PNG chart to write (needs -python with matplotlib)")
	flag.StringVar(&o.python, "python", "python3", "Python with matplotlib, for -chart")
	flag.StringVar(&o.label, "label", "", "name of this invocation in the report (e.g. the make target)")
	flag.BoolVar(&o.sourceCRC, "source-crc", false, "store each source's CRC-32 (as AWS SDKs do by default); versitygw 1.8 then misreports ranged copies, see docs/versitygw.md")
	flag.StringVar(&o.sh.Rate, "rate", "", "tc rate of each worker's link, each way (default: from the calibration and -links-wide)")
	flag.StringVar(&o.sh.Burst, "burst", "256kb", "tc tbf burst")
	flag.StringVar(&o.sh.Latency, "latency", "50ms", "tc tbf latency")
	flag.StringVar(&o.dataParent, "data-dir", "", "directory for the server's data (default: $TMPDIR)")
	flag.DurationVar(&o.delay, "delay", 20*time.Millisecond, "S3's time to first byte: the server answers no request sooner")
	flag.IntVar(&o.extractWorkers, "extract-workers", 0, "after the runs, extract the data set's archive with s3zip extract with 1 and this many workers (the extract row); 0 skips it")
	flag.Float64Var(&o.rateFactor, "s3-rates", 0, "F: the server answers 503 SlowDown past S3's per-prefix request rates divided by F (5,500/F GET/HEAD and 3,500/F others a second for each of src/, out/ and the work prefix, a second's burst), the model prices the same rates, and the runs are stream, duo, chain and auto at each N of -scale (make bench-rates); 0: S3 never refuses a rate")
	only := flag.String("only", "", "only these runs, comma-separated names (e.g. duo-1,auto-32), for profiling one of them")
	skip := flag.String("skip", "", "leave out these runs, comma-separated names (bench-quick leaves out stream-1, its longest)")
	flag.Parse()
	var err error
	o.skip, o.only = nameSet(*skip), nameSet(*only)
	if o.scale, err = parseScale(*scale); err != nil {
		fmt.Fprintln(os.Stderr, "netbench: -scale:", err)
		os.Exit(2)
	}
	if *cleanupOnly {
		if err := tearDownNetworks(); err != nil {
			fmt.Fprintln(os.Stderr, "netbench:", err)
			os.Exit(1)
		}
		return
	}
	if *render != "" {
		if err := renderResults(*render, o); err != nil {
			fmt.Fprintln(os.Stderr, "netbench:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	switch {
	case *calibrateOnly:
		err = calibrateOnlyRun(ctx, o)
	case *getMode:
		err = getBenchmark(ctx, o, g)
	default:
		err = benchmark(ctx, o)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench:", err)
		os.Exit(1)
	}
}

// benchEnv is what every bench mode stands on: the lock, the router and
// server namespaces, versitygw behind its latency proxy, the bench's own
// unshaped client, and (addLambdas) the shaped Lambda namespaces.
type benchEnv struct {
	lock     *os.File
	srv      *server
	proxy    *latencyProxy
	dataDir  string
	base     *s3.Client
	endpoint string
	env      []string // a worker's environment: credentials and region
	nets     []lambdaNet
	control  lambdaNet
}

func newBenchEnv(ctx context.Context, o *options) (e *benchEnv, err error) {
	if err := mustBeRoot(); err != nil {
		return nil, err
	}
	for _, p := range []*string{&o.s3zip, &o.versitygw} {
		if *p, err = filepath.Abs(*p); err != nil {
			return nil, err
		}
		if _, err := os.Stat(*p); err != nil {
			return nil, fmt.Errorf("binary: %w", err)
		}
	}
	e = &benchEnv{}
	defer func() {
		if err != nil {
			e.close(&err)
			e = nil
		}
	}()
	if e.lock, err = os.OpenFile("/run/s3zip-netbench.lock", os.O_CREATE|os.O_RDWR, 0o600); err != nil {
		return e, err
	}
	if err := syscall.Flock(int(e.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return e, fmt.Errorf("another netbench is running (lock /run/s3zip-netbench.lock): %w", err)
	}
	if err := tearDownNetworks(); err != nil { // a killed earlier run's leftovers
		return e, err
	}
	if err := setUpHub(); err != nil {
		return e, fmt.Errorf("set up the router and server namespaces: %w", err)
	}
	if e.dataDir, err = os.MkdirTemp(o.dataParent, "s3zip-netbench-"); err != nil {
		return e, err
	}
	if e.srv, err = startVersitygw(ctx, o.versitygw, e.dataDir); err != nil {
		return e, err
	}
	if e.proxy, err = startLatencyProxy(serverNS, serverIP+e.srv.port, e.srv.backend, o.delay); err != nil {
		return e, fmt.Errorf("latency proxy: %w", err)
	}
	e.endpoint = e.srv.endpoint
	e.env = workerEnv(e.srv.accessKey, e.srv.secretKey, region)
	fmt.Printf("versitygw: %s in namespace %s, behind a proxy that answers no request sooner than %v (S3's time to first byte)\n", e.endpoint, serverNS, o.delay)
	// The bench's own client (data set, clean-up, calibration) talks to the
	// server from inside the server's namespace: unshaped.
	e.base = s3.New(s3.Options{
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.DialContext = dialIn(serverNS)
		}),
		Region:                     region,
		BaseEndpoint:               aws.String(e.endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(e.srv.accessKey, e.srv.secretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           8,
	})
	return e, nil
}

// addLambdas makes n worker namespaces and the control namespace, shaped sh.
func (e *benchEnv) addLambdas(n int, sh shaping) error {
	var err error
	if e.nets, e.control, err = setUpLambdas(n, sh); err != nil {
		return fmt.Errorf("set up network namespaces: %w", err)
	}
	fmt.Printf("network: %d worker namespaces %s0…%d and %s for the planner and finalizer, each joined to the router %s by a veth shaped on both ends with tbf rate %s burst %s latency %s; versitygw in %s, unshaped\n",
		len(e.nets), nsPrefix, len(e.nets)-1, e.control.NS, hubNS, sh.Rate, sh.Burst, sh.Latency, serverNS)
	return nil
}

// close stops everything and removes the namespaces, joining what fails to *err.
func (e *benchEnv) close(err *error) {
	if e.proxy != nil {
		e.proxy.close()
	}
	if e.srv != nil {
		e.srv.stop()
	}
	if e.dataDir != "" {
		os.RemoveAll(e.dataDir)
	}
	if cerr := tearDownNetworks(); cerr != nil {
		*err = errors.Join(*err, cerr)
	}
	if e.lock != nil {
		e.lock.Close()
	}
}

// calibratePipeline runs a one-object archive through the real runner, as
// the bench's runs go (planner and finalizer on their shaped link, a worker
// in its namespace), for the fixed cost of planning and of finishing a run.
// The object is one minimum part and a little more, archived by streaming:
// a batch of one piped part between the two, so that each is timed alone
// (a run with no batch would be all planning).
func calibratePipeline(ctx context.Context, cal *calibration, base, shaped *s3.Client, nets []lambdaNet, control lambdaNet, s3zip, endpoint string, env []string) error {
	const prefix, size = "pipeline-calibration/", s3part.MinPartSize + 1<<10
	body := seededBytes(size, 5, 5)
	if _, err := base.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "one.bin"),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(size)}); err != nil {
		return fmt.Errorf("calibrate the pipeline: %w", err)
	}
	var plans, finishes []float64
	for i := 0; i < 3; i++ {
		pool := newLambdaPool(nets, 1, s3zip, endpoint, env)
		r := runSpec{Name: "pipeline", Strategy: "stream", Workers: 1, PartsPerBatch: 1}
		res := runOnceFrom(ctx, base, shaped, pool, nets[:1], control, r, i, nil, prefix)
		if res.Err != "" {
			return fmt.Errorf("calibrate the pipeline: %s", res.Err)
		}
		if res.Batches != 1 {
			return fmt.Errorf("calibrate the pipeline: %d batches, want 1", res.Batches)
		}
		plans, finishes = append(plans, res.PlanSeconds), append(finishes, res.FinishSeconds)
	}
	cal.PlanSeconds, cal.FinishSeconds = median(plans), median(finishes)
	_, err := base.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + "one.bin")})
	return err
}

// nameSet is a comma-separated list of run names as a set; "" is empty.
func nameSet(list string) map[string]bool {
	if list == "" {
		return nil
	}
	set := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		set[strings.TrimSpace(n)] = true
	}
	return set
}

// tcRate is bytes/s as a tc rate.
func tcRate(bytesPerSecond float64) string {
	return fmt.Sprintf("%dkbit", int64(bytesPerSecond*8/1000))
}

// shapedClient is base with its sockets opened in n's namespace, behind its
// shaped link.
func shapedClient(base *s3.Client, n lambdaNet) *s3.Client {
	o := base.Options()
	o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.DialContext = dialIn(n.NS)
	})
	return s3.New(o)
}

// calibrateOnlyRun calibrates the server, then measures one shaped link
// (its rate from -rate or the calibration, as a run's).
func calibrateOnlyRun(ctx context.Context, o options) (err error) {
	e, err := newBenchEnv(ctx, &o)
	if err != nil {
		return err
	}
	defer e.close(&err)
	cal, err := calibrate(ctx, e.base)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	fmt.Printf("calibration: %s\n", cal)
	link, err := linkRate(&o, cal)
	if err != nil {
		return err
	}
	if err := e.addLambdas(1, o.sh); err != nil {
		return err
	}
	if _, err := e.base.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(calibBucket)}); err != nil {
		return fmt.Errorf("create bucket %s: %w", calibBucket, err)
	}
	defer func() { err = errors.Join(err, emptyAndDeleteBucket(context.WithoutCancel(ctx), e.base, calibBucket)) }()
	got, err := calibrateLink(ctx, e.base, shapedClient(e.base, e.control), calibBucket, link)
	if err != nil {
		return err
	}
	fmt.Printf("link: %s carries %.2f MB/s each way at once (%.0f%% of its rate)\n", o.sh.Rate, got/1e6, 100*got/link)
	return nil
}

// linkRate is each Lambda's link: -rate, or the calibrated server's
// UploadPart and GetObject rate (the lesser) divided by -links-wide. It sets
// o.sh.Rate.
func linkRate(o *options, cal calibration) (float64, error) {
	if o.sh.Rate != "" {
		o.rateGiven = true
		return parseRate(o.sh.Rate)
	}
	link := min(cal.IngestRate, cal.GetRate) / float64(o.linksWide)
	o.sh.Rate = tcRate(link)
	return link, nil
}

func benchmark(ctx context.Context, o options) (err error) {
	// Which runs exist: a strategy plan.ParseStrategy rejects is skipped
	// with a note, not silently.
	var active []runSpec
	var notes []string
	runs := runList(o.scale, o.perBatch)
	if o.rateFactor > 0 {
		runs = rateRunList(o.scale, o.perBatch, o.rateFactor)
	}
	for _, r := range runs {
		if len(o.only) > 0 && !o.only[r.Name] {
			continue
		}
		if o.skip[r.Name] {
			fmt.Printf("note: %s left out (--skip)\n", r.Name)
			continue
		}
		if _, err := plan.ParseStrategy(r.Strategy); err != nil {
			note := fmt.Sprintf("skipped %s: plan.ParseStrategy rejects %q (%v)", r.Name, r.Strategy, err)
			fmt.Println("note:", note)
			notes = append(notes, note)
			continue
		}
		active = append(active, r)
	}
	workers := o.scale[len(o.scale)-1]

	e, err := newBenchEnv(ctx, &o)
	if err != nil {
		return err
	}
	defer e.close(&err)
	base := e.base

	// Calibrate, then scale each Lambda's link so that the server is
	// linksWide links wide, as S3 is many Lambdas wide.
	cal, err := calibrate(ctx, base)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	fmt.Printf("calibration: %s\n", cal)
	link, err := linkRate(&o, cal)
	if err != nil {
		return err
	}
	fmt.Printf("link: %s each way per Lambda (%.1f MB/s): the server takes in %.0f MB/s, %.1f links wide (AWS: one Lambda gets ~75 MB/s of an S3 that is thousands of Lambdas wide)\n",
		o.sh.Rate, link/1e6, cal.IngestRate/1e6, cal.IngestRate/link)
	if err := e.addLambdas(workers, o.sh); err != nil {
		return err
	}
	nets, control, env := e.nets, e.control, e.env
	t0 := time.Now()
	total, err := uploadDataSet(ctx, base, bucket, srcPrefix, o.count, o.seed, o.sourceCRC)
	if err != nil {
		return fmt.Errorf("upload the data set: %w", err)
	}
	fmt.Printf("data: %d objects, %s, uploaded %s in %.1f s\n", o.count, mib(total), map[bool]string{true: "with CRC-32s", false: "without checksums"}[o.sourceCRC], time.Since(t0).Seconds())
	// What every link together carries through this machine, and the link
	// narrowed so that this is -through-wide links wide.
	if cal.ThroughGetRate, cal.ThroughIngestRate, err = calibrateLinks(ctx, base, nets, bucket); err != nil {
		return err
	}
	through := min(cal.ThroughGetRate, cal.ThroughIngestRate)
	fmt.Printf("links: all %d together carry %.0f MB/s in and %.0f MB/s out at once (%.1f links' worth): the server's streaming capacity as the workers see it\n",
		len(nets), cal.ThroughGetRate/1e6, cal.ThroughIngestRate/1e6, through/link)
	if o.throughWide > 0 && through/link < float64(o.throughWide) && !o.rateGiven {
		link = through / float64(o.throughWide)
		o.sh.Rate = tcRate(link)
		if err := reshape(append(append([]lambdaNet{}, nets...), control), o.sh); err != nil {
			return err
		}
		fmt.Printf("link: narrowed to %s (%.1f MB/s) so that the %.0f MB/s the links carry together is %d links wide\n", o.sh.Rate, link/1e6, through/1e6, o.throughWide)
	}
	if cal.InvokeSeconds, err = timeInvocation(ctx, nets[0], o.s3zip, e.endpoint, env); err != nil {
		return err
	}
	// The planner and finalizer run in this process, but their sockets are
	// opened in the control namespace, so their S3 traffic is capped too.
	shaped := shapedClient(base, control)
	cal.LaunchRate = timeLaunch(ctx, nets, o.s3zip, e.endpoint, env)
	if cal.LinkRate, err = calibrateLink(ctx, base, shaped, bucket, link); err != nil {
		return err
	}
	if err := calibratePipeline(ctx, &cal, base, shaped, nets, control, o.s3zip, e.endpoint, env); err != nil {
		return err
	}
	fmt.Printf("link: carries %.2f MB/s each way at once (%.0f%% of its rate): the model's bandwidth per worker\n", cal.LinkRate/1e6, 100*cal.LinkRate/link)
	model := localModel(cal, o.rateFactor)
	fmt.Printf("model: local profile: %s; a worker invocation %.0f ms, %.0f started per second; a one-object run plans in %.0f ms and finishes in %.0f ms\n",
		model, cal.InvokeSeconds*1000, cal.LaunchRate, cal.PlanSeconds*1000, cal.FinishSeconds*1000)

	// Every run's prediction, made before any run.
	preds := make([]plan.Prediction, len(active))
	demands := make([]plan.RateDemand, len(active))
	for i, r := range active {
		if preds[i], demands[i], err = predict(ctx, base, model, r, o.sourceCRC); err != nil {
			return err
		}
	}

	results := make([][]repResult, len(active))
	for rep := 1; rep <= o.repeats; rep++ {
		// Interleaved, so drift on a shared machine hits every run alike.
		for i, r := range active {
			pool := newLambdaPool(nets, r.Workers, o.s3zip, e.endpoint, env)
			var slowDowns int64
			if o.rateFactor > 0 {
				slowDowns = e.proxy.setRates(benchRates(o.rateFactor))
			}
			res := runOnce(ctx, base, shaped, pool, nets[:r.Workers], control, r, rep, &model)
			if o.rateFactor > 0 {
				res.SlowDowns = e.proxy.setRates(nil) - slowDowns
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			results[i] = append(results[i], res)
			if res.Err != "" {
				fmt.Printf("%-10s rep %d  FAILED: %s\n", r.Name, rep, res.Err)
			} else {
				fmt.Printf("%-10s rep %d  %6.2f s (predicted %6.2f s; plan %.2f, map %.2f, finish %.2f)  %s through workers  %d requests  peak worker %s\n", r.Name, rep, res.WallSeconds, preds[i].Seconds, res.PlanSeconds, res.MapSeconds, res.FinishSeconds,
					mib(res.LinkToWorkers+res.LinkFromWorkers), sum(res.Requests), mib(res.PeakWorkerRSS))
			}
		}
	}

	rep := &report{
		Label: o.label, When: time.Now().UTC(), Machine: machine(), Count: o.count, Seed: o.seed,
		Workers: workers, Scale: o.scale, Repeats: o.repeats, Shaping: o.sh, Delay: o.delay.String(), SourceCRC: o.sourceCRC, Notes: notes, Command: strings.Join(os.Args, " "),
		Calibration: cal, LinkBytesPerSecond: link, LinksWide: cal.IngestRate / link, Model: model, RateFactor: o.rateFactor,
	}
	for i, r := range active {
		s := summarize(r, results[i])
		s.Predicted, s.Rates = preds[i], demands[i]
		rep.Runs = append(rep.Runs, s)
	}
	if o.extractWorkers > 0 {
		if rep.Extract, err = extractRows(ctx, base, control, o.s3zip, e.endpoint, env, o.extractWorkers, model); err != nil {
			return fmt.Errorf("extract rows: %w", err)
		}
	}
	return rep.write(o)
}

func parseScale(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 250 || (len(out) > 0 && n <= out[len(out)-1]) {
			return nil, fmt.Errorf("%q: want ascending worker counts from 1 to 250, e.g. 1,2,4,8", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseRate reads a tc rate ("600mbit", "59000kbit") as bytes/s.
func parseRate(s string) (float64, error) {
	for _, u := range []struct {
		suffix string
		bits   float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 {
				break
			}
			return f * u.bits / 8, nil
		}
	}
	return 0, fmt.Errorf("-rate %q: want a tc rate such as 600mbit or 59000kbit", s)
}

// timeInvocation is the fixed cost of one worker invocation here: a
// worker process started in a Lambda's namespace with an empty batch (the
// median of five).
func timeInvocation(ctx context.Context, l lambdaNet, s3zip, endpoint string, env []string) (float64, error) {
	var ts []float64
	for i := 0; i < 5; i++ {
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", l.NS, s3zip, "batch", "--endpoint", endpoint)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(`{"Items":[]}`)
		t := time.Now()
		_ = cmd.Run() // an empty batch may be refused; the process's start and end are what is timed
		ts = append(ts, time.Since(t).Seconds())
	}
	sort.Float64s(ts)
	return ts[len(ts)/2], nil
}

// timeLaunch starts an empty worker invocation in every namespace at once
// and returns how many the machine starts per second: 32 processes on 2
// cores do not start in one process's time.
func timeLaunch(ctx context.Context, nets []lambdaNet, s3zip, endpoint string, env []string) float64 {
	t := time.Now()
	_ = forEach(ctx, len(nets), len(nets), func(ctx context.Context, k int) error {
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", nets[k].NS, s3zip, "batch", "--endpoint", endpoint)
		cmd.Env = env
		cmd.Stdin = strings.NewReader(`{"Items":[]}`)
		_ = cmd.Run() // as in timeInvocation
		return nil
	})
	return float64(len(nets)) / time.Since(t).Seconds()
}

// phaseClock notes when the first batch of a run started and the last ended.
type phaseClock struct {
	mu          sync.Mutex
	first, last time.Time
}

func (c *phaseClock) wrap(f create.BatchFunc) create.BatchFunc {
	return func(ctx context.Context, in create.BatchInput) (*create.BatchResult, error) {
		c.mu.Lock()
		if c.first.IsZero() {
			c.first = time.Now()
		}
		c.mu.Unlock()
		out, err := f(ctx, in)
		c.mu.Lock()
		c.last = time.Now()
		c.mu.Unlock()
		return out, err
	}
}

func (c *phaseClock) split(start, end time.Time) (plan, build, finish float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first.IsZero() {
		return end.Sub(start).Seconds(), 0, 0
	}
	return c.first.Sub(start).Seconds(), c.last.Sub(c.first).Seconds(), end.Sub(c.last).Seconds()
}

// repResult is one repetition of one run.
type repResult struct {
	WallSeconds float64 `json:"wallSeconds"`
	// The run's phases: until the first batch started (planning), until the
	// last batch ended (the Map), the rest (finalizing).
	PlanSeconds     float64          `json:"planSeconds"`
	MapSeconds      float64          `json:"mapSeconds"`
	FinishSeconds   float64          `json:"finishSeconds"`
	ArchiveBytes    int64            `json:"archiveBytes"`
	Parts           int              `json:"parts"`
	Batches         int              `json:"batches"`
	StreamedBytes   int64            `json:"streamedBytes"` // archive bytes sent with UploadPart (workers and finalizer)
	CopiedBytes     int64            `json:"copiedBytes"`   // archive bytes copied server-side
	LinkToWorkers   int64            `json:"linkToWorkers"` // bytes that crossed the shaped links into the namespaces
	LinkFromWorkers int64            `json:"linkFromWorkers"`
	LinkToControl   int64            `json:"linkToControl"` // the same for the planner and finalizer's link
	LinkFromControl int64            `json:"linkFromControl"`
	Requests        map[string]int64 `json:"requests"` // parent (planner, map, finalizer) plus workers
	PeakWorkerRSS   int64            `json:"peakWorkerRSS"`
	// SlowDowns are the requests the server refused past S3's scaled rates.
	SlowDowns int64  `json:"slowDowns,omitempty"`
	Err       string `json:"error,omitempty"`
}

func runOnce(ctx context.Context, base, shaped *s3.Client, pool *lambdaPool, nets []lambdaNet, control lambdaNet, r runSpec, rep int, model *plan.Model) repResult {
	return runOnceFrom(ctx, base, shaped, pool, nets, control, r, rep, model, srcPrefix)
}

// runOnceFrom is runOnce of the objects under prefix.
func runOnceFrom(ctx context.Context, base, shaped *s3.Client, pool *lambdaPool, nets []lambdaNet, control lambdaNet, r runSpec, rep int, model *plan.Model, prefix string) repResult {
	var res repResult
	phases := &phaseClock{}
	counter := s3metrics.New()
	client := s3.New(shaped.Options(), counter.Option())
	per := r.PartsPerBatch
	if per == 0 {
		per = s3part.MaxParts
	}
	runner := &create.Runner{
		S3:     client,
		Config: create.Config{WorkBucket: bucket, DefaultMaxConcurrency: r.Workers, Model: model, PartsPerBatch: per},
		Batch:  phases.wrap(pool.build),
		Log:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	dest := fmt.Sprintf("out/%s-%d.zip", r.Name, rep)
	req, _ := json.Marshal(create.Request{
		Source:      create.Source{Bucket: bucket, Prefix: prefix},
		Destination: create.Destination{Bucket: bucket, Key: dest},
		Options:     create.Options{Strategy: r.Strategy, MaxConcurrency: r.Workers, Overwrite: true},
	})
	before, err := readLinkBytes(nets)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	ctlBefore, err := readLinkBytes([]lambdaNet{control})
	if err != nil {
		res.Err = err.Error()
		return res
	}
	settle()
	start := time.Now()
	out, err := runner.Run(ctx, req, fmt.Sprintf("bench-%s-%d", r.Name, rep))
	end := time.Now()
	res.WallSeconds = end.Sub(start).Seconds()
	res.PlanSeconds, res.MapSeconds, res.FinishSeconds = phases.split(start, end)
	after, lerr := readLinkBytes(nets)
	if err == nil {
		err = lerr
	}
	ctlAfter, lerr := readLinkBytes([]lambdaNet{control})
	if err == nil {
		err = lerr
	}
	res.LinkToControl, res.LinkFromControl = ctlAfter.toWorkers-ctlBefore.toWorkers, ctlAfter.fromWorkers-ctlBefore.fromWorkers
	res.LinkToWorkers, res.LinkFromWorkers = after.toWorkers-before.toWorkers, after.fromWorkers-before.fromWorkers
	workerReqs, rss, batches := pool.snapshot()
	res.Requests = counter.Snapshot()
	for op, n := range workerReqs {
		res.Requests[op] += n
	}
	res.PeakWorkerRSS, res.Batches = rss, batches
	if err != nil {
		res.Err = err.Error()
		return res
	}
	st := out.Output.Stats
	res.ArchiveBytes, res.Parts = out.Output.Archive.Size, st.Parts
	res.StreamedBytes, res.CopiedBytes = st.StreamedBytesActual, st.CopiedBytesActual
	// The archives are not kept: 5 strategies × 3 repetitions would fill the disk.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if _, err := base.DeleteObject(dctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(dest)}); err != nil {
		res.Err = "delete archive: " + err.Error()
	}
	return res
}

// server is the versitygw process.
type server struct {
	cmd                  *exec.Cmd
	exited               chan struct{}
	endpoint, port       string
	backend              string // versitygw's own address, inside serverNS
	accessKey, secretKey string
}

func startVersitygw(ctx context.Context, bin, dataDir string) (*server, error) {
	// The port is free: the namespace is the bench's own.
	// versitygw listens on the namespace's loopback; the latency proxy on
	// the address the workers reach.
	port := ":7070"
	s := &server{endpoint: "http://" + serverIP + port, backend: "127.0.0.1:7071", port: port, accessKey: "bench" + randHex(), secretKey: randHex() + randHex()}
	s.cmd = exec.Command("ip", "netns", "exec", serverNS, bin, "--port", s.backend, "--quiet", "posix", dataDir)
	s.cmd.Env = []string{"ROOT_ACCESS_KEY=" + s.accessKey, "ROOT_SECRET_KEY=" + s.secretKey, "VGW_REGION=" + region, "PATH=" + os.Getenv("PATH")}
	logf, err := os.Create(filepath.Join(filepath.Dir(dataDir), filepath.Base(dataDir)+".log"))
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Pdeathsig fires when the thread that started the server exits, and
	// dialIn ends threads: start it from a thread locked until the server exits.
	started := make(chan error, 1)
	s.exited = make(chan struct{})
	go func() {
		runtime.LockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: dialIn(serverNS)}}
	for deadline := time.Now().Add(15 * time.Second); ; {
		resp, err := hc.Get("http://" + s.backend + "/")
		if err == nil {
			resp.Body.Close()
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("versitygw exited during start-up: %v (log: %s)", s.cmd.ProcessState, logf.Name())
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.stop()
			return nil, fmt.Errorf("versitygw at %s did not answer: %v (log: %s)", s.endpoint, err, logf.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func randHex() string {
	b := make([]byte, 8)
	f, err := os.Open("/dev/urandom")
	if err == nil {
		_, _ = f.Read(b)
		f.Close()
	}
	return fmt.Sprintf("%x", b)
}

func machine() string {
	cpu := "unknown CPU"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "?"
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(raw))
	}
	mem := ""
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.SplitN(string(raw), "\n", 2)[0], "MemTotal: %d kB", &kb)
		mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
	}
	return fmt.Sprintf("%d × %s%s, Linux %s, %s", runtime.NumCPU(), cpu, mem, kernel, runtime.Version())
}

func sum(m map[string]int64) int64 {
	var t int64
	for _, v := range m {
		t += v
	}
	return t
}

func sortedOps(m map[string]int64) []string {
	ops := make([]string, 0, len(m))
	for op := range m {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(a, b int) bool {
		if m[ops[a]] != m[ops[b]] {
			return m[ops[a]] > m[ops[b]]
		}
		return ops[a] < ops[b]
	})
	return ops
}

// renderResults writes the outputs of an earlier run again.
func renderResults(path string, o options) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r report
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return r.write(o)
}
