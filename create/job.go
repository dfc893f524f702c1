package create

// Job is what every later state needs: small, whatever the archive's size.
type Job struct {
	Execution      string      `json:"execution"`
	WorkBucket     string      `json:"workBucket"`
	WorkPrefix     string      `json:"workPrefix"`
	PlanKey        string      `json:"planKey"`
	EntriesKey     string      `json:"entriesKey"`
	PartsKey       string      `json:"partsKey"`
	PadKey         string      `json:"padKey,omitempty"` // the zero pad chains start from
	Destination    Destination `json:"destination"`
	UploadID       string      `json:"uploadId"`
	WorkerParts    int         `json:"workerParts"` // part jobs: lines of parts.jsonl
	MaxConcurrency int         `json:"maxConcurrency"`
	PartsPerBatch  int         `json:"partsPerBatch"` // BuildParts' MaxItemsPerBatchPath
	// PartsInFlight is the parts one worker builds at once, as the plan
	// was priced (plan.Fit.InFlight); 0 leaves the deployment's
	// PART_CONCURRENCY.
	PartsInFlight int `json:"partsInFlight,omitempty"`
	// Archives is how many archives a split run writes (0: one, at
	// Destination, with UploadID); each part job names its archive's upload.
	Archives int `json:"archives,omitempty"`
	// Restarts is how many times the archive's upload was started again
	// after S3 ended it at its completion (RestartUpload).
	Restarts int `json:"restarts,omitempty"`
	// Overwrite allows replacing an existing archive; without it the upload
	// completes only if the key is still free (If-None-Match).
	Overwrite bool `json:"overwrite,omitempty"`
	// Output is what the finalizer's output carries from the request.
	Output OutputSpec `json:"output"`
}
