package objmeta

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// DefaultContentType is what an object whose name's extension is not in
// the table is written with: S3's own default for an upload that names
// none, said explicitly so that the report counts it.
const DefaultContentType = "application/octet-stream"

// contentTypes is the table extract sets Content-Type from: fixed in the
// code, not the host's mime.types, so that a Lambda and a laptop write the
// same headers. Text types name their charset, as browsers need to render
// a static site's pages and scripts as UTF-8.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
	".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8",
	".json": "application/json", ".map": "application/json", ".webmanifest": "application/manifest+json",
	".xml": "application/xml", ".txt": "text/plain; charset=utf-8", ".md": "text/markdown; charset=utf-8",
	".csv": "text/csv; charset=utf-8", ".svg": "image/svg+xml",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".avif": "image/avif", ".ico": "image/vnd.microsoft.icon", ".bmp": "image/bmp", ".tif": "image/tiff", ".tiff": "image/tiff",
	".woff": "font/woff", ".woff2": "font/woff2", ".ttf": "font/ttf", ".otf": "font/otf",
	".wasm": "application/wasm", ".pdf": "application/pdf", ".zip": "application/zip", ".gz": "application/gzip",
	".tar": "application/x-tar", ".mp4": "video/mp4", ".webm": "video/webm", ".mp3": "audio/mpeg", ".ogg": "audio/ogg",
	".wav": "audio/wav",
}

// ContentTypes chooses the Content-Type of the objects extract writes: the
// request's overrides by extension first, then what the archive kept of
// the object (Override, Kept), then the fixed table, then
// DefaultContentType.
type ContentTypes struct {
	// Override maps a lower-case extension with its dot (".html", or
	// ".js.gz": the longest that matches wins) to the type every entry
	// whose name ends in it gets, whatever the archive kept.
	Override map[string]string
}

// ParseOverride reads one --content-type flag, EXT=TYPE (the dot
// optional), into o.
func (o *ContentTypes) ParseOverride(s string) error {
	ext, typ, ok := strings.Cut(s, "=")
	ext = strings.ToLower(strings.TrimSpace(ext))
	typ = strings.TrimSpace(typ)
	if !ok || strings.Trim(ext, ".") == "" || typ == "" || strings.ContainsAny(ext, "/= ") || strings.ContainsAny(typ, "\r\n") {
		return fmt.Errorf("content type %q: want EXT=TYPE, e.g. html=\"text/html; charset=utf-8\"", s)
	}
	if !strings.HasPrefix(ext, ".") {
		ext = "." + ext
	}
	if o.Override == nil {
		o.Override = map[string]string{}
	}
	o.Override[ext] = typ
	return nil
}

// Set is ParseOverride, and String the overrides as EXT=TYPE: a
// repeatable command-line flag (flag.Value).
func (o *ContentTypes) Set(s string) error { return o.ParseOverride(s) }

func (o *ContentTypes) String() string {
	if o == nil {
		return ""
	}
	var parts []string
	for _, ext := range slices.Sorted(maps.Keys(o.Override)) {
		parts = append(parts, ext[1:]+"="+o.Override[ext])
	}
	return strings.Join(parts, ",")
}

// For is the Content-Type of the entry name, given what the archive kept
// ("" when nothing). A kept type that is only a default S3 or an SDK gave an
// object uploaded without one (binary/octet-stream,
// application/octet-stream) gives way to the extension's, when it has one.
func (o ContentTypes) For(name, kept string) string {
	if t, ok := o.override(strings.ToLower(name)); ok {
		return t
	}
	if kept != "" && !untyped(kept) {
		return kept
	}
	if t, ok := contentTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	if kept != "" {
		return kept
	}
	if t, ok := contentTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return DefaultContentType
}

// untyped says a Content-Type is what an object uploaded without one gets:
// S3's default (binary/octet-stream) or the SDKs' (application/octet-stream).
func untyped(t string) bool {
	base, _, _ := strings.Cut(t, ";")
	base = strings.ToLower(strings.TrimSpace(base))
	return base == "binary/octet-stream" || base == DefaultContentType
}

// override is the override of the longest extension name ends in, so that
// "js.gz" can be given apart from "gz".
func (o ContentTypes) override(name string) (string, bool) {
	best, typ := "", ""
	for ext, t := range o.Override {
		if len(ext) > len(best) && strings.HasSuffix(name, ext) {
			best, typ = ext, t
		}
	}
	return typ, best != ""
}

// MostFirst is the types counted, the most objects first (then by name):
// how the summaries list them.
func MostFirst(counts map[string]int) []string {
	return slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
}
