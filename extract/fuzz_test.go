package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/zipread"
)

// memObject serves one object from memory: a fake for fuzzing the readers,
// which only HEAD and make ranged GETs.
type memObject []byte

func (m memObject) HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return &s3.HeadObjectOutput{ContentLength: aws.Int64(int64(len(m))), ETag: aws.String(`"e"`)}, nil
}

func (m memObject) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	var from, to int64
	if _, err := fmt.Sscanf(aws.ToString(in.Range), "bytes=%d-%d", &from, &to); err != nil || from < 0 || from > to || to >= int64(len(m)) {
		return nil, fmt.Errorf("range %q not satisfiable for %d bytes", aws.ToString(in.Range), len(m))
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(m[from : to+1]))}, nil
}

func seedZip(f *testing.F, method uint16, names ...string) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for i, n := range names {
		e, err := w.CreateHeader(&zip.FileHeader{Name: n, Method: method})
		if err != nil {
			f.Fatal(err)
		}
		e.Write(bytes.Repeat([]byte{byte(i)}, 100*i))
	}
	w.SetComment("comment")
	w.Close()
	f.Add(buf.Bytes())
}

// FuzzPlan: whatever the bytes, reading the central directory and local
// headers and planning never panics, and a plan that comes out only reads
// or copies ranges inside the entries' data, never overlapping, each
// ending before the central directory.
func FuzzPlan(f *testing.F) {
	seedZip(f, zip.Store, "a.txt", "b/c.bin", "d/")
	seedZip(f, zip.Deflate, "a.txt", "b.txt", "c.txt")
	seedZip(f, zip.Store, "../evil", "ok")
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx := context.Background()
		a, err := zipread.Open(ctx, memObject(b), "b", "k.zip")
		if err != nil {
			return
		}
		if a.CentralDirStart < 0 || a.CentralDirStart+a.CentralDirSize > a.Size {
			t.Fatalf("central directory %d+%d outside the %d-byte object", a.CentralDirStart, a.CentralDirSize, a.Size)
		}
		for _, opts := range []Options{{}, {SmallStored: -1, SkipUnsupported: true}} {
			checked, err := Check(a, "p/", opts)
			if err != nil {
				continue
			}
			starts, err := a.DataStarts(ctx, checked.Keep, 4)
			if err != nil {
				continue
			}
			p, err := PlanJobs(a, "p/", checked, starts, opts)
			if err != nil {
				continue
			}
			type span struct {
				Range
				name string
			}
			var spans []span
			for _, j := range p.Jobs {
				for _, it := range j.Items {
					r := Range{it.Offset, it.Bound} // a read job finds the data in it
					if j.Kind == KindCopy {
						r = Range{it.DataStart, it.DataStart + it.CompressedSize}
					}
					if r.Start < 0 || r.End > a.CentralDirStart || r.End < r.Start {
						t.Fatalf("entry %q: %v outside the entries (central directory at %d)", it.Name, r, a.CentralDirStart)
					}
					if r.End > r.Start {
						spans = append(spans, span{r, it.Name})
					}
				}
				for _, r := range j.Ranges {
					if r.Start < 0 || r.End > a.CentralDirStart || r.End < r.Start {
						t.Fatalf("job range %v outside the entries (central directory at %d)", r, a.CentralDirStart)
					}
				}
			}
			sort.Slice(spans, func(i, j int) bool { return spans[i].Start < spans[j].Start })
			for i := 1; i < len(spans); i++ {
				if spans[i].Start < spans[i-1].End {
					t.Fatalf("entries %q and %q overlap: %v, %v", spans[i-1].name, spans[i].name, spans[i-1].Range, spans[i].Range)
				}
			}
		}
	})
}
