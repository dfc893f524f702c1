package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// learningOrder is the order a user meets the commands in, which `s3zip
// help` keeps: a new command is placed here on purpose.
var learningOrder = []string{"create", "status", "plan", "verify", "get", "presign", "extract", "resume", "cleanup", "sample", "version"}

// listed returns the command names of `s3zip help`'s list, in its order.
func listed(t *testing.T, help string) []string {
	t.Helper()
	_, list, ok := strings.Cut(help, "commands:\n")
	if !ok {
		t.Fatalf("no commands list in:\n%s", help)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  (\S+) +\S`).FindAllStringSubmatch(list, -1) {
		names = append(names, m[1])
	}
	return names
}

func TestHelpListsCommandsInLearningOrder(t *testing.T) {
	help := s3zip(t, nil, "help")
	expect{stdoutOnly: true}.check(t, help)
	if got := listed(t, help.stdout); !slices.Equal(got, learningOrder) {
		t.Errorf("s3zip help lists %v, want %v", got, learningOrder)
	}
	bare := s3zip(t, nil) // no command: the same list, on stderr, refused
	expect{code: 2, stderr: []string{"no command given"}}.check(t, bare)
	if got := listed(t, bare.stderr); !slices.Equal(got, learningOrder) {
		t.Errorf("s3zip with no command lists %v, want %v", got, learningOrder)
	}

	var table []string
	for _, c := range commands {
		if c.usage != "" {
			table = append(table, c.name)
		}
	}
	if !slices.Equal(table, learningOrder) {
		t.Errorf("the command table's listed commands are %v, want %v", table, learningOrder)
	}
}

// Every command in the table reaches its own handler: `s3zip X --help`
// prints X's own synopsis, on stdout, and succeeds; plumbing (batch) too.
func TestEveryCommandHasItsOwnHelp(t *testing.T) {
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			r := s3zip(t, nil, c.name, "--help")
			expect{stdoutOnly: true}.check(t, r)
			synopsis, _, _ := strings.Cut(r.stdout, "\n")
			if synopsis != "usage: s3zip "+c.name && !strings.HasPrefix(synopsis, "usage: s3zip "+c.name+" ") {
				t.Errorf("s3zip %s --help begins %q, want the synopsis of %s", c.name, synopsis, c.name)
			}
		})
	}
}

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
