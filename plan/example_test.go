package plan_test

import (
	"fmt"
	"time"

	"github.com/s3zip/s3zip/plan"
)

// Make lays out an archive of S3 objects byte for byte before any byte is
// read: where each entry's header and data go, and the multipart upload's
// parts that hold them (streamed, or copied server-side from the source).
func ExampleMake() {
	when := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var entries []plan.Entry
	for i, size := range []int64{12 << 20, 3 << 10, 40 << 20} {
		entries = append(entries, plan.Entry{
			Name:    fmt.Sprintf("data/part-%d.bin", i),
			Source:  plan.Source{Bucket: "src", Key: fmt.Sprintf("in/%d.bin", i), ETag: fmt.Sprintf(`"etag-%d"`, i)},
			Size:    size,
			ModTime: when,
			CRC32:   plan.KnownCRC(uint32(0x1000 + i)),
		})
	}
	p, err := plan.Make(entries, plan.Options{Strategy: plan.StrategyDuo, PartSize: 16 << 20, Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s plan: %d bytes, central directory at %d, %d parts\n", p.Strategy, p.Size, p.DirectoryOffset, len(p.Parts))
	for _, part := range p.Parts {
		what := fmt.Sprintf("entries %d-%d", part.First, int(part.First)+part.Count-1)
		if part.Count == 0 {
			what = "the central directory"
		}
		fmt.Printf("part %d: bytes %d-%d, %s, %s\n", part.Number, part.Start, part.End-1, part.Kind, what)
	}
	// Output:
	// duo plan: 54529418 bytes, central directory at 54529186, 5 parts
	// part 1: bytes 0-5242879, upload, entries 0-1
	// part 2: bytes 5242880-12586091, copy, entries 1-1
	// part 3: bytes 12586092-17828971, upload, entries 2-2
	// part 4: bytes 17828972-54529185, copy, entries 2-2
	// part 5: bytes 54529186-54529417, upload, the central directory
}
