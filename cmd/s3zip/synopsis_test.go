package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/cli.md's synopsis of each command (its lines in the Commands block,
// and the indented lines that continue them) lists every flag the
// command's -h lists: a flag the CLI advises (get's --overwrite) is one a
// reader of the reference can find.
func TestSynopsisListsEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(doc), "## Commands\n\n```sh\n")
	block, _, _ = strings.Cut(block, "```")
	synopsis := map[string]string{}
	last := ""
	for _, line := range strings.Split(block, "\n") {
		if m := regexp.MustCompile(`^(?:s3zip|go run \./cmd/s3zip) +([a-z]+)`).FindStringSubmatch(line); m != nil {
			last = m[1]
		} else if !strings.HasPrefix(line, " ") {
			last = ""
		}
		if last != "" {
			synopsis[last] += line + "\n"
		}
	}
	for _, c := range commands {
		if c.usage == "" { // plumbing, not in the reference
			continue
		}
		flags := helpFlags(t, c.name)
		if len(flags) == 0 {
			continue
		}
		if usage := helpUsage(t, c.name); !strings.HasSuffix(usage, "[flags]") {
			var missing []string
			for _, f := range flags {
				if !hasFlag(usage, f.name) {
					missing = append(missing, "--"+f.name)
				}
			}
			if len(missing) > 0 {
				t.Errorf("s3zip %s -h's usage line lacks %s, which it lists below (or end it with [flags]): %s", c.name, strings.Join(missing, ", "), usage)
			}
		}
		s, ok := synopsis[c.name]
		if !ok {
			t.Errorf("docs/cli.md's Commands block has no line for s3zip %s", c.name)
			continue
		}
		var missing []string
		for _, f := range flags {
			if !hasFlag(s, f.name) {
				missing = append(missing, "--"+f.name)
			}
		}
		if len(missing) > 0 {
			t.Errorf("docs/cli.md's synopsis of %s lacks %s, which s3zip %s -h lists", c.name, strings.Join(missing, ", "), c.name)
		}
	}
}

// hasFlag reports whether text names the flag, as --name or -name.
func hasFlag(text, name string) bool {
	return regexp.MustCompile(`(^|[^\w-])--?` + regexp.QuoteMeta(name) + `\b`).MatchString(text)
}

// helpUsage is the usage line `s3zip cmd -h` begins with, without "usage: ".
func helpUsage(t *testing.T, cmd string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{cmd, "-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("%s -h: %v", cmd, err)
	}
	line, _, _ := strings.Cut(out.String(), "\n")
	return strings.TrimPrefix(line, "usage: ")
}
