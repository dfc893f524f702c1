package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// learningOrder is the order a user meets the commands in, which `s3zip
// help` keeps (issue 22): a new command is placed here on purpose.
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
