package objmeta

import (
	"testing"
	"time"
)

func TestMode(t *testing.T) {
	for _, c := range []struct {
		name, v string
		want    uint32
		ok      bool
	}{
		{"s3fs-file-0644", "33188", 0o644, true},
		{"s3fs-file-0755", "33261", 0o755, true},
		{"s3fs-dir-0750", "16872", 0o750, true},
		{"s3fs-setuid", "35309", 0o4755, true},
		{"rclone-octal-file", "100664", 0o664, true},
		{"rclone-octal-dir", "40755", 0o755, true},
		{"rclone-octal-symlink-drops-type", "120777", 0o777, true},
		{"octal-without-type", "644", 0o644, true},
		{"spaces", " 33188 ", 0o644, true},
		{"absent", "", 0, false},
		{"not-a-number", "rw-r--r--", 0, false},
		{"decimal-over-16-bits-not-octal", "99999999", 0, false},
		{"negative", "-1", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			user := map[string]string{}
			if c.v != "" {
				user["mode"] = c.v
			}
			got, ok := Mode(user)
			if got != c.want || ok != c.ok {
				t.Errorf("Mode(%q) = %#o, %v; want %#o, %v", c.v, got, ok, c.want, c.ok)
			}
		})
	}
}

func TestModTime(t *testing.T) {
	for _, c := range []struct {
		name, v string
		want    time.Time
		ok      bool
	}{
		{"s3fs-seconds", "1700000000", time.Unix(1700000000, 0), true},
		{"rclone-nanoseconds", "1614523456.123456789", time.Unix(1614523456, 123456789), true},
		{"rclone-fraction-short", "1614523456.5", time.Unix(1614523456, 500000000), true},
		{"fraction-past-nanoseconds-cut", "1614523456.1234567891", time.Unix(1614523456, 123456789), true},
		{"rfc3339", "2023-05-11T17:54:11.523399602+01:00", time.Date(2023, 5, 11, 16, 54, 11, 523399602, time.UTC), true},
		{"absent", "", time.Time{}, false},
		{"negative", "-5", time.Time{}, false},
		{"garbage", "yesterday", time.Time{}, false},
		{"signed-fraction", "1700000000.-5", time.Time{}, false},
		{"overflow", "99999999999999999999", time.Time{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			user := map[string]string{}
			if c.v != "" {
				user["mtime"] = c.v
			}
			got, ok := ModTime(user)
			if !got.Equal(c.want) || ok != c.ok {
				t.Errorf("ModTime(%q) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
			}
		})
	}
	// What extract writes, both tools read back to the second.
	at := time.Date(2024, 2, 29, 12, 0, 1, 0, time.UTC)
	if got, ok := ModTime(map[string]string{"mtime": FormatMtime(at)}); !ok || !got.Equal(at) {
		t.Errorf("FormatMtime(%v) reads back as %v, %v", at, got, ok)
	}
}

func TestContentTypes(t *testing.T) {
	var o ContentTypes
	for _, s := range []string{"md=text/x-markdown", ".JSON=application/ld+json", "gz=application/gzip", "js.gz=text/javascript"} {
		if err := o.ParseOverride(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ name, kept, want string }{
		{"site/index.html", "", "text/html; charset=utf-8"},
		{"site/STYLE.CSS", "", "text/css; charset=utf-8"},
		{"app.js", "", "text/javascript; charset=utf-8"},
		{"font.woff2", "", "font/woff2"},
		{"logo.svg", "", "image/svg+xml"},
		{"a.wasm", "", "application/wasm"},
		{"Makefile", "", DefaultContentType},
		{"data.unknownext", "", DefaultContentType},
		{"kept.html", "text/plain", "text/plain"},
		{"notes.md", "", "text/x-markdown"},
		{"doc.json", "application/json", "application/ld+json"},
		{"app.js.gz", "", "text/javascript"},
		// S3's and the SDKs' defaults for an object uploaded untyped give way
		// to the extension's; kept when it has none.
		{"site/style.css", "binary/octet-stream", "text/css; charset=utf-8"},
		{"site/app.js", "application/octet-stream", "text/javascript; charset=utf-8"},
		{"blob.unknownext", "binary/octet-stream", "binary/octet-stream"},
		{"photo.jpg", "image/webp", "image/webp"},
		{"logs.tar.gz", "", "application/gzip"},
	} {
		if got := o.For(c.name, c.kept); got != c.want {
			t.Errorf("For(%q, %q) = %q, want %q", c.name, c.kept, got, c.want)
		}
	}
	for _, bad := range []string{"html", "=text/html", "html=", "a/b=text/plain", ".=x"} {
		if err := o.ParseOverride(bad); err == nil {
			t.Errorf("ParseOverride(%q) accepted", bad)
		}
	}
}
