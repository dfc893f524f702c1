package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/s3part"
	"github.com/s3zip/s3zip/internal/testenv/faultproxy"
	"github.com/s3zip/s3zip/plan"
)

// localModel is plan.Model's local profile: this machine's server as
// calibrated, the link each emulated Lambda gets, and the worker's own
// concurrency. Prices stay AWS's, so auto weighs cost as it would there.
// With rateFactor, S3's request rates are divided by it, as the server
// serves them (benchRates); without, they stay AWS's, which a data set
// this small never reaches.
func localModel(cal calibration, rateFactor float64) plan.Model {
	m := plan.DefaultModel
	cfg := create.Config{}.Defaults()
	m.WorkerBandwidth = cal.LinkRate
	m.RequestLatency = cal.RequestSeconds
	m.CopyRate = cal.CopyOneRate
	m.Concurrency = cfg.PartConcurrency
	// The fixed costs of a run, as a one-object run through the real
	// runner measured them.
	m.StartSeconds = cal.PlanSeconds
	m.FinishSeconds = cal.FinishSeconds
	m.LaunchRate = cal.LaunchRate
	m.InvokeSeconds = cal.InvokeSeconds
	m.CompletePerPart = 0
	m.ListPageSeconds = cal.RequestSeconds
	m.ServerIngestRate, m.ServerGetRate, m.ServerCopyRate = cal.ThroughIngestRate, cal.ThroughGetRate, cal.CopyRate
	m.ServerRequestRate = cal.RequestRate
	m.CompletePerByte = cal.CompletePerByte
	m.StreamPasses = 2
	if rateFactor > 0 {
		m.S3ReadRate, m.S3WriteRate = faultproxy.S3ReadRate/rateFactor, faultproxy.S3WriteRate/rateFactor
		m.SourcePrefixes = 1
	}
	return m
}

// predict plans the run as the planner will (same listing, names, options
// and profile) and prices it with the model, before the run: its time and
// what it asks of S3's request rates.
func predict(ctx context.Context, c *s3.Client, m plan.Model, r runSpec) (plan.Prediction, plan.RateDemand, error) {
	var entries []plan.Entry
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(srcPrefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return plan.Prediction{}, plan.RateDemand{}, fmt.Errorf("list the data set: %w", err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			entries = append(entries, plan.Entry{Name: strings.TrimPrefix(key, srcPrefix), Size: aws.ToInt64(o.Size),
				Source: plan.Source{Bucket: bucket, Key: key, ETag: aws.ToString(o.ETag)}})
		}
	}
	strategy, err := plan.ParseStrategy(r.Strategy)
	if err != nil {
		return plan.Prediction{}, plan.RateDemand{}, err
	}
	per := r.PartsPerBatch
	if per == 0 {
		per = s3part.MaxParts
	}
	pl, err := plan.Make(entries, plan.Options{Strategy: strategy, Workers: r.Workers, Model: &m, PartsPerBatch: per})
	if err != nil {
		return plan.Prediction{}, plan.RateDemand{}, fmt.Errorf("plan %s: %w", r.Name, err)
	}
	st := pl.Stats()
	return m.Predict(st, plan.Run{Workers: r.Workers, Orchestrated: true, Loads: pl.Loads(per), HeadsUpFront: len(pl.CRCsNeeded())}), m.S3Rates(st), nil
}
