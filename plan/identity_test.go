package plan

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// identityInputs are seeded synthetic inputs whose plans must not change
// when the planner's memory layout does: big objects (every strategy cuts
// copies), more than 65,535 small ones (ZIP64 end records, thousands of
// entries a part), and DEFLATE entries beside folders, empty and known-CRC
// entries and one over 4 GiB (ZIP64 sizes).
func identityInputs() map[string][]Entry {
	challenge := Challenge(3000, 7)
	for i := range challenge {
		e := &challenge[i]
		e.Source.ETag = fmt.Sprintf(`"%032x"`, i)
		if i%5 == 0 {
			e.CRC32 = KnownCRC(uint32(i) * 2654435761)
		}
		if i%7 == 0 {
			e.Source.VersionID = fmt.Sprintf("v%d", i)
		}
	}
	small := small(70_000, 3)
	for i := 0; i < len(small); i += 3 {
		small[i].CRC32 = KnownCRC(uint32(i) ^ 0x5a5a5a5a)
	}
	var mixed []Entry
	at := time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC)
	for i, e := range Challenge(400, 11) {
		e.Name = fmt.Sprintf("d%02d/%s", i%13, e.Name)
		e.ModTime = at.Add(time.Duration(i) * time.Minute)
		e.CRC32 = KnownCRC(uint32(i) * 40503)
		switch i % 4 {
		case 0, 1: // compressed by the read pass: its own object, the compressed copy
			origin := e.Source
			e.Source = Source{Bucket: "work", Key: "read/" + e.Name + ".z"}
			e.Method, e.RawSize, e.RawCRC32, e.Origin = MethodDeflate, e.Size*4+int64(i), KnownCRC(uint32(i)*69069), &origin
			e.SHA256 = hex.EncodeToString(make([]byte, 31)) + fmt.Sprintf("%02x", i%256)
		case 2:
			if i%8 == 2 {
				e.Size = 0
			}
		}
		mixed = append(mixed, e)
	}
	huge := Entry{Name: "huge.bin", Source: Source{Bucket: "src", Key: "huge.bin"}, Size: 4*GiB + 123, ModTime: at}
	mixed = append(mixed, huge, Entry{Name: "empty-dir/", Dir: true, ModTime: at})
	return map[string][]Entry{"challenge-3000": challenge, "small-70000": small, "mixed-402": mixed}
}

// planDigest is the SHA-256 of everything a plan gives its callers: the
// header, entries and part-job files, the alternative, the CRCs it needs
// and the copied tails; not the Fit the header also carries, which
// fit_test.go checks.
func planDigest(t testing.TB, p *Plan) string {
	t.Helper()
	unfitted := *p
	unfitted.Fit = Fit{}
	enc, err := unfitted.Encode()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	h.Write(enc.Header)
	h.Write(enc.Entries)
	h.Write(enc.Parts)
	alt, _ := json.Marshal(p.Alternative)
	tails := p.CopiedTails()
	var tailList []EntryIndex
	for i := range p.Entries {
		if tails[EntryIndex(i)] {
			tailList = append(tailList, EntryIndex(i))
		}
	}
	fmt.Fprintf(h, "%s %v %v %d", alt, p.CRCsNeeded(), tailList, enc.Jobs)
	return hex.EncodeToString(h.Sum(nil))
}

// A plan is byte for byte what the planner made before its entries were
// stored compactly: the digests in testdata/plan-digests.txt were computed
// on the code before that change (go test ./plan -run PlansUnchanged -update
// rewrites them, which only an intended change of the layout may do).
func TestPlansUnchangedByCompactStorage(t *testing.T) {
	path := filepath.Join("testdata", "plan-digests.txt")
	want := map[string]string{}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), " "); ok {
				want[k] = v
			}
		}
		f.Close()
	}
	var got []string
	inputs := identityInputs()
	for _, name := range []string{"challenge-3000", "small-70000", "mixed-402"} {
		for _, s := range strategies {
			for _, o := range []Options{
				{Strategy: s, Workers: 100, PartsPerBatch: 8},
				{Strategy: s, Workers: 7, PartSize: 5 * MiB, Prefer: PreferCost, DirectoryPartSize: 5 * MiB},
			} {
				key := fmt.Sprintf("%s/%s/w%d/%s", name, s, o.Workers, o.Prefer)
				p, err := Make(inputs[name], o)
				var d string
				if err != nil {
					d = "error:" + strings.ReplaceAll(err.Error(), " ", "_")
				} else {
					d = planDigest(t, p)
				}
				got = append(got, key+" "+d)
				if !*update && want[key] != d {
					t.Errorf("%s: plan digest %s, want %s (the plan changed)", key, d, want[key])
				}
			}
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
