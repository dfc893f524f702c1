package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/manifest"
	"github.com/s3zip/s3zip/plan"
)

// readRatio is the compressed/uncompressed ratio plan assumes for the
// read pass. Logs, CSV and JSON at level 6 measure 0.2 to 0.25.
const readRatio = 0.25

// planSummary is the --json output of `s3zip plan`.
type planSummary struct {
	Strategy         plan.Strategy `json:"strategy"`
	Entries          int           `json:"entries"`
	ArchiveBytes     int64         `json:"archiveBytes"`
	StreamedBytes    int64         `json:"streamedBytes"`
	CopiedBytes      int64         `json:"copiedBytes"`
	StreamedFraction float64       `json:"streamedFraction"`
	Parts            int           `json:"parts"`
	UploadParts      int           `json:"uploadParts"`
	CopyParts        int           `json:"copyParts"`
	ChainParts       int           `json:"chainParts"`
	ChainRounds      int           `json:"chainRounds"`
	ServerCopied     int64         `json:"serverCopiedBytes"`
	Requests         plan.Requests `json:"requests"`
	Zip64            bool          `json:"zip64"`
	PlanMillis       float64       `json:"planMillis"`
	// The prediction uses the profile PricedWith names for Workers, with the
	// run cut as Fit says. Fit.Workers is the workers it uses, at most
	// Workers, and Fit says why. Profile says which profile and why, when it
	// is not AWS's by default.
	PricedWith       string   `json:"pricedWith"`
	Profile          string   `json:"profile,omitempty"`
	Workers          int      `json:"workers"`
	Fit              plan.Fit `json:"fit"`
	PredictedSeconds float64  `json:"predictedSeconds"`
	PredictedDollars float64  `json:"predictedDollars"`
	// The read pass of --compress or --digest comes before the layout and
	// is predicted with an assumed compressed/uncompressed ratio.
	ReadJobs     int     `json:"readJobs,omitempty"`
	ReadBytes    int64   `json:"readBytes,omitempty"`
	ReadSeconds  float64 `json:"readSeconds,omitempty"`
	ReadDollars  float64 `json:"readDollars,omitempty"`
	AssumedRatio float64 `json:"assumedRatio,omitempty"`
	// Advice says when the strategy asked for is the wrong tool for the set.
	Advice string `json:"advice,omitempty"`
	// Alternative is auto's plan for the other --prefer preference,
	// predicted, when it is another plan.
	Alternative *plan.Alternative `json:"alternative,omitempty"`
	// Archives are the archives of a plan split by --split-size or
	// --split-entries, in order from name-0001.zip.
	Archives []plan.Archive `json:"archives,omitempty"`
	// S3Rates is what the plan asks of S3's per-prefix request rates.
	// RateBinds says they, not the workers, set its time.
	S3Rates   plan.RateDemand `json:"s3Rates"`
	RateBinds bool            `json:"rateBinds"`
}

func runPlan(ctx context.Context, args []string, stdout io.Writer) error {
	fs, pf := newPlanFlags()
	if err := fs.parse(args, stdout); err != nil {
		return err
	}
	rf := pf.rf
	if err := rf.check("plan"); err != nil {
		return err
	}
	entries, err := pf.entries(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	// The plan is planned and priced as the deployed planner plans it and
	// the Map runs it, in the batches the plan cuts for its workers.
	s, _ := plan.ParseStrategy(*rf.strategy)
	prefer, _ := plan.ParsePreference(*rf.prefer)
	if err := atLeast("plan", "source-prefixes", *pf.sourcePrefixes, 1); err != nil {
		return err
	}
	priced, err := pf.pricing(ctx)
	if err != nil {
		return err
	}
	model := plan.DefaultModel
	if priced.model != nil {
		model = *priced.model
	}
	model.SourcePrefixes = *pf.sourcePrefixes
	opts := plan.Options{Strategy: s, Prefer: prefer, PartSize: *rf.partSize, Workers: *rf.workers, Model: &model}
	var p *plan.Plan
	if split := (plan.SplitLimits{Bytes: *rf.splitSize, Entries: *rf.splitEntries}); split.On() {
		p, err = plan.MakeSplit(entries, opts, split)
	} else {
		p, err = plan.Make(entries, opts)
	}
	if err != nil {
		return inFlagTerms(fmt.Errorf("plan: %w", err))
	}
	elapsed := time.Since(start)
	if err := p.Validate(); err != nil {
		return err
	}
	sum := summarize(p, opts, elapsed)
	sum.PricedWith, sum.Profile = priced.with, priced.note
	if err := sum.priceAlternative(p, entries, opts); err != nil {
		return err
	}
	if *rf.compress != create.CompressNone || *rf.digest != "" {
		sum.priceReadPass(entries, model)
	}
	if sum.Archives = p.Archives; !p.Split() {
		// Advice compares the plan with others of the same entries as one archive.
		if sum.Advice, err = chainAdvice(p, entries, opts); err != nil {
			return err
		}
	}
	if *pf.asJSON {
		return printJSON(stdout, sum)
	}
	sum.print(stdout)
	return nil
}

// planFlags are plan's flags beside the request flags it shares with create.
type planFlags struct {
	rf        *requestFlags
	synthetic *string
	count     *int
	seed      *uint64
	asJSON    *bool
	// model and workBucket are --model and where --model measure measures.
	model, workBucket *string
	// sourcePrefixes is how many partitioned prefixes the sources' reads
	// spread over, for plan.Model.SourcePrefixes.
	sourcePrefixes *int
}

func newPlanFlags() (*flags, *planFlags) {
	fs := newFlags("plan", "s3zip plan (--source s3://bucket/prefix/ | --manifest s3://bucket/key | --manifest FILE | --inventory s3://bucket/…/manifest.json | --synthetic challenge|small) [flags]",
		"Plan an archive and show what building it costs (parts, requests, predicted time and dollars on AWS,\n"+
			"or on the --endpoint server with the profile create measured of it)\n"+
			"without writing anything. It takes the sources create takes, and lists or looks them up the same way;\n"+
			"a local manifest must give every object's size.")
	return fs, &planFlags{
		rf:        addRequestFlags(fs, "CSV or JSON Lines manifest: `s3://bucket/key` (lines without a bucket name objects in its bucket), or a local FILE (which must give sizes)"),
		synthetic: fs.String("synthetic", "", "synthetic data set instead of a source: "+plan.SyntheticSets+" (5 MiB objects or ~4 KiB logs)"),
		count:     fs.Int("count", 3000, "objects in the synthetic data set"),
		seed:      fs.Uint64("seed", 1, "seed of the synthetic data set"),
		asJSON:    fs.Bool("json", false, "print one JSON object"),
		model:     fs.String("model", "", planModelHelp),
		workBucket: fs.String("work-bucket", "", "`bucket` --model measure writes its probes to, as create would "+
			"(create's --work-bucket, or its --dest's bucket); only with --model measure"),
		sourcePrefixes: fs.Int("source-prefixes", 1, "partitioned prefixes the sources' reads spread over, each served ~5,500 GET/HEAD a second by S3 "+
			"(1 unless AWS raised the bucket's partitions or S3 has split its keys: a bucket starts as one)"),
	}
}

// entries returns the archive's entries from the one source the flags give.
// That is a synthetic data set, a local manifest, or a prefix, manifest or
// inventory report in S3 looked up as create's planner does.
func (pf *planFlags) entries(ctx context.Context) ([]plan.Entry, error) {
	rf := pf.rf
	localManifest := *rf.manifest != "" && !strings.HasPrefix(*rf.manifest, "s3://")
	// --source with --inventory narrows the report to a prefix, so it is one source.
	switch given := btoi(*rf.source != "" || *rf.inventory != "") + btoi(*rf.manifest != "") + btoi(*pf.synthetic != ""); {
	case given != 1:
		return nil, usageErrorf("plan: give exactly one of --source s3://bucket/prefix/, --manifest s3://bucket/key or FILE, --inventory s3://bucket/…/manifest.json, or --synthetic challenge")
	case *pf.synthetic != "":
		if err := atLeast("plan", "count", *pf.count, 0); err != nil {
			return nil, err
		}
		entries, ok := plan.Synthetic(*pf.synthetic, *pf.count, *pf.seed)
		if !ok {
			return nil, usageErrorf("plan: --synthetic %q: the data sets are %s", *pf.synthetic, plan.SyntheticSets)
		}
		return entries, nil
	case localManifest:
		return manifestEntries(*rf.manifest)
	default:
		return s3Entries(ctx, rf)
	}
}

// summarize returns the plan's summary, priced with opts.Model for opts.Workers.
func summarize(p *plan.Plan, opts plan.Options, elapsed time.Duration) planSummary {
	st := p.Stats()
	sum := planSummary{
		Strategy: opts.Strategy, Entries: st.Entries, ArchiveBytes: st.ArchiveBytes, StreamedBytes: st.StreamedBytes,
		CopiedBytes: st.CopiedBytes, StreamedFraction: st.StreamedFraction(), Parts: st.Parts,
		UploadParts: st.UploadParts, CopyParts: st.CopyParts, ChainParts: st.ChainParts, ChainRounds: st.ChainRounds,
		ServerCopied: st.ServerCopiedBytes, Requests: st.Requests, Zip64: st.Zip64, Workers: opts.Workers, Fit: p.Fit,
		PlanMillis: float64(elapsed.Microseconds()) / 1000,
	}
	m := modelOf(opts)
	pred := p.Predict(m)
	sum.PredictedSeconds, sum.PredictedDollars = pred.Seconds, pred.Dollars
	sum.S3Rates = p.S3Rates(m)
	sum.RateBinds = pred.RateSecs > 0 && pred.RateSecs >= max(pred.WorkerSecs, pred.ServerSecs)
	return sum
}

// priceAlternative prices auto's plan for the other preference, when p
// names one, as p is priced, not by auto's interpolated estimate.
func (sum *planSummary) priceAlternative(p *plan.Plan, entries []plan.Entry, opts plan.Options) error {
	if p.Alternative == nil {
		return nil
	}
	other := opts
	other.Prefer = p.Alternative.Prefer
	op, err := plan.Make(entries, other)
	if err != nil {
		return inFlagTerms(fmt.Errorf("plan --prefer %s: %w", other.Prefer, err))
	}
	opred := op.Predict(modelOf(opts))
	sum.Alternative = &plan.Alternative{Prefer: other.Prefer, Seconds: opred.Seconds, Dollars: opred.Dollars}
	return nil
}

// priceReadPass predicts the read pass of --compress or --digest, which reads
// every entry with data in pieces of the default size. Text and logs
// compress to about a quarter at level 6.
func (sum *planSummary) priceReadPass(entries []plan.Entry, m plan.Model) {
	rp := plan.ReadPass{Ratio: readRatio}
	for _, e := range entries {
		if !e.Dir && e.Size > 0 {
			rp.Bytes += e.Size
			rp.Jobs += int((e.Size + create.DefaultPieceSize - 1) / create.DefaultPieceSize)
		}
	}
	rp.PerBatch = create.ReadsPerBatch(rp.Jobs, sum.Workers, create.DefaultMaxReadsPerBatch)
	rpred := m.PredictRead(rp, sum.Workers)
	sum.ReadJobs, sum.ReadBytes, sum.ReadSeconds, sum.ReadDollars, sum.AssumedRatio = rp.Jobs, rp.Bytes, rpred.Seconds, rpred.Dollars, readRatio
}

// print is the summary as plan prints it without --json.
func (sum *planSummary) print(w io.Writer) {
	fmt.Fprintf(w, "strategy        %s\n", strategyLine(sum))
	fmt.Fprintf(w, "entries         %d\n", sum.Entries)
	fmt.Fprintf(w, "archive         %s (%d bytes)%s\n", humanBytes(sum.ArchiveBytes), sum.ArchiveBytes, map[bool]string{true: ", ZIP64"}[sum.Zip64])
	fmt.Fprintf(w, "streamed        %s (%.1f%%) through workers\n", humanBytes(sum.StreamedBytes), 100*sum.StreamedFraction)
	fmt.Fprintf(w, "copied          %s server-side\n", humanBytes(sum.CopiedBytes))
	fmt.Fprintf(w, "parts           %d (%d upload, %d copy, %d chain in %d rounds)\n", sum.Parts, sum.UploadParts, sum.CopyParts, sum.ChainParts, sum.ChainRounds)
	fmt.Fprintf(w, "server copies   %s (%.2f× the archive)\n", humanBytes(sum.ServerCopied), float64(sum.ServerCopied)/float64(max(sum.ArchiveBytes, 1)))
	r := sum.Requests
	fmt.Fprintf(w, "requests        %d: %d GET, %d HEAD, %d UploadPart, %d UploadPartCopy, %d create, %d complete\n",
		r.Total(), r.Get, r.Head, r.UploadPart, r.UploadPartCopy, r.Create, r.Complete)
	fmt.Fprintf(w, "planned in      %.1f ms\n", sum.PlanMillis)
	if sum.ReadJobs > 0 {
		// The layout of a compressed archive waits for the read pass, so
		// what is above is the STORED layout, an upper bound on its size.
		fmt.Fprintf(w, "read pass       %s over %s: predicted %.1f s, $%.4f %s with %s (compressing to %.0f%%, assumed)\n",
			count(sum.ReadJobs, "job", "jobs"), humanBytes(sum.ReadBytes), sum.ReadSeconds, sum.ReadDollars, pricedOn[sum.PricedWith], count(sum.Workers, "worker", "workers"), 100*readRatio)
		fmt.Fprintf(w, "                the layout above is before compression: the archive and its build are at most that\n")
	}
	about := "the profile below"
	if sum.PricedWith == pricedAWS {
		about = plan.DefaultModel.String()
	}
	fmt.Fprintf(w, "%-15s %.1f s and $%.4f predicted with %s (%s)\n", pricedOn[sum.PricedWith], sum.PredictedSeconds, sum.PredictedDollars, count(sum.Workers, "worker", "workers"), about)
	if sum.Profile != "" {
		fmt.Fprintf(w, "profile         %s\n", sum.Profile)
	}
	fmt.Fprintf(w, "workers used    %d of %d: %s\n", sum.Fit.Workers, sum.Workers, sum.Fit.Why)
	sum.printRates(w)
	if a := sum.Alternative; a != nil {
		fmt.Fprintf(w, "prefer %-8s %.1f s and $%.4f predicted: the plan --prefer %s would choose\n", a.Prefer, a.Seconds, a.Dollars, a.Prefer)
	}
	if sum.Advice != "" {
		fmt.Fprintf(w, "advice          %s\n", sum.Advice)
	}
	if len(sum.Archives) > 0 {
		fmt.Fprintf(w, "archives        %d, each a whole ZIP (name-0001.zip, …)\n", len(sum.Archives))
	}
	for k, a := range sum.Archives {
		alone := ""
		if a.Oversize {
			alone = ", over the split size: one entry that is, alone"
		}
		fmt.Fprintf(w, "  %04d          %s (%d bytes), %s from entry %d, %s%s\n", k+1, humanBytes(a.Size), a.Size, count(a.Entries, "entry", "entries"), a.First+1, count(a.WorkerParts+a.FinalParts, "part", "parts"), alone)
	}
}

// printRates says, per group of prefixes the run touches, what the plan
// asks of S3's request rates against what S3 serves it, and which binds.
func (sum *planSummary) printRates(w io.Writer) {
	d := sum.S3Rates
	for i, g := range d.Groups() {
		label := ""
		if i == 0 {
			label = "S3 rates"
		}
		var asks []string
		if g.Reads > 0 {
			asks = append(asks, fmt.Sprintf("%d reads at %.0f/s", g.Reads, g.ReadRate))
		}
		if g.Writes > 0 {
			asks = append(asks, fmt.Sprintf("%d writes at %.0f/s", g.Writes, g.WriteRate))
		}
		if len(asks) == 0 {
			asks = append(asks, "no requests")
		}
		fmt.Fprintf(w, "%-15s %-10s%s: at least %.1f s\n", label, g.Name, strings.Join(asks, ", "), g.Seconds)
	}
	switch {
	case d.Seconds == 0:
		fmt.Fprintf(w, "%-15s S3's request rates allow it\n", "")
	case sum.RateBinds:
		fmt.Fprintf(w, "%-15s S3's rate for the %s binds (%.1f s): more workers would only wait for S3%s\n", "", d.Binds, d.Seconds, rateAdvice(d.Binds))
	default:
		fmt.Fprintf(w, "%-15s S3's rate for the %s needs %.1f s, less than the workers take\n", "", d.Binds, d.Seconds)
	}
}

// rateAdvice is what a user can do about the group whose rate binds.
func rateAdvice(group string) string {
	switch group {
	case "sources":
		return " (sources spread over N partitioned prefixes: --source-prefixes N)"
	case "work area":
		return " (fewer chain rounds: --strategy stream or duo)"
	}
	return ""
}

// The profiles a plan is priced with, as planSummary.PricedWith names them,
// and where each predicts.
const (
	pricedAWS    = "aws"
	pricedServer = "server"
	pricedFile   = "file"
)

var pricedOn = map[string]string{pricedAWS: "on AWS", pricedServer: "on the server", pricedFile: "by your profile"}

// pricing is the profile a plan is priced with, and model nil is AWS's.
// note says which and why, when it is not AWS's with no endpoint.
type pricing struct {
	model *plan.Model
	with  string
	note  string
}

// pricing returns the profile --model and --endpoint choose, as create's do,
// save that with no --model a server with no profile kept is priced as AWS.
// create would measure it, but plan writes nothing unless told to.
func (pf *planFlags) pricing(ctx context.Context) (pricing, error) {
	mc, err := parseModel(*pf.model)
	if err != nil {
		return pricing{}, fmt.Errorf("plan: %w", err)
	}
	if *pf.workBucket != "" && mc.choice != modelMeasure {
		return pricing{}, usageErrorf("plan --work-bucket: names where --model measure writes its probes, and plan measures only when told to: add --model measure, or drop --work-bucket")
	}
	endpoint := endpointOrEnv(*pf.rf.endpoint)
	switch {
	case mc.file != nil:
		return pricing{mc.file, pricedFile, "the one in " + mc.choice + " (--model), AWS's where it gives no field"}, nil
	case mc.choice == modelAWS || (mc.choice == "" && endpoint == ""):
		return pricing{with: pricedAWS}, nil
	case mc.choice == "":
		m, path, ok := keptProfile(endpoint)
		if !ok {
			return pricing{with: pricedAWS, note: fmt.Sprintf("AWS's: none is kept of the S3 server at %s, so create's first run there measures it and prices with it, "+
				"and may choose another layout (plan --model measure --work-bucket B measures it now)", endpoint)}, nil
		}
		return pricing{serverModel(m), pricedServer, fmt.Sprintf("the S3 server at %s, measured %s and kept in %s, as create prices there (--model aws prices for AWS)",
			endpoint, m.At.UTC().Format("2006-01-02 15:04 UTC"), path)}, nil
	case endpoint == "":
		return pricing{}, usageErrorf("plan --model measure: measures the server --endpoint names, and there is none (AWS's profile is --model aws)")
	case *pf.workBucket == "":
		return pricing{}, usageErrorf("plan --model measure: give --work-bucket B, the bucket create would write to (its --dest's bucket): measuring writes ~48 MiB there under s3zip-work/ and removes it")
	}
	client, err := connect(ctx, "plan", *pf.rf.endpoint, bucketCheck{role: "work", bucket: *pf.workBucket})
	if err != nil {
		return pricing{}, err
	}
	model, note, err := mc.resolve(ctx, endpoint, client, *pf.workBucket)
	if err != nil {
		return pricing{}, fmt.Errorf("plan: %w", err)
	}
	return pricing{model, pricedServer, note}, nil
}

// modelOf returns the model a plan is priced with. That is the options'
// model, the profile --model and --endpoint chose with --source-prefixes,
// else AWS's.
func modelOf(opts plan.Options) plan.Model {
	if opts.Model != nil {
		return *opts.Model
	}
	return plan.DefaultModel
}

// planOnlyDestination stands in for --dest, which plan does not take. The
// request must name one to be valid, and nothing is written to it.
var planOnlyDestination = create.Destination{Bucket: "s3zip-plan-only-destination", Key: "plan.zip"}

// s3Entries lists the source prefix or reads the S3 manifest, looking up
// every object, as create's planner does, and names the entries.
func s3Entries(ctx context.Context, rf *requestFlags) ([]plan.Entry, error) {
	req, err := rf.sourceRequest("plan")
	if err != nil {
		return nil, err
	}
	req.Destination = planOnlyDestination
	if err := req.Validate(); err != nil {
		return nil, inFlagTerms(err)
	}
	client, err := connect(ctx, "plan", *rf.endpoint, runChecks(req, "")[:1]...)
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(req)
	pl := &create.Planner{S3: client, Config: create.Config{DefaultMaxConcurrency: *rf.workers}}
	entries, _, err := pl.Entries(ctx, raw)
	if err != nil {
		return nil, inFlagTerms(err)
	}
	return entries, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// manifestEntries reads a manifest whose every line has a size. Entries take
// the manifest's names, or the keys.
func manifestEntries(path string) ([]plan.Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	defer f.Close()
	lines, err := manifest.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("plan: %s: %w", path, err)
	}
	entries := make([]plan.Entry, 0, len(lines))
	for _, l := range lines {
		if l.Size < 0 {
			return nil, fmt.Errorf("plan: %s: %w", path, &manifest.Error{Line: l.LineNum, Msg: "no size (s3zip plan needs every object's size)"})
		}
		name := l.Name
		if name == "" {
			name = l.Key
		}
		bucket := l.Bucket
		if bucket == "" {
			bucket = "manifest"
		}
		entries = append(entries, plan.Entry{Name: name, Source: plan.Source{Bucket: bucket, Key: l.Key, ETag: l.ETag}, Size: l.Size, CRC32: l.CRC32, Dir: l.Size == 0 && len(name) > 0 && name[len(name)-1] == '/'})
	}
	return entries, nil
}

// count returns n things in words, such as "1 entry", "2 entries" or "0 directories".
// strategyLine is the strategy asked for and, for auto, the layout it
// chose, as the parts show it.
func strategyLine(sum *planSummary) string {
	if sum.Strategy != plan.StrategyAuto {
		return string(sum.Strategy)
	}
	var layout string
	switch {
	case sum.ChainParts > 0 && sum.CopyParts > 0:
		layout = "chained runs beside copies and uploads (auto's mix)"
	case sum.ChainParts > 0:
		layout = "chains (chain's layout)"
	case sum.CopyParts > 0:
		layout = "copies and uploads (duo's layout)"
	default:
		layout = "uploads only (stream's layout)"
	}
	return "auto, chose " + layout
}

func count[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
