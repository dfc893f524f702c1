// Package main is an example consumer of the archive workflow's end: an
// EventBridge rule (rule.json) sends the state machine's "Step Functions
// Execution Status Change" events for SUCCEEDED, FAILED, TIMED_OUT and
// ABORTED to this Lambda, which turns each into a Notice (the archive and
// its link, or the error and its cause) and posts it to WEBHOOK_URL, where
// your application learns that its archive is ready. The output it reads
// is the contract of docs/output.md.
package main

import (
	"encoding/json"
	"fmt"
)

// Event is the EventBridge event, as far as a consumer needs it.
type Event struct {
	DetailType string `json:"detail-type"`
	Source     string `json:"source"`
	Detail     Detail `json:"detail"`
}

// Detail is a Step Functions execution's status change. Input and Output
// are JSON documents in strings; EventBridge leaves one out (and says so
// in its *Details.included) when it is over 256 KiB.
type Detail struct {
	ExecutionArn    string `json:"executionArn"`
	StateMachineArn string `json:"stateMachineArn"`
	Name            string `json:"name"`
	Status          string `json:"status"`
	Input           string `json:"input"`
	Output          string `json:"output"`
	Error           string `json:"error"`
	Cause           string `json:"cause"`
}

// output is what this consumer reads of the execution's output, version 1.
type output struct {
	Version   int    `json:"version"`
	RequestID string `json:"requestId"`
	Archive   struct {
		URI  string `json:"uri"`
		Size int64  `json:"size"`
	} `json:"archive"`
	Entries int     `json:"entries"`
	Seconds float64 `json:"seconds"`
	Links   *struct {
		Archive string `json:"archive"`
		Expires string `json:"expires"`
	} `json:"links"`
	Warnings []string `json:"warnings"`
}

// Notice is what the application is told.
type Notice struct {
	RequestID string   `json:"requestId"`
	Execution string   `json:"execution"` // the execution's ARN
	Status    string   `json:"status"`    // SUCCEEDED, FAILED, TIMED_OUT, ABORTED
	Archive   string   `json:"archive,omitempty"`
	Size      int64    `json:"size,omitempty"`
	Entries   int      `json:"entries,omitempty"`
	Seconds   float64  `json:"seconds,omitempty"`
	Link      string   `json:"link,omitempty"`
	Expires   string   `json:"expires,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
	Error     string   `json:"error,omitempty"` // the error type: RequestError, SourceChangedError, States.Timeout, …
	Cause     string   `json:"cause,omitempty"`
}

// NoticeOf reads one event.
func NoticeOf(ev Event) (*Notice, error) {
	if ev.Source != "aws.states" || ev.DetailType != "Step Functions Execution Status Change" {
		return nil, fmt.Errorf("event %q from %q is not a Step Functions execution status change: check the rule's pattern (rule.json)", ev.DetailType, ev.Source)
	}
	d := ev.Detail
	n := &Notice{RequestID: requestID(d), Execution: d.ExecutionArn, Status: d.Status, Error: d.Error, Cause: d.Cause}
	if d.Status != "SUCCEEDED" {
		return n, nil
	}
	if d.Output == "" {
		return nil, fmt.Errorf("execution %s: the event carries no output (over 256 KiB); read it with DescribeExecution", d.ExecutionArn)
	}
	var out output
	if err := json.Unmarshal([]byte(d.Output), &out); err != nil {
		return nil, fmt.Errorf("execution %s: output is not JSON: %w", d.ExecutionArn, err)
	}
	if out.Version != 1 {
		return nil, fmt.Errorf("execution %s: output version %d; this consumer reads version 1 (docs/output.md)", d.ExecutionArn, out.Version)
	}
	n.RequestID = out.RequestID
	n.Archive, n.Size, n.Entries, n.Seconds, n.Warnings = out.Archive.URI, out.Archive.Size, out.Entries, out.Seconds, out.Warnings
	if out.Links != nil {
		n.Link, n.Expires = out.Links.Archive, out.Links.Expires
	}
	return n, nil
}

// requestID is the request's id from the execution's input, or the
// execution's name: what the output's requestId would have been. (A run
// started from a request object has only the object's location as input.)
func requestID(d Detail) string {
	var in struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(d.Input), &in) == nil && in.ID != "" {
		return in.ID
	}
	return d.Name
}
