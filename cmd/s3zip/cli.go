package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// usageError is a mistake in how the command was typed: it exits 2, the
// convention for command-line usage errors, where a failed run exits 1.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

func exitCode(err error) int {
	var ue *usageError
	var coded interface{ ExitCode() int } // a deployed run's outcome (sfn.go)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	case errors.As(err, &coded):
		return coded.ExitCode()
	}
	return 1
}

// version is set at link time (-ldflags "-X main.version=v1.2.3"); without
// it the module version and VCS revision Go records in the binary are shown.
var version = ""

func printVersion(w io.Writer) error {
	v, rev, goVersion := version, "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value[:min(len(s.Value), 12)]
			case "vcs.modified":
				if s.Value == "true" {
					rev += "+dirty"
				}
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	line := "s3zip " + v
	if rev != "" {
		line += " commit " + rev
	}
	if goVersion != "" {
		line += " " + goVersion
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

func unknownCommand(name string) error {
	var names []string
	for _, c := range commands {
		if c.usage != "" {
			names = append(names, c.name)
		}
	}
	if s := closest(name, names); s != "" {
		return usageErrorf("unknown command %q; did you mean %q? (s3zip help lists the commands)", name, s)
	}
	return usageErrorf("unknown command %q (s3zip help lists the commands: %s)", name, strings.Join(names, ", "))
}

// closest returns the candidate within two edits of s (or that s starts),
// or "" when none is.
func closest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := editDistance(s, c)
		if len(s) >= 2 && strings.HasPrefix(c, s) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// flags is a command's flag set with its synopsis: -h prints the synopsis
// and the flags on stdout and succeeds; a mistyped flag gets one line that
// says what was wrong (with a suggestion), not the whole usage.
type flags struct {
	*flag.FlagSet
	synopsis, about string
}

func newFlags(name, synopsis, about string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flags{FlagSet: fs, synopsis: synopsis, about: about}
}

// parse parses args that must all be flags.
func (f *flags) parse(args []string, stdout io.Writer) error {
	if err := f.Parse(args); err != nil {
		return f.parseError(err, stdout)
	}
	if f.NArg() > 0 {
		return usageErrorf("%s: unexpected argument %q (usage: %s)", f.Name(), f.Arg(0), f.synopsis)
	}
	return nil
}

// parseArgs parses flags that may come before, between or after the
// positional arguments (`s3zip get s3://b/k DIR --overwrite`), and returns
// the positional ones.
func (f *flags) parseArgs(args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			return nil, f.parseError(err, stdout)
		}
		args = f.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func (f *flags) parseError(err error, stdout io.Writer) error {
	if errors.Is(err, flag.ErrHelp) {
		f.help(stdout)
		return flag.ErrHelp
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		f.VisitAll(func(fl *flag.Flag) { names = append(names, fl.Name) })
		if s := closest(strings.TrimPrefix(name, "-"), names); s != "" {
			msg += "; did you mean --" + s + "?"
		}
	}
	return usageErrorf("%s: %s (s3zip %s -h lists the flags)", f.Name(), msg, f.Name())
}

// help prints the synopsis and every flag, with its default when it has
// one worth showing.
func (f *flags) help(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n\nflags:\n", f.synopsis, f.about)
	type row struct{ left, right string }
	var rows []row
	width := 0
	f.VisitAll(func(fl *flag.Flag) {
		typ, text := flag.UnquoteUsage(fl)
		left := "--" + fl.Name
		if typ != "" {
			left += " " + typ
		}
		switch fl.DefValue {
		case "", "0", "false":
		default:
			text += " (default " + fl.DefValue + ")"
		}
		rows = append(rows, row{left, text})
		width = max(width, len(left))
	})
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r.left, r.right)
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(cmd string, got []string, names ...string) error {
	if len(got) == len(names) {
		return nil
	}
	if len(got) < len(names) {
		return usageErrorf("%s: missing %s (usage: s3zip %s %s)", cmd, names[len(got)], cmd, strings.Join(names, " "))
	}
	return usageErrorf("%s: unexpected argument %q", cmd, got[len(names)])
}

// atLeast checks a count flag: the same rule, and the same message, in
// every command.
func atLeast(cmd, flagName string, v, least int) error {
	if v < least {
		return usageErrorf("%s: --%s %d: want %d or more", cmd, flagName, v, least)
	}
	return nil
}
