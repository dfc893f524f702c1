package manifest

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Line
	}{
		{"csv-no-header", "a.txt,10\nb/c.txt,0,1a2b3c4d\n", []Line{{Key: "a.txt", Size: 10}, {Key: "b/c.txt", Size: 0}}},
		{"csv-header-any-order", "size,key,name\n5,k1,n1\n", []Line{{Key: "k1", Size: 5, Name: "n1"}}},
		{"csv-key-only", "key\nx\ny\n", []Line{{Key: "x", Size: -1}, {Key: "y", Size: -1}}},
		{"csv-quoted-comma", "key,size\n\"a,b\",3\n", []Line{{Key: "a,b", Size: 3}}},
		{"jsonl", `{"key":"a","size":3,"crc32":"AAAAAQ==","bucket":"b2"}` + "\n\n" + `{"key":"b","name":"x/y"}`, []Line{{Key: "a", Size: 3, Bucket: "b2"}, {Key: "b", Size: -1, Name: "x/y"}}},
		{"empty", "", nil},
		// Keys and names are used exactly as written: S3 keys may begin or
		// end with spaces, and "man/a.txt " is not "man/a.txt".
		{"csv-quoted-key-trailing-space", "key,name,bucket\n\"man/a.txt \",trailing.txt,src\n", []Line{{Key: "man/a.txt ", Size: -1, Name: "trailing.txt", Bucket: "src"}}},
		{"csv-unquoted-key-spaces", " lead.txt,3\ntrail.txt ,4\n", []Line{{Key: " lead.txt", Size: 3}, {Key: "trail.txt ", Size: 4}}},
		{"csv-name-spaces-kept", "key,name\nk,\" n \"\n", []Line{{Key: "k", Size: -1, Name: " n "}}},
		{"csv-numbers-and-bucket-trimmed", "key, size , bucket\nk, 7 , b1 \n", []Line{{Key: "k", Size: 7, Bucket: "b1"}}},
		{"jsonl-key-trailing-space", `{"key":"man/a.txt ","name":"x"}`, []Line{{Key: "man/a.txt ", Size: -1, Name: "x"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d lines, want %d", len(got), len(c.want))
			}
			for i := range got {
				g, w := got[i], c.want[i]
				if g.Key != w.Key || g.Size != w.Size || g.Name != w.Name || g.Bucket != w.Bucket {
					t.Errorf("line %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestParseCRC(t *testing.T) {
	for in, want := range map[string]uint32{"1a2b3c4d": 0x1a2b3c4d, "1A2B3C4D": 0x1a2b3c4d, "AAAAAQ==": 1, "/////w==": 0xffffffff} {
		if got, err := ParseCRC(in); err != nil || got != want {
			t.Errorf("ParseCRC(%q) = %08x, %v; want %08x", in, got, err, want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name, in string
		line     int
		msg      string
	}{
		{"negative-size", "a,10\nb,-3\n", 2, "negative size"},
		{"non-numeric-size", "a,ten\n", 1, "not a whole number"},
		{"bad-hex-crc", "a,1,xyz\n", 1, "crc32"},
		{"bad-base64-crc", "a,1,AAAA==\n", 1, "base64"},
		{"empty-key", "key,size\n,4\n", 2, "empty key"},
		{"unknown-column", "key,colour\n", 1, "unknown column"},
		{"header-without-key", "size,name,key2\nx,y,z\n", 0, ""},
		{"jsonl-unknown-field", `{"key":"a","sise":3}`, 1, "not a JSON object"},
		{"jsonl-no-key", `{"size":3}`, 1, "no key"},
		{"jsonl-bad-size", `{"key":"a","size":"big"}`, 1, "not a whole number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.in))
			if c.line == 0 { // "size,name,key2" is not a header: "x" has a non-numeric size
				if err == nil {
					t.Fatal("Parse succeeded")
				}
				return
			}
			var me *Error
			if !errors.As(err, &me) || me.Line != c.line || !strings.Contains(me.Msg, c.msg) {
				t.Fatalf("err = %v, want line %d with %q", err, c.line, c.msg)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("a,1\n")
	f.Add(`{"key":"a","size":1}`)
	f.Add("key,size,crc32\nx,5,00000000\n")
	f.Fuzz(func(t *testing.T, in string) {
		lines, err := Parse(strings.NewReader(in))
		if err != nil {
			var me *Error
			if !errors.As(err, &me) && !strings.Contains(err.Error(), "read manifest") {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		for _, l := range lines {
			if l.Key == "" || l.Size < -1 {
				t.Fatalf("bad line accepted: %+v", l)
			}
		}
	})
}
