// Command s3zip plans, builds, verifies and extracts ZIP archives of S3
// objects.
//
//	s3zip plan   (--manifest FILE | --synthetic challenge --count N --seed S) [--strategy duo] [--json]
//	s3zip create --source s3://bucket/prefix/ --dest s3://bucket/out.zip [--strategy …] [--workers N] [--endpoint URL]
//	s3zip verify s3://bucket/out.zip [--endpoint URL]
//	s3zip get    s3://bucket/out.zip DIR [--endpoint URL]
//	s3zip cleanup s3://bucket/out.zip [--work-bucket B] [--endpoint URL]
//
// SIGINT and SIGTERM stop a command cleanly (exit 128+signal); a second one
// stops it at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

type command struct {
	name, usage string
	run         func(ctx context.Context, args []string, stdout io.Writer) error
}

var commands []command

func register(c command) { commands = append(commands, c) }

func main() {
	ctx, stop := notifyInterrupt(context.Background())
	err := run(ctx, os.Args[1:], os.Stdout)
	if sig, ok := interrupted(ctx); ok && err != nil {
		// Not the SDK's "context canceled": what the command did about it.
		var ie *interruptedError
		if !errors.As(err, &ie) {
			err = &interruptedError{"interrupted"}
		}
		fmt.Fprintln(os.Stderr, "s3zip:", err)
		os.Exit(sig.exitCode())
	}
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "s3zip:", err)
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
