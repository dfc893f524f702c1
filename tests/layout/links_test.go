package layout_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The README and the reference pages in docs/ link to each other, to the
// tree and to sections: a relative link must name a file or folder that is
// there, and a #fragment a heading of the page it points into.

// linkedPages are the Markdown files whose links are held true.
func linkedPages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		pages = append(pages, filepath.ToSlash(rel))
	}
	if len(pages) < 5 {
		t.Fatalf("found %v: not the repository's root", pages)
	}
	return pages
}

// markdownLink is an inline link or image, [text](target) or
// [text](target "title"); inline code is removed before it is looked for.
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

func TestMarkdownLinksResolve(t *testing.T) {
	checked := 0
	for _, page := range linkedPages(t) {
		for _, l := range pageLinks(t, page) {
			checked++
			if problem := brokenLink(page, l.target); problem != "" {
				t.Errorf("%s:%d links to %s: %s", page, l.line, l.target, problem)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d links: the pattern no longer matches how the pages link", checked)
	}
}

type link struct {
	line   int
	target string
}

// pageLinks returns the links of a Markdown page outside fenced code and
// inline code.
func pageLinks(t *testing.T, page string) []link {
	t.Helper()
	var links []link
	for n, text := range proseLines(t, page) {
		if text == "" {
			continue
		}
		for _, m := range markdownLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(text, "``"), -1) {
			links = append(links, link{n + 1, m[1]})
		}
	}
	return links
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// proseLines returns a page's lines with those of fenced code blocks
// (and the fences) blanked, so the line numbers stay the file's.
func proseLines(t *testing.T, page string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	inFence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			lines[i] = ""
		} else if inFence {
			lines[i] = ""
		}
	}
	return lines
}

// brokenLink says what is wrong with a link from page, or "".
func brokenLink(page, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return "" // not the tree's
	}
	path, fragment, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), path)))
		if strings.HasPrefix(file, "../") {
			return "it leaves the repository"
		}
		if _, err := os.Stat(filepath.Join(root, file)); err != nil {
			return fmt.Sprintf("%s is not in the tree", file)
		}
	}
	if fragment == "" {
		return ""
	}
	if !strings.HasSuffix(file, ".md") {
		return fmt.Sprintf("#%s points into %s, which is not a Markdown page", fragment, file)
	}
	anchors, err := pageAnchors(file)
	if err != nil {
		return err.Error()
	}
	if !anchors[fragment] {
		return fmt.Sprintf("%s has no heading whose anchor is #%s", file, fragment)
	}
	return ""
}

// pageAnchors returns the anchors GitHub gives a page's headings (a
// repeated heading's second anchor gets -1), and any <a name> or id.
func pageAnchors(page string) (map[string]bool, error) {
	raw, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			anchors[m[1]] = true
		}
		heading, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " ")
		if !ok || !strings.HasPrefix(l, "#") {
			continue
		}
		a := headingAnchor(heading)
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors, nil
}

var (
	htmlAnchor  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	headingLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// headingAnchor is GitHub's anchor for a heading: its text (a link's text,
// code without backticks) lower-cased, punctuation dropped, spaces as hyphens.
func headingAnchor(heading string) string {
	text := headingLink.ReplaceAllString(strings.TrimSpace(heading), "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// The anchor rule, on headings this repository has.
func TestHeadingAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"status --json":                                 "status---json",
		"Downloads (`make bench-get`)":                  "downloads-make-bench-get",
		"Error types (Lambda errorType = Go type name)": "error-types-lambda-errortype--go-type-name",
		"Extract (`s3zip extract`): a ZIP in S3 unpacked into objects under a prefix": "extract-s3zip-extract-a-zip-in-s3-unpacked-into-objects-under-a-prefix",
		"versitygw v1.8.0 — what it does where s3zip depends on it":                   "versitygw-v180--what-it-does-where-s3zip-depends-on-it",
		"Read rounds: per-object work (`reads.stage`)":                                "read-rounds-per-object-work-readsstage",
	} {
		if got := headingAnchor(heading); got != want {
			t.Errorf("headingAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// A link check that passes everything is no check: these must fail.
func TestBrokenLinksAreFound(t *testing.T) {
	for _, target := range []string{"docs/nothere.md", "docs/cli.md#no-such-section", "#no-such-section", "LICENSE#x", "../outside.md"} {
		if brokenLink("README.md", target) == "" {
			t.Errorf("brokenLink(README.md, %q) found nothing wrong", target)
		}
	}
	for _, target := range []string{"docs/cli.md#exit-status", "#install", "LICENSE", "examples/start", "https://example.com/x#y"} {
		if problem := brokenLink("README.md", target); problem != "" {
			t.Errorf("brokenLink(README.md, %q): %s", target, problem)
		}
	}
}
