package lambdaenv

import "testing"

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
