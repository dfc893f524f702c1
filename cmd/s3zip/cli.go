package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/s3zip/s3zip/create"
	"github.com/s3zip/s3zip/extract"
	"github.com/s3zip/s3zip/internal/failure"
)

// The exit codes are the same for every command, and docs/cli.md lists them
// under "Exit status". What the user does next differs for each.
const (
	exitFailed      = 1 // the run started and failed, and what it wrote is undone
	exitRefused     = 2 // the command line or the request was refused before anything was written
	exitUnreachable = 3 // S3 or Step Functions could not be reached or would not take the credentials, and nothing was done
)

// usageError is a mistake in how the command was typed. It is a refusal,
// made before anything is asked of S3.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// unreachableError says the service was not reached, or not with these
// credentials, for want of an endpoint or credentials, for rejected
// credentials or for throttling. The request itself was never judged, so
// running it again once that is fixed is the whole remedy.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

func unreachablef(format string, a ...any) error {
	return &unreachableError{fmt.Errorf(format, a...)}
}

// refusal reports whether err is a refusal of the request by the workflow
// before it wrote anything. Those are the deployed workflow's refusedErrors
// and extract's.
func refusal(err error) bool {
	var (
		xre *failure.RequestError
		xrf *extract.EntriesRefusedError
		xee *failure.DestinationExistsError
	)
	return refusedErrors[create.ErrorType(err)] || errors.As(err, &xre) || errors.As(err, &xrf) || errors.As(err, &xee)
}

func exitCode(err error) int {
	var ue *usageError
	var unreachable *unreachableError
	var coded interface{ ExitCode() int } // a deployed run's outcome, from sfn.go
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &coded):
		return coded.ExitCode()
	case errors.As(err, &ue), refusal(err):
		return exitRefused
	case errors.As(err, &unreachable):
		return exitUnreachable
	}
	return exitFailed
}

// version and commit are set at link time. make release passes -ldflags
// "-X main.version=v1.2.3 -X main.commit=0123456789ab"; without them the
// module version and VCS revision Go records in the binary are shown.
var version, commit = "", ""

func printVersion(w io.Writer) error {
	v, rev, goVersion := version, commit, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if commit != "" {
				break
			}
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

// closest returns the candidate within two edits of s, or that s starts,
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

// flags is a command's flag set with its synopsis. -h prints the synopsis
// and the flags on stdout and succeeds. A mistyped flag gets one line that
// says what was wrong and suggests a fix, not the whole usage.
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

// given reports whether the flag was on the command line. It is for flags
// whose default means "not given", leaving the choice to the model or the
// deployment, where a typed value must be honoured or refused, never read as
// the default.
func (f *flags) given(name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// parse parses args that must all be flags.
func (f *flags) parse(args []string, stdout io.Writer) error {
	if err := f.Parse(args); err != nil {
		return f.parseError(err, stdout)
	}
	if f.NArg() > 0 {
		return usageErrorf("%s: unexpected argument %q (usage: %s)", f.Name(), f.Arg(0), f.synopsis)
	}
	return f.noneEmpty()
}

// noneEmpty refuses a flag typed with an empty value. A default would stand
// in for it silently, and the user meant something else. --state-machine ""
// would run here, and --endpoint "" would go to AWS.
func (f *flags) noneEmpty() error {
	var empty string
	f.Visit(func(fl *flag.Flag) {
		if empty == "" && fl.Value.String() == "" {
			empty = fl.Name
		}
	})
	if empty != "" {
		return usageErrorf("%s: --%s is given but empty: give it a value, or leave it out for its default (s3zip %s -h)", f.Name(), empty, f.Name())
	}
	return nil
}

// parseArgs parses flags that may come before, between or after the
// positional arguments, as in `s3zip get s3://b/k DIR --overwrite`, and
// returns the positional ones.
func (f *flags) parseArgs(args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			return nil, f.parseError(err, stdout)
		}
		args = f.Args()
		if len(args) == 0 {
			return pos, f.noneEmpty()
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), f.noneEmpty()
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
	fmt.Fprintf(w, "usage: %s\n\n%s\n", f.synopsis, f.about)
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
	if len(rows) > 0 { // version has none
		fmt.Fprint(w, "\nflags:\n")
	}
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

// atLeast checks a count flag with the same rule, and the same message, in
// every command.
func atLeast(cmd, flagName string, v, least int) error {
	if v < least {
		return usageErrorf("%s: --%s %d: want %d or more", cmd, flagName, v, least)
	}
	return nil
}

// printJSON writes v to w as indented JSON, for every command's --json.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// shellCommand returns args as one command line that a POSIX shell splits
// back into args, for the CLI to print for the user to run.
func shellCommand(args ...string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// shellQuote returns s as one shell word. It is s as it is when it holds
// only characters no shell treats specially, else s in single quotes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
