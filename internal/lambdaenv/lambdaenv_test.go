package lambdaenv

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
)

func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		want      int64
		wantLimit bool
	}{
		{"planner-2048", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2048"}, 1825361100, true},
		{"max-10240", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "10240"}, 9126805504, true},
		{"gomemlimit-set-wins", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "2048", "GOMEMLIMIT": "1GiB"}, 0, false},
		{"not-in-lambda", map[string]string{}, 0, false},
		{"garbage", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "lots"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := MemoryLimit(func(k string) string { return tc.env[k] })
			if got != tc.want || ok != tc.wantLimit {
				t.Fatalf("MemoryLimit = %d, %v; want %d, %v", got, ok, tc.want, tc.wantLimit)
			}
		})
	}
}

// An invocation that met SlowDowns logs one JSON line the monitoring's
// metric filter reads ({$.msg = "s3 slowdowns"}, value $.slowDowns); one
// that met none logs nothing.
func TestReportSlowDowns(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	ReportSlowDowns(log, 0)
	if buf.Len() != 0 {
		t.Fatalf("no SlowDown, yet logged %q", buf.String())
	}
	ReportSlowDowns(log, 7)
	var line struct {
		Msg       string `json:"msg"`
		SlowDowns int64  `json:"slowDowns"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line.Msg != "s3 slowdowns" || line.SlowDowns != 7 {
		t.Fatalf("logged %q (%v), want {\"msg\":\"s3 slowdowns\",\"slowDowns\":7}", buf.String(), err)
	}
}
