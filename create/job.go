package create

// Job is what every later state needs. It stays small whatever the
// archive's size.
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
	WorkerParts    int         `json:"workerParts"` // the part jobs, one a line of parts.jsonl
	MaxConcurrency int         `json:"maxConcurrency"`
	PartsPerBatch  int         `json:"partsPerBatch"` // BuildParts' MaxItemsPerBatchPath
	// PartsInFlight is the parts one worker builds at once, as
	// plan.Fit.InFlight priced the plan. 0 leaves the deployment's
	// PART_CONCURRENCY.
	PartsInFlight int `json:"partsInFlight,omitempty"`
	// Archives is how many archives a split run writes, each part job naming
	// its archive's upload. 0 means one archive, at Destination, with UploadID.
	Archives int `json:"archives,omitempty"`
	// Restarts is how many times RestartUpload started the archive's upload
	// again after S3 ended it at its completion.
	Restarts int `json:"restarts,omitempty"`
	// Overwrite allows replacing an existing archive. Without it the upload
	// completes only if the key is still free, by If-None-Match.
	Overwrite bool `json:"overwrite,omitempty"`
	// Output is what the finalizer's output carries from the request.
	Output OutputSpec `json:"output"`
}
