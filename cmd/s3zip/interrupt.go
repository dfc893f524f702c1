package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/s3err"
)

// signalCause is the signal that cancelled the command's context.
type signalCause struct{ sig os.Signal }

func (s *signalCause) Error() string { return "interrupted by " + s.sig.String() }

// exitCode is the shell's convention for a process ended by a signal.
func (s *signalCause) exitCode() int {
	if n, ok := s.sig.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 130
}

// notifyInterrupt returns a context that the first SIGINT or SIGTERM
// cancels, so the command stops and cleans up. Ctrl-C sends SIGINT, and a
// timeout, a CI cancel or docker stop sends SIGTERM. A second signal stops
// the process at once, cutting a slow clean-up short and saying how to
// finish it.
func notifyInterrupt(parent context.Context) (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		first := <-sigs
		cause := &signalCause{first}
		cancel(cause)
		fmt.Fprintln(os.Stderr, "\ns3zip: interrupted; stopping and cleaning up (interrupt again to stop at once)")
		<-sigs
		msg := "s3zip: interrupted again; stopped before the clean-up finished"
		if hint := getCleanupHint(); hint != "" {
			msg += "; " + hint
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(cause.exitCode())
	}()
	return ctx, func() { signal.Stop(sigs); cancel(nil) }
}

// interrupted returns the signal that cancelled ctx, if one did.
func interrupted(ctx context.Context) (*signalCause, bool) {
	var sc *signalCause
	ok := errors.As(context.Cause(ctx), &sc)
	return sc, ok
}

// interruptedError is an interrupted command's outcome, said plainly.
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return e.msg }

// interruptedCreate says what an interrupted create left. It looks, rather
// than trusting that the clean-up ran.
func interruptedCreate(ctx context.Context, c *s3.Client, workBucket, execution string, job *create.Job) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	left := workLeft(ctx, c, workBucket, workPrefix(workBucket)+execution+"/")
	if job != nil && job.UploadID != "" {
		d := job.Destination
		_, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: &d.Bucket, Key: &d.Key, UploadId: aws.String(job.UploadID)})
		if err == nil {
			left = append(left, "the multipart upload of "+d.URI())
		} else if !s3err.NotFound(err) {
			left = append(left, fmt.Sprintf("the multipart upload of %s unknown (%v)", d.URI(), err))
		}
	}
	if len(left) > 0 {
		return &interruptedError{fmt.Sprintf("interrupted; clean-up incomplete, left: %s; %s", strings.Join(left, ", "), getCleanupHint())}
	}
	if job == nil {
		return &interruptedError{"interrupted while planning; work removed, nothing left behind"}
	}
	return &interruptedError{"interrupted; upload aborted, work removed"}
}

// interruptedExtract says what an interrupted extract left, given the
// run's error, which has its Abort's failure joined to it when that failed
// too. It looks for work objects and open uploads rather than trusting the
// Abort.
func interruptedExtract(ctx context.Context, c *s3.Client, req extract.Request, runErr error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	left := workLeft(ctx, c, req.WorkBucket, extract.Config{WorkBucket: req.WorkBucket}.Defaults().ExecutionPrefix(req.Execution))
	ups, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &req.DestBucket, Prefix: &req.Prefix})
	if err != nil {
		left = append(left, fmt.Sprintf("multipart uploads under s3://%s/%s unknown (%v)", req.DestBucket, req.Prefix, err))
	} else if n := len(ups.Uploads); n > 0 {
		left = append(left, fmt.Sprintf("%d multipart uploads under s3://%s/%s", n, req.DestBucket, req.Prefix))
	}
	if strings.Contains(runErr.Error(), "cleaning up after the failure also failed") {
		left = append(left, "maybe objects it wrote (its clean-up failed)")
	}
	if len(left) > 0 {
		return &interruptedError{fmt.Sprintf("interrupted; clean-up incomplete, left: %s; %s", strings.Join(left, ", "), getCleanupHint())}
	}
	if req.Overwrite {
		return &interruptedError{fmt.Sprintf("interrupted; nothing it wrote under s3://%s/%s is left but the objects --overwrite replaced, which hold the archive's content; work removed", req.DestBucket, req.Prefix)}
	}
	return &interruptedError{fmt.Sprintf("interrupted; nothing it wrote under s3://%s/%s is left, work removed", req.DestBucket, req.Prefix)}
}

// quietOnInterrupt drops log records once a signal has cancelled ctx. Every
// request then fails with "context canceled", which says nothing the final
// message does not.
type quietOnInterrupt struct {
	ctx context.Context
	slog.Handler
}

func (q quietOnInterrupt) Enabled(ctx context.Context, l slog.Level) bool {
	if _, ok := interrupted(q.ctx); ok {
		return false
	}
	return q.Handler.Enabled(ctx, l)
}

func (q quietOnInterrupt) WithAttrs(as []slog.Attr) slog.Handler {
	return quietOnInterrupt{q.ctx, q.Handler.WithAttrs(as)}
}

func (q quietOnInterrupt) WithGroup(name string) slog.Handler {
	return quietOnInterrupt{q.ctx, q.Handler.WithGroup(name)}
}
