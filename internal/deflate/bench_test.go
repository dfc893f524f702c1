package deflate

import (
	"bytes"
	stdflate "compress/flate"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	kflate "github.com/klauspost/compress/flate"
)

// textCorpus is 16 MiB of log lines, CSV rows and JSON records: the data
// the compression option is for.
func textCorpus() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	paths := []string{"/api/v1/users", "/api/v1/orders", "/static/app.js", "/healthz", "/api/v2/search"}
	for i := 0; b.Len() < 16<<20; i++ {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "2026-11-23T08:%02d:%02d.%03dZ INFO request method=GET path=%s status=%d bytes=%d latency_ms=%d ip=10.%d.%d.%d\n",
				r.IntN(60), r.IntN(60), r.IntN(1000), paths[r.IntN(len(paths))], 200+r.IntN(4)*100, r.IntN(100000), r.IntN(900), r.IntN(256), r.IntN(256), r.IntN(256))
		case 1:
			fmt.Fprintf(&b, "%d,%s,%d.%02d,%s,%d\n", i, []string{"alice", "bob", "carol", "dave"}[r.IntN(4)], r.IntN(10000), r.IntN(100), []string{"EUR", "USD", "GBP"}[r.IntN(3)], r.IntN(50))
		default:
			fmt.Fprintf(&b, `{"id":%d,"user":"u%05d","event":"%s","ok":%t,"value":%f}`+"\n", i, r.IntN(50000), []string{"click", "view", "buy"}[r.IntN(3)], r.IntN(2) == 0, r.Float64())
		}
	}
	return b.Bytes()
}

func BenchmarkDeflate(b *testing.B) {
	data := textCorpus()
	for _, level := range benchLevels {
		b.Run(fmt.Sprintf("stdlib/level%d", level), func(b *testing.B) {
			w, _ := stdflate.NewWriter(io.Discard, level)
			bench(b, data, func(dst io.Writer) { w.Reset(dst); w.Write(data); w.Close() })
		})
		b.Run(fmt.Sprintf("klauspost/level%d", level), func(b *testing.B) {
			w, _ := kflate.NewWriter(io.Discard, level)
			bench(b, data, func(dst io.Writer) { w.Reset(dst); w.Write(data); w.Close() })
		})
	}
}

func bench(b *testing.B, data []byte, compress func(io.Writer)) {
	var out bytes.Buffer
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		out.Reset()
		compress(&out)
	}
	b.ReportMetric(float64(len(data))/float64(out.Len()), "ratio")
}

var benchLevels = []int{1, 5, 6, 7, 9}
