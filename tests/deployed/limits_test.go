package deployed_test

// What an execution environment may use besides time, held to the template
// as Lambda holds it:
//
//   - /tmp: a tmpfs of the function's EphemeralStorage size (512 MB when the
//     template sets none), mounted for each environment and named by TMPDIR.
//     A warm environment keeps its files; a new one starts empty. Writing
//     past it fails with ENOSPC, as on Lambda.
//   - memory: a memory cgroup limited to the function's MemorySize; going
//     over it has the kernel kill the process (Runtime.ExitError "signal:
//     killed", as Lambda reports it). A tmpfs page counts against the cgroup
//     of the process that wrote it, so here a function's /tmp in use counts
//     toward its memory too, which Lambda's does not: this side errs strict.
//
// Neither is optional: an environment that cannot have them is not started,
// and the test fails saying what is missing.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// limits are what one execution environment holds besides its process.
type limits struct {
	tmp    string // its /tmp: a tmpfs mount point (TMPDIR)
	cgroup string // its memory cgroup
}

// newTmp mounts a fresh /tmp of mb MB for an environment of function name.
func newTmp(name string, mb int) (*limits, error) {
	dir, err := os.MkdirTemp("", "s3zip-lambda-tmp-")
	if err != nil {
		return nil, fmt.Errorf("%s's /tmp: %w", name, err)
	}
	opts := fmt.Sprintf("size=%dm,mode=0700", mb)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("%s's /tmp: mount -t tmpfs -o %s tmpfs %s: %w (each environment's /tmp is a tmpfs of the template's EphemeralStorage size, as Lambda's; mounting one needs root with CAP_SYS_ADMIN: run tests/deployed as root)", name, opts, dir, err)
	}
	return &limits{tmp: dir}, nil
}

// limitMemory moves the environment's process pid into a memory cgroup of
// its own, limited to mb MB. It runs before the first invocation is handed
// out, so only the process's start is charged elsewhere.
func (l *limits) limitMemory(name string, pid, mb int) error {
	parent, limitFile, err := memoryCgroupParent()
	if err != nil {
		return fmt.Errorf("%s's memory (%d MB): %w", name, mb, err)
	}
	dir := filepath.Join(parent, fmt.Sprintf("s3zip-lambda-%d", pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("%s's memory cgroup: %w", name, err)
	}
	l.cgroup = dir
	for _, w := range []struct{ file, value string }{{limitFile, strconv.Itoa(mb << 20)}, {"cgroup.procs", strconv.Itoa(pid)}} {
		if err := os.WriteFile(filepath.Join(dir, w.file), []byte(w.value), 0); err != nil {
			return fmt.Errorf("%s's memory cgroup: write %s to %s: %w", name, w.value, w.file, err)
		}
	}
	return nil
}

// memoryCgroupParent is the memory cgroup of this process, under which each
// environment gets its own (so the limits above this one still hold), and
// the name of its limit file: cgroup v2's memory.max where this cgroup
// hands the memory controller to its children, else v1's
// memory.limit_in_bytes.
func memoryCgroupParent() (dir, limitFile string, err error) {
	raw, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		id, controllers, path, ok := cutCgroupLine(line)
		if !ok {
			continue
		}
		if id == "0" && controllers == "" {
			for _, mnt := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
				d := filepath.Join(mnt, path)
				if ctl, err := os.ReadFile(filepath.Join(d, "cgroup.subtree_control")); err == nil && slices.Contains(strings.Fields(string(ctl)), "memory") {
					return d, "memory.max", nil
				}
			}
			continue
		}
		if slices.Contains(strings.Split(controllers, ","), "memory") {
			d := filepath.Join("/sys/fs/cgroup/memory", path)
			if _, err := os.Stat(filepath.Join(d, "memory.limit_in_bytes")); err == nil {
				return d, "memory.limit_in_bytes", nil
			}
		}
	}
	return "", "", errors.New("no memory cgroup this process can make children in (cgroup v2 with memory in cgroup.subtree_control, or v1's memory controller under /sys/fs/cgroup/memory; see /proc/self/cgroup): each environment's memory is held to the template's MemorySize, as Lambda's is")
}

// cutCgroupLine splits a /proc/<pid>/cgroup line, id:controllers:path.
func cutCgroupLine(line string) (id, controllers, path string, ok bool) {
	id, rest, ok1 := strings.Cut(line, ":")
	controllers, path, ok2 := strings.Cut(rest, ":")
	return id, controllers, path, ok1 && ok2
}

// release unmounts the environment's /tmp and removes its cgroup, once its
// process has exited.
func (l *limits) release() error {
	var errs []error
	if l.cgroup != "" {
		// The kernel may take a moment after the exit to let the cgroup go.
		var err error
		for range 50 {
			if err = os.Remove(l.cgroup); err == nil || !errors.Is(err, syscall.EBUSY) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove memory cgroup: %w", err))
		}
	}
	if err := syscall.Unmount(l.tmp, syscall.MNT_DETACH); err != nil {
		errs = append(errs, fmt.Errorf("umount %s: %w", l.tmp, err))
	} else if err := os.Remove(l.tmp); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
