// Command s3zip plans, builds, verifies and extracts ZIP archives of S3
// objects. `s3zip help` lists the commands; `s3zip COMMAND -h` shows one.
//
// SIGINT and SIGTERM stop a command cleanly with exit code 128+signal, and a
// second one stops it at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	ctx, stop := notifyInterrupt(context.Background())
	err := run(ctx, os.Args[1:], os.Stdout)
	if sig, ok := interrupted(ctx); ok && err != nil {
		// Say what the command did about it, not the SDK's "context canceled".
		var ie *interruptedError
		if !errors.As(err, &ie) {
			err = &interruptedError{"interrupted"}
		}
		fmt.Fprintln(os.Stderr, "s3zip:", err)
		os.Exit(sig.exitCode())
	}
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "s3zip:", err)
	}
	os.Exit(exitCode(err))
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		usage(os.Stderr)
		return usageErrorf("no command given")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			return run(ctx, []string{args[1], "-h"}, stdout)
		}
		usage(stdout)
		return flag.ErrHelp
	case "-version", "--version":
		return printVersion(stdout)
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout)
		}
	}
	return unknownCommand(args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: s3zip <command> [flags]\n\ncommands:")
	for _, c := range commands {
		if c.usage == "" { // plumbing such as batch
			continue
		}
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.usage)
	}
	fmt.Fprintln(w, "\n`s3zip COMMAND -h` shows a command's flags.")
}
