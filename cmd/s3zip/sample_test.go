package main

import (
	"testing"
)

// sample into a bucket that does not exist is refused in one line that
// names --create-bucket; --create-bucket makes it, and a second run into
// the bucket it made (the caller's own) works too.
func TestSampleBucket(t *testing.T) {
	srv := cliServer(t)
	ep := "--endpoint=" + srv.Endpoint()
	small := []string{"--count", "2", "--scale", "0.001", ep}
	expect{code: exitRefused, stderrMax: 1, banned: rawErrors,
		stderr: []string{`sample: destination bucket "fresh" does not exist at ` + srv.Endpoint() + "; add --create-bucket to create it"}}.
		check(t, s3zip(t, nil, append([]string{"sample", "--dest", "s3://fresh/data/"}, small...)...))
	for _, run := range []string{"first", "second"} {
		t.Run(run, func(t *testing.T) {
			expect{stdout: []string{"uploaded 2 objects", "to s3://fresh/data/"}, stdoutOnly: true}.
				check(t, s3zip(t, nil, append([]string{"sample", "--dest", "s3://fresh/data/", "--create-bucket"}, small...)...))
		})
	}
	if keys := listKeys(t, srv, "fresh", "data/"); len(keys) != 2 {
		t.Errorf("two runs of the same sample left %d objects, want the same 2: %q", len(keys), keys)
	}
}
