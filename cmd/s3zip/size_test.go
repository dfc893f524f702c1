package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	fp "github.com/s3zip/s3zip/internal/testenv/faultproxy"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "16MiB": 16 << 20, "16mib": 16 << 20, "16 MiB": 16 << 20, "1.5GiB": 3 << 29, "500MB": 500e6,
		"2GB": 2e9, "64k": 64 << 10, "64K": 64 << 10, "5M": 5 << 20, "1T": 1 << 40, "1TiB": 1 << 40, "3kb": 3000, "7B": 7, "-1": -1,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "16Mx", "1.5", "0.3KB7", "1e3", "16 mebibytes", "1.0000001KiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// Every size flag takes units: the plan with --split-size 1MiB is the plan
// with --split-size 1048576.
func TestSizeFlagsTakeUnits(t *testing.T) {
	plan := func(size string) string {
		var out bytes.Buffer
		if err := runPlan(context.Background(), []string{"--synthetic", "small", "--count", "2000", "--split-size", size, "--part-size", "8MiB"}, &out); err != nil {
			t.Fatalf("plan --split-size %s: %v", size, err)
		}
		var kept []string
		for _, line := range strings.Split(out.String(), "\n") {
			if !strings.HasPrefix(line, "planned in") { // the timing differs
				kept = append(kept, line)
			}
		}
		return strings.Join(kept, "\n")
	}
	units, bytes := plan("1MiB"), plan("1048576")
	if units != bytes {
		t.Errorf("--split-size 1MiB planned\n%s\n--split-size 1048576 planned\n%s", units, bytes)
	}
	if !strings.Contains(units, "archives        13, each a whole ZIP") {
		t.Errorf("--split-size 1MiB over 2,000 small objects made one archive:\n%s", units)
	}
}

// helpFlag is one flag as `s3zip COMMAND -h` lists it.
type helpFlag struct{ name, placeholder, usage string }

// helpFlags is every flag `s3zip cmd -h` lists.
func helpFlags(t *testing.T, cmd string) []helpFlag {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{cmd, "-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("%s -h: %v", cmd, err)
	}
	_, list, _ := strings.Cut(out.String(), "\nflags:\n")
	var fl []helpFlag
	for _, line := range strings.Split(list, "\n") {
		m := regexp.MustCompile(`^  --(\S+)(?: (\S+))?  +(.*)$`).FindStringSubmatch(line)
		if m != nil {
			fl = append(fl, helpFlag{m[1], m[2], m[3]})
		}
	}
	return fl
}

// Every size flag of every command reads a size the same way: a number
// alone is bytes, or a number and a unit. A flag named for a size is one
// (its value named `size` in -h), and each takes 64MiB and 67108864 alike.
func TestEverySizeFlagTakesUnits(t *testing.T) {
	found := 0
	for _, c := range commands {
		for _, f := range helpFlags(t, c.name) {
			if f.placeholder != "size" && !strings.HasSuffix(f.name, "-size") && !strings.Contains(f.usage, "MiB per") {
				continue
			}
			found++
			if f.placeholder != "size" {
				t.Errorf("%s --%s %s: a size flag, but its value is not a size (bytes, or with a unit): %s", c.name, f.name, f.placeholder, f.usage)
			}
			for _, v := range []string{"64MiB", "67108864", "0.5GiB", "64M"} {
				// Flags are parsed before -h is seen: help means the value was taken.
				if err := run(context.Background(), []string{c.name, "--" + f.name, v, "-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
					t.Errorf("%s --%s %s: %v", c.name, f.name, v, err)
				}
			}
		}
	}
	if found < 4 { // create and plan --part-size, --split-size; extract --small-stored; get --part-size
		t.Errorf("found %d size flags; the test no longer finds them", found)
	}
}

// get --part-size is a size like every other: 1MiB reads a 3 MiB entry in
// ranged GETs of 1 MiB, 64MiB in one; a number alone is bytes, and one too
// small to be meant as bytes is refused saying how to write mebibytes.
func TestGetPartSizeTakesUnits(t *testing.T) {
	srv := cliServer(t)
	body := strings.Repeat("0123456789abcdef", 3<<16) // 3 MiB
	srv.PutObject(t, "cli", "three.zip", storedZip(t, map[string]string{"three.bin": body}))
	p, err := fp.Start(fp.Config{Target: srv.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	gets := func(size string) int {
		before := p.Counts()[fp.GetObject].Requests
		dir := t.TempDir()
		var out bytes.Buffer
		if err := run(t.Context(), []string{"get", "s3://cli/three.zip", dir, "--part-size", size, "--endpoint", p.URL()}, &out); err != nil {
			t.Fatalf("get --part-size %s: %v", size, err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, "three.bin")); err != nil || string(got) != body {
			t.Fatalf("get --part-size %s: three.bin %d bytes, %v", size, len(got), err)
		}
		return p.Counts()[fp.GetObject].Requests - before
	}
	small, large, bytes := gets("1MiB"), gets("64MiB"), gets("1048576")
	if small < 3 || large >= small || bytes != small {
		t.Errorf("GETs with --part-size 1MiB %d, 64MiB %d, 1048576 %d: want 1MiB to read the 3 MiB entry in 3 or more, 64MiB in fewer, 1048576 as 1MiB", small, large, bytes)
	}
	err = run(t.Context(), []string{"get", "s3://cli/three.zip", t.TempDir(), "--part-size", "32", "--endpoint", p.URL()}, io.Discard)
	if want := "get: --part-size 32: want 1MiB to 5GiB (1048576 to 5368709120 bytes); a number alone is bytes: for 32 mebibytes write 32MiB"; err == nil || err.Error() != want || exitCode(err) != exitRefused {
		t.Errorf("get --part-size 32: %v (exit %d)\nwant %s (exit %d)", err, exitCode(err), want, exitRefused)
	}
	err = run(t.Context(), []string{"create", "--source", "s3://cli/small/", "--dest", "s3://cli/out.zip", "--part-size", "16", "--endpoint", p.URL()}, io.Discard)
	if want := "create: --part-size 16: want 5MiB to 5GiB (5242880 to 5368709120 bytes); a number alone is bytes: for 16 mebibytes write 16MiB"; err == nil || err.Error() != want || exitCode(err) != exitRefused {
		t.Errorf("create --part-size 16: %v (exit %d)\nwant %s (exit %d)", err, exitCode(err), want, exitRefused)
	}
}
