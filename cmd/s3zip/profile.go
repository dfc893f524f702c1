package main

import (
	"context"
	"fmt"
	"time"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/internal/s3profile"
	"github.com/s3zip/s3zip/plan"
)

// The --model choices besides a file.
const (
	modelAWS     = "aws"     // AWS's profile, plan.DefaultModel
	modelMeasure = "measure" // the endpoint's server measured now
)

// modelChoices is what --model takes, said alike by create and plan. Each
// command says its own default.
const modelChoices = "the cost model's `profile` auto chooses a layout with: aws (AWS's S3 and Lambdas), measure (the --endpoint server, measured again now), " +
	"or a FILE of plan.Model's fields as JSON (a bench results.json's \"model\"); default: "

const modelHelp = modelChoices + "with --endpoint, that server's profile, " +
	"measured once with a few requests (~48 MiB written under the work prefix and removed) and kept for 30 days in the user cache directory's s3zip/profiles; without, aws"

// planModelHelp is the help of plan's --model, as plan writes nothing unless
// told to measure.
const planModelHelp = modelChoices + "with --endpoint, the profile create measured of that server and kept (the user cache directory's s3zip/profiles), " +
	"or aws when none is kept; without, aws. measure writes ~48 MiB under --work-bucket's s3zip-work/ and removes it"

// modelChoice is --model as given, with its file read before anything runs.
type modelChoice struct {
	choice string
	file   *plan.Model
}

func parseModel(choice string) (modelChoice, error) {
	if choice == "" || choice == modelAWS || choice == modelMeasure {
		return modelChoice{choice: choice}, nil
	}
	m, err := readModel(choice)
	if err != nil {
		return modelChoice{}, usageErrorf("--model: %v", err)
	}
	return modelChoice{choice: choice, file: m}, nil
}

// resolve returns the profile a run here prices auto's choices with, where
// nil is AWS's. With an endpoint and no --model it is the server's measured
// profile, which s3profile.Cache keeps by endpoint. When it measured, note
// says what, for the run's summary; a run that fails says only why.
func (mc modelChoice) resolve(ctx context.Context, endpoint string, c s3profile.Client, workBucket string) (model *plan.Model, note string, err error) {
	switch {
	case mc.file != nil:
		return mc.file, "", nil
	case mc.choice == modelAWS || (mc.choice == "" && endpoint == ""):
		return nil, "", nil
	case endpoint == "":
		return nil, "", usageErrorf("--model measure: measures the server --endpoint names, and there is none (AWS's profile is --model aws)")
	}
	if mc.choice == "" {
		if m, _, ok := keptProfile(endpoint); ok {
			return serverModel(m), "", nil
		}
	}
	cache, cacheErr := s3profile.DefaultCache()
	t0 := time.Now()
	m, err := s3profile.Measure(ctx, c, workBucket, workPrefix(workBucket))
	if err != nil {
		return nil, "", fmt.Errorf("%w (give --model aws to price for AWS instead, or a FILE)", err)
	}
	m.Endpoint = endpoint
	kept := "not kept: " + fmt.Sprint(cacheErr)
	if cacheErr == nil {
		if err := cache.Save(m); err != nil {
			kept = "not kept: " + err.Error()
		} else {
			kept = "kept in " + cache.Path(endpoint)
		}
	}
	note = fmt.Sprintf("the S3 server at %s measured for auto's choices in %.1f s (round trip %.0f ms, GET %s/s, copy %s/s, Complete %.2f s/GiB); %s",
		endpoint, time.Since(t0).Seconds(), m.RequestSeconds*1000, humanBytes(int64(m.GetOneRate)), humanBytes(int64(m.CopyRate)), m.CompletePerByte*(1<<30), kept)
	return serverModel(m), note, nil
}

// serverModel is a measured server's profile for a run here, whose workers
// build the workflow's parts in flight each.
func serverModel(m s3profile.Measured) *plan.Model {
	model := m.Model(create.Config{}.Defaults().PartConcurrency)
	return &model
}

// keptProfile is endpoint's profile kept in the user's cache, and where,
// when there is one younger than s3profile.MaxAge. An unreadable cache
// counts as none, so create measures again and plan prices for AWS.
func keptProfile(endpoint string) (m s3profile.Measured, path string, ok bool) {
	cache, err := s3profile.DefaultCache()
	if err != nil {
		return m, "", false
	}
	m, ok, err = cache.Load(endpoint, time.Now())
	return m, cache.Path(endpoint), ok && err == nil
}
