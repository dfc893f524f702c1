package create

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/s3zip/s3zip/internal/failure"
	"github.com/s3zip/s3zip/internal/s3doc"
	"github.com/s3zip/s3zip/internal/s3err"
	"github.com/s3zip/s3zip/internal/s3prefix"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// begin reads and checks the request, before anything is listed or written.
func (pl *Planner) begin(ctx context.Context, cfg Config, in PlanInput) (*Request, error) {
	if in.Execution == "" {
		return nil, requestError("execution name is missing (the state machine passes $$.Execution.Name)")
	}
	req, err := pl.readRequest(ctx, cfg, in.Request)
	if err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if err := checkAllowed(cfg, req); err != nil {
		return nil, err
	}
	if !req.Options.Overwrite {
		if err := pl.checkDestinationFree(ctx, req.Destination); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// readRequest decodes the request, following requestObject to the document
// an EventBridge rule points to.
func (pl *Planner) readRequest(ctx context.Context, cfg Config, raw json.RawMessage) (*Request, error) {
	if len(raw) == 0 {
		return nil, requestError("request is missing")
	}
	req, err := DecodeRequest(raw)
	if err != nil {
		return nil, err
	}
	if ref := req.RequestObject; ref != nil {
		if req.Source != (Source{}) || req.Destination != (Destination{}) {
			return nil, requestError("a request with requestObject must not also give source or destination")
		}
		var bad []string
		for _, msg := range []string{checkBucket("requestObject.bucket", ref.Bucket), checkKey("requestObject.key", ref.Key)} {
			if msg != "" {
				bad = append(bad, msg)
			}
		}
		if bad != nil {
			return nil, &failure.RequestError{Problems: bad}
		}
		if cfg.ControlBucket != "" && ref.Bucket != cfg.ControlBucket {
			return nil, requestError("requestObject s3://%s/%s: request objects are read only from the control bucket %s", ref.Bucket, ref.Key, cfg.ControlBucket)
		}
		doc, err := getBytes(ctx, pl.S3, ref.Bucket, ref.Key, MaxRequestBytes)
		if err != nil {
			return nil, refError("request object", ref.Bucket, ref.Key, err)
		}
		if req, err = DecodeRequest(doc); err != nil {
			return nil, fmt.Errorf("request object s3://%s/%s: %w", ref.Bucket, ref.Key, err)
		}
		if req.RequestObject != nil {
			return nil, requestError("request object s3://%s/%s points to another request object", ref.Bucket, ref.Key)
		}
	}
	return req, nil
}

func checkAllowed(cfg Config, req *Request) error {
	var bad []string
	if m := req.Source.Manifest; m != nil {
		if m.Bucket != cfg.ControlBucket && !s3prefix.Allowed(cfg.AllowedSources, m.Bucket, m.Key) {
			bad = append(bad, fmt.Sprintf("manifest s3://%s/%s is outside the sources this deployment allows", m.Bucket, m.Key))
		}
	} else if req.Source.Inventory == nil && !s3prefix.Allowed(cfg.AllowedSources, req.Source.Bucket, req.Source.Prefix) {
		// inventoryEntries checks an inventory's keys one by one as it
		// reads them, and the CDK's inventoryBuckets grant covers reading
		// the report.
		bad = append(bad, fmt.Sprintf("source s3://%s/%s is outside the sources this deployment allows", req.Source.Bucket, req.Source.Prefix))
	}
	if !s3prefix.Allowed(cfg.AllowedDestinations, req.Destination.Bucket, req.Destination.Key) {
		bad = append(bad, fmt.Sprintf("destination %s is outside the destinations this deployment allows", req.Destination.URI()))
	}
	if msg := checkKMSKeyGranted(cfg, req.Options.SSE); msg != "" {
		bad = append(bad, msg)
	}
	if msg := checkPresignAllowed(cfg, req.Options.Presign); msg != "" {
		bad = append(bad, msg)
	}
	if bad != nil {
		return &failure.RequestError{Problems: bad}
	}
	return nil
}

// checkKMSKeyGranted refuses an SSE-KMS key the deployment's roles may not
// use, which S3 would accept and then refuse with AccessDenied at the first
// write, the archive's CreateMultipartUpload. SSE-S3 and SSE-KMS with no key
// named need no grant, since S3's AWS-managed key aws/s3 admits the account
// through S3. The granted key may be named by its ARN or its key ID. An
// alias cannot be told apart from another key without asking KMS.
func checkKMSKeyGranted(cfg Config, sse *SSE) string {
	if !cfg.KMSKeyGranted || sse == nil || sse.Type != "aws:kms" || sse.KMSKeyID == "" {
		return ""
	}
	granted := cfg.DestinationKMSKeyID
	if granted != "" && (sse.KMSKeyID == granted || strings.HasSuffix(granted, ":key/"+sse.KMSKeyID)) {
		return ""
	}
	may, instead := "no customer-managed key", "leave kmsKeyId out for S3's AWS-managed key aws/s3"
	if granted != "" {
		may, instead = "only "+granted, "leave options.sse out for that key"
	}
	return fmt.Sprintf("options.sse.kmsKeyId %q is not granted to this deployment (its roles may encrypt archives with %s): "+
		"set the CDK context destinationKmsKeyArn (ArchiveWorkflow's destinationKmsKeyArn, env DESTINATION_KMS_KEY_ARN) to that key's ARN and deploy again, or %s",
		sse.KMSKeyID, may, instead)
}

// checkDestinationFree checks, before anything is written, that neither the
// archive's key nor its ReportKey holds an object, because without overwrite
// a run replaces neither.
func (pl *Planner) checkDestinationFree(ctx context.Context, d Destination) error {
	if err := pl.checkKeyFree(ctx, d); err != nil {
		return err
	}
	return checkReportFree(ctx, pl.S3, d)
}

// checkKeyFree refuses a key that holds an object.
func (pl *Planner) checkKeyFree(ctx context.Context, d Destination) error {
	_, err := pl.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &d.Bucket, Key: &d.Key})
	switch {
	case err == nil:
		return &failure.DestinationExistsError{Bucket: d.Bucket, Key: d.Key}
	case !s3err.NotFound(err):
		return s3Error("HeadObject", d.Bucket, d.Key, false, err)
	}
	return nil
}

// refError makes a missing or oversized request object or manifest a
// request error, because the request names something it cannot be read from.
func refError(what, bucket, key string, err error) error {
	var tooBig *s3doc.TooLargeError
	switch {
	case errors.As(err, &tooBig):
		return requestError("%s s3://%s/%s is over %d bytes", what, bucket, key, tooBig.Limit)
	case s3err.NotFound(err):
		return requestError("%s s3://%s/%s does not exist", what, bucket, key)
	}
	return fmt.Errorf("%s: %w", what, err)
}
