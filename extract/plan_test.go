package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3zip/s3zip/internal/objmeta"
	"github.com/s3zip/s3zip/internal/zipformat"
	"github.com/s3zip/s3zip/plan"
	"github.com/s3zip/s3zip/zipread"
)

// layout makes an archive whose entries lie back to back, each local header
// as long as the central directory says, and their data starts.
func layout(entries ...zipread.Entry) (*zipread.Archive, map[int]int64) {
	a := &zipread.Archive{Bucket: "b", Key: "k.zip"}
	starts := map[int]int64{}
	var off int64
	for i, e := range entries {
		e.Offset = off
		starts[i] = off + 30 + int64(len(e.Name))
		off = starts[i] + e.CompressedSize
		a.Entries = append(a.Entries, e)
	}
	a.CentralDirStart, a.CentralDirSize = off, 100
	a.Size = off + 122
	return a, starts
}

func stored(name string, n int64) zipread.Entry {
	return zipread.Entry{Name: name, Method: zipread.MethodStore, CompressedSize: n, UncompressedSize: n}
}

func deflated(name string, c, u int64) zipread.Entry {
	return zipread.Entry{Name: name, Method: zipread.MethodDeflate, CompressedSize: c, UncompressedSize: u}
}

func planOf(t *testing.T, opts Options, entries ...zipread.Entry) *Plan {
	t.Helper()
	a, starts := layout(entries...)
	checked, err := Check(a, "out/", opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanJobs(a, "out/", checked, starts, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// filler makes an archive over 5 MiB, whose ranges S3 copies: a DEFLATE
// entry, which is read.
var filler = deflated("filler.txt", 6<<20, 24<<20)

// jobOf is the job that writes the named entry.
func jobOf(t *testing.T, p *Plan, name string) Job {
	t.Helper()
	for _, j := range p.Jobs {
		for _, it := range j.Items {
			if it.Name == name {
				return j
			}
		}
	}
	t.Fatalf("no job writes %q: %+v", name, p.Jobs)
	return Job{}
}

// S3 copies a byte range only of a source over 5 MiB: the STORED entries of
// a smaller archive are read, whatever their size.
func TestPlanReadsTheEntriesOfASmallArchive(t *testing.T) {
	p := planOf(t, Options{SmallStored: -1}, stored("x.bin", 3<<20), stored("y.bin", 2<<20-200))
	for _, j := range p.Jobs {
		if j.Kind != KindRead {
			t.Errorf("a %s job in an archive of 5 MiB or less: %+v", j.Kind, j)
		}
	}
	if p.Copied != 0 {
		t.Errorf("copied %d bytes of an archive of 5 MiB or less", p.Copied)
	}
	if !p.ReadAll {
		t.Error("the plan does not say every entry is read (ReadAll), so its summary would say STORED entries are copied")
	}
	if big := planOf(t, Options{SmallStored: -1}, stored("x.bin", 6<<20)); big.ReadAll {
		t.Error("an archive over 5 MiB is planned as read whole (ReadAll)")
	}
}

func TestPlanCopyParts(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name  string
		size  int64
		parts []int64
	}{
		{"lone part under 5 MiB", 3 << 20, []int64{3 << 20}},
		{"lone part of 5 GiB", 5 * gib, []int64{5 * gib}},
		{"over 5 GiB: 5 GiB ranges", 12 * gib, []int64{5 * gib, 5 * gib, 2 * gib}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planOf(t, Options{SmallStored: -1}, filler, stored("x.bin", tc.size))
			j := jobOf(t, p, "x.bin")
			if j.Kind != KindCopy {
				t.Fatalf("jobs %+v, want x.bin copied", p.Jobs)
			}
			var got []int64
			next := j.Items[0].DataStart
			for _, r := range j.Ranges {
				if r.Start != next {
					t.Errorf("range %v does not follow %d", r, next)
				}
				next = r.End
				got = append(got, r.End-r.Start)
			}
			if len(got) != len(tc.parts) {
				t.Fatalf("parts %v, want %v", got, tc.parts)
			}
			for i := range got {
				if got[i] != tc.parts[i] {
					t.Errorf("parts %v, want %v", got, tc.parts)
				}
			}
			if p.Copied != tc.size {
				t.Errorf("copied %d, want %d", p.Copied, tc.size)
			}
		})
	}
}

func TestPlanKinds(t *testing.T) {
	p := planOf(t, Options{SmallStored: 1 << 20, ReadGroup: 4 << 20},
		stored("small1", 1000), stored("small2", 2000), deflated("d.txt", 3000, 9000),
		stored("big", 8<<20), stored("small3", 10), stored("dir/", 0), stored("empty", 0),
		deflated("huge.txt", 5<<20, 50<<20))
	kinds := map[Kind]int{}
	items := 0
	for _, j := range p.Jobs {
		kinds[j.Kind]++
		items += len(j.Items)
		if j.Kind == KindRead && len(j.Ranges) == 1 && j.Bytes() > 4<<20 && len(j.Items) > 1 {
			t.Errorf("a read group spans %d bytes, over the 4 MiB asked", j.Bytes())
		}
	}
	if items != 7 {
		t.Errorf("%d objects planned, want 7 (the directory makes none)", items)
	}
	if kinds[KindCopy] != 1 {
		t.Errorf("%d copy jobs, want 1 (only big is at least 1 MiB and STORED)", kinds[KindCopy])
	}
	if kinds[KindRead] != 3 {
		t.Errorf("%d read jobs, want 3 (small1..d.txt, small3+empty, huge.txt)", kinds[KindRead])
	}
	if p.Jobs[0].Bytes() < p.Jobs[len(p.Jobs)-1].Bytes() {
		t.Errorf("jobs not largest first")
	}
}

func TestCheckRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []zipread.Entry
		opts    Options
		want    []string
	}{
		{"zip slip", []zipread.Entry{stored("../x", 1), stored("a/../../y", 1)}, Options{}, []string{`"../x" has a ".." component`, `"a/../../y"`}},
		{"absolute and backslash", []zipread.Entry{stored("/etc/x", 1), stored(`a\b`, 1)}, Options{}, []string{"absolute", "backslash"}},
		{"NUL and bad UTF-8", []zipread.Entry{stored("a\x00b", 1), stored("\xff\xfe", 1)}, Options{}, []string{"NUL", "UTF-8"}},
		{"duplicate", []zipread.Entry{stored("a", 1), stored("a", 1)}, Options{}, []string{"same key"}},
		{"NFC collision, composed first", []zipread.Entry{stored("caf\u00e9.txt", 1), stored("cafe\u0301.txt", 1)}, Options{}, []string{"after Unicode NFC normalisation"}},
		{"NFC collision, decomposed first", []zipread.Entry{stored("cafe\u0301.txt", 1), stored("caf\u00e9.txt", 1)}, Options{}, []string{"after Unicode NFC normalisation"}},
		{"the report's name", []zipread.Entry{stored(ReportName, 1)}, Options{}, []string{"extraction report"}},
		{"bzip2", []zipread.Entry{{Name: "a", Method: 12, CompressedSize: 1, UncompressedSize: 1}}, Options{}, []string{"bzip2"}},
		{"encrypted", []zipread.Entry{{Name: "a", Flags: 1, CompressedSize: 1, UncompressedSize: 1}}, Options{}, []string{"encrypted"}},
		{"unsafe names not skipped", []zipread.Entry{stored("../x", 1), {Name: "a", Method: 12, CompressedSize: 1}}, Options{SkipUnsupported: true}, []string{`".." component`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := layout(tc.entries...)
			_, err := Check(a, "out/", tc.opts)
			var re *EntriesRefusedError
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a RefusedError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestCheckLayout(t *testing.T) {
	a, _ := layout(stored("a", 100), stored("b", 100))
	a.Entries[1].Offset = a.Entries[0].Offset // both name the same bytes
	if _, err := Check(a, "", Options{}); err == nil || !strings.Contains(err.Error(), "overlapping") {
		t.Errorf("overlapping entries: got %v", err)
	}
	a, _ = layout(stored("a", 100))
	a.Entries[0].CompressedSize, a.Entries[0].UncompressedSize = 1<<40, 1<<40
	if _, err := Check(a, "", Options{}); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("size past the central directory: got %v", err)
	}
	// A local header longer than the central directory suggests pushes the
	// data into the next entry: refused once the real start is known.
	a, starts := layout(stored("a", 100), stored("b", 100))
	starts[0] += 50
	checked, err := Check(a, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PlanJobs(a, "", checked, starts, Options{}); err == nil || !strings.Contains(err.Error(), "overlapping") {
		t.Errorf("data start pushed into the next entry: got %v", err)
	}
}

func TestSkipUnsupported(t *testing.T) {
	p := planOf(t, Options{SkipUnsupported: true}, stored("a", 5),
		zipread.Entry{Name: "b.bz2", Method: 12, CompressedSize: 3, UncompressedSize: 9},
		zipread.Entry{Name: "c", Flags: 1, CompressedSize: 3, UncompressedSize: 3})
	if p.Objects != 1 || len(p.Skipped) != 2 {
		t.Errorf("objects %d skipped %v, want 1 and b.bz2, c", p.Objects, p.Skipped)
	}
}

// TestSkipNotFiles: entries that are not files are skipped whatever the
// options, each with why; a plain directory entry is neither written nor listed.
func TestSkipNotFiles(t *testing.T) {
	with := func(e zipread.Entry, m fs.FileMode) zipread.Entry { e.Mode = m; return e }
	p := planOf(t, Options{}, stored("a", 5),
		with(stored("link", 8), fs.ModeSymlink|0o777),
		with(stored("tty", 0), fs.ModeDevice|fs.ModeCharDevice|0o620),
		with(stored("disk", 0), fs.ModeDevice|0o660),
		with(stored("fifo", 0), fs.ModeNamedPipe|0o644),
		with(stored("sock", 0), fs.ModeSocket|0o755),
		with(stored("full/", 7), fs.ModeDir|0o755),
		with(stored("nodir", 0), fs.ModeDir|0o755),
		with(stored("empty/", 0), fs.ModeDir|0o755),
		with(stored("-", 12), fs.ModeNamedPipe|0o600)) // Info-ZIP's standard input: data read through a pipe
	want := map[string]string{"link": "symbolic link", "tty": "character device", "disk": "block device", "fifo": "named pipe",
		"sock": "socket", "full/": "directory entry with 7 bytes", "nodir": "trailing /"}
	got := map[string]string{}
	for _, s := range p.Skipped {
		got[s.Name] = s.Why
	}
	for name, why := range want {
		if !strings.Contains(got[name], why) {
			t.Errorf("%q: skipped because %q, want %q", name, got[name], why)
		}
	}
	if p.Objects != 2 || len(got) != len(want) {
		t.Errorf("objects %d, skipped %v; want 2 objects (a, -) and %d skipped", p.Objects, got, len(want))
	}
}

// TestReserved: the keys an extraction never writes.
func TestReserved(t *testing.T) {
	a, _ := layout(stored("k.zip", 1), stored("s3zip-work/x", 1), stored("ok", 1))
	keep := []int{0, 1, 2}
	for _, tc := range []struct {
		name, bucket, prefix string
		want                 []string
	}{
		{"the archive's own key", "b", "", []string{"k.zip", "s3zip-work/x"}},
		{"the archive's key in another bucket", "other", "", []string{"s3zip-work/x"}},
		{"under another prefix", "b", "p/", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range Reserved(a, tc.bucket, tc.prefix, "s3zip-work/", keep) {
				got = append(got, s.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("reserved %q, want %q", got, tc.want)
			}
		})
	}
	r, _ := layout(stored("x", 1))
	r.Key = "p/" + ReportName
	if got := Reserved(r, "b", "p/", "s3zip-work/", []int{0}); len(got) != 1 || got[0].Name != ReportName {
		t.Errorf("an archive at the report's key: reserved %v, want the report", got)
	}
}

// kindOf plans one STORED entry of n bytes (in an archive over 5 MiB) and
// says how it is written.
func kindOf(t *testing.T, opts Options, n int64) Kind {
	t.Helper()
	return jobOf(t, planOf(t, opts, filler, stored("x.bin", n)), "x.bin").Kind
}

// Without smallStored the model of where the run happens chooses: AWS's
// when none is given, read below its threshold and copied from it; a
// slower link (a local server's profile) copies an entry AWS reads; an
// explicit smallStored overrides the model either way.
func TestPlanStoredChoiceByModel(t *testing.T) {
	aws := Options{}.ReadBelow()
	if want := plan.DefaultModel.StoredReadBelow(DefaultReadGroup); aws != want || aws <= 0 {
		t.Fatalf("default ReadBelow %d, want AWS's StoredReadBelow %d (> 0)", aws, want)
	}
	if k := kindOf(t, Options{}, aws-1); k != KindRead {
		t.Errorf("AWS: %d bytes, just under the threshold: %s, want read", aws-1, k)
	}
	if k := kindOf(t, Options{}, aws); k != KindCopy {
		t.Errorf("AWS: %d bytes, at the threshold: %s, want copy", aws, k)
	}
	slow := plan.DefaultModel
	slow.WorkerBandwidth /= 8
	local := Options{Model: &slow}
	if lb := local.ReadBelow(); lb >= aws {
		t.Fatalf("a link 8× slower reads below %d, not below AWS's %d", lb, aws)
	}
	if k := kindOf(t, local, aws-1); k != KindCopy {
		t.Errorf("slow link: %d bytes: %s, want copy", aws-1, k)
	}
	// The plan says what it chose.
	if p := planOf(t, local, stored("x.bin", 10)); p.ReadBelow != local.ReadBelow() {
		t.Errorf("plan's ReadBelow %d, want %d", p.ReadBelow, local.ReadBelow())
	}
	// Overrides.
	if k := kindOf(t, Options{SmallStored: 2 * aws, Model: &slow}, aws); k != KindRead {
		t.Errorf("smallStored %d: %d bytes %s, want read", 2*aws, aws, k)
	}
	if k := kindOf(t, Options{SmallStored: -1}, 10); k != KindCopy {
		t.Errorf("smallStored -1: 10 bytes %s, want copy", k)
	}
	// A group size changes the read's share of a GET, so the threshold.
	if (Options{ReadGroup: 64 << 10}).ReadBelow() >= aws {
		t.Errorf("64 KiB read groups: threshold not below 8 MiB groups' %d", aws)
	}
}

// An archive made elsewhere with a file "sub" and an entry "sub/x" (which
// create refuses and get to a disk refuses) is extracted into S3, where both
// are objects: Check keeps both and PlanJobs writes both keys.
func TestPlanKeepsAFileThatIsAlsoAFolder(t *testing.T) {
	p := planOf(t, Options{}, stored("sub", 100), stored("sub/x", 200), deflated("sub/y/z.txt", 50, 400))
	keys := map[string]bool{}
	for _, j := range p.Jobs {
		for _, it := range j.Items {
			keys[it.Key] = true
		}
	}
	for _, k := range []string{"out/sub", "out/sub/x", "out/sub/y/z.txt"} {
		if !keys[k] {
			t.Errorf("no job writes %s: %+v", k, p.Jobs)
		}
	}
	if p.Objects != 3 || len(p.Skipped) != 0 {
		t.Errorf("objects %d, skipped %v; want 3 and none", p.Objects, p.Skipped)
	}
}

// A job's writes are what S3 counts against the destination's write rate:
// a PutObject an object read; create, a copy a range and complete for a
// copied entry.
func TestJobWrites(t *testing.T) {
	read := Job{Kind: KindRead, Items: make([]Item, 7), Ranges: []Range{{0, 100}}}
	copied := Job{Kind: KindCopy, Items: make([]Item, 1), Ranges: []Range{{0, 5}, {5, 10}, {10, 12}}}
	if got := read.Writes(); got != 7 {
		t.Errorf("read job of 7 objects: %d writes, want 7", got)
	}
	if got := copied.Writes(); got != 5 {
		t.Errorf("copy job of 3 ranges: %d writes, want 5 (create, 3 copies, complete)", got)
	}
}

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

// What an entry's metadata field kept goes into its item, and chooses its
// Content-Type unless the request overrides the extension; entries without
// one get the table's.
func TestItemsCarryKeptMetadata(t *testing.T) {
	field, err := zipformat.AppendMetadataExtra(nil, &zipformat.Metadata{ContentType: "text/plain", CacheControl: "no-cache", User: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	kept := stored("kept.html", 10)
	kept.MetaField = field[4:]
	keptCSS := stored("kept.css", 10)
	keptCSS.MetaField = field[4:]
	var types objmeta.ContentTypes
	if err := types.ParseOverride("css=text/x-custom"); err != nil {
		t.Fatal(err)
	}
	p := planOf(t, Options{SmallStored: 1 << 20, ContentTypes: types}, kept, keptCSS, stored("plain.html", 10))
	for name, want := range map[string]string{"kept.html": "text/plain", "kept.css": "text/x-custom", "plain.html": "text/html; charset=utf-8"} {
		it := itemOf(t, p, name)
		if it.ContentType != want {
			t.Errorf("%s: Content-Type %q, want %q", name, it.ContentType, want)
		}
		if (it.Meta != nil) != strings.HasPrefix(name, "kept") || it.Meta != nil && (it.Meta.CacheControl != "no-cache" || it.Meta.User["k"] != "v") {
			t.Errorf("%s: meta %+v", name, it.Meta)
		}
	}
}

// An entry whose metadata field is malformed is refused before anything is
// written, saying what is wrong with it.
func TestMalformedMetadataRefused(t *testing.T) {
	bad := stored("bad.html", 10)
	bad.MetaField = []byte{1, 4, 9, 0} // a user record longer than the field
	huge, err := zipformat.AppendMetadataExtra(nil, &zipformat.Metadata{User: map[string]string{"k": strings.Repeat("\x01", objmeta.MaxFieldBytes)}})
	if err != nil {
		t.Fatal(err)
	}
	big := stored("big.html", 10)
	big.MetaField = huge[4:] // well formed, but its JSON (escaped) would not fit a job
	a, _ := layout(stored("good.txt", 5), bad, big)
	_, err = Check(a, "out/", Options{})
	var re *EntriesRefusedError
	if !errors.As(err, &re) || len(re.Entries) != 2 {
		t.Fatalf("got %v, want bad.html and big.html refused for their metadata fields", err)
	}
	for i, want := range []struct{ name, why string }{{"bad.html", "says 9 bytes"}, {"big.html", "more than the 8192 s3zip writes"}} {
		if re.Entries[i].Name != want.name || !strings.Contains(re.Entries[i].Why, "metadata extra field 0x3373") || !strings.Contains(re.Entries[i].Why, want.why) {
			t.Errorf("refused %+v, want %s: %s", re.Entries[i], want.name, want.why)
		}
	}
}

// itemOf is the item that writes the named entry.
func itemOf(t *testing.T, p *Plan, name string) Item {
	t.Helper()
	j := jobOf(t, p, name)
	k := slices.IndexFunc(j.Items, func(it Item) bool { return it.Name == name })
	return j.Items[k]
}
