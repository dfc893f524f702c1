// Command s3zip plans, builds, verifies and extracts ZIP archives of S3
// objects.
//
//	s3zip plan   (--manifest FILE | --synthetic challenge --count N --seed S) [--strategy duo] [--json]
//	s3zip create --source s3://bucket/prefix/ --dest s3://bucket/out.zip [--strategy …] [--workers N] [--endpoint URL]
//	s3zip verify s3://bucket/out.zip [--endpoint URL]
//	s3zip get    s3://bucket/out.zip DIR [--endpoint URL]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

type command struct {
	name, usage string
	run         func(ctx context.Context, args []string, stdout io.Writer) error
}

var commands []command

func register(c command) { commands = append(commands, c) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "s3zip:", err)
		}
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			os.Exit(coded.ExitCode())
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(os.Stderr)
		return flag.ErrHelp
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout)
		}
	}
	usage(os.Stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: s3zip <command> [flags]\n\ncommands:")
	for _, c := range commands {
		if c.usage == "" { // plumbing (batch)
			continue
		}
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.usage)
	}
}
