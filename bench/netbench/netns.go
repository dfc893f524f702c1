package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Every name the benchmark gives the kernel starts with these prefixes, so a
// clean-up finds exactly what a run (or a killed earlier run) made.
const (
	nsPrefix   = "s3zip-bench-" // network namespaces
	linkPrefix = "s3zb"         // host-side veth ends (names are at most 15 bytes)
)

// lambdaNet is one emulated Lambda network: a namespace joined to the host by
// a veth pair, shaped to rate on both ends. Traffic host→namespace (the
// worker's downloads) leaves through the host end's qdisc; namespace→host
// (its uploads) through the namespace end's.
type lambdaNet struct {
	NS       string // namespace name
	HostLink string // veth end on the host
	NSLink   string // veth end inside the namespace
	HostIP   string // address of HostLink, 10.77.k.1/30
	NSIP     string // address of NSLink, 10.77.k.2/30
}

func lambdaNetFor(k int) lambdaNet {
	return lambdaNet{
		NS:       fmt.Sprintf("%s%d", nsPrefix, k),
		HostLink: fmt.Sprintf("%s%dh", linkPrefix, k),
		NSLink:   fmt.Sprintf("%s%dn", linkPrefix, k),
		HostIP:   fmt.Sprintf("10.77.%d.1", k+1),
		NSIP:     fmt.Sprintf("10.77.%d.2", k+1),
	}
}

// shaping is the tc token bucket on each veth end.
type shaping struct {
	Rate    string // e.g. 600mbit
	Burst   string // bucket size, e.g. 256kb
	Latency string // queueing bound, e.g. 50ms
}

func (s shaping) tbf(dev string) []string {
	return []string{"qdisc", "add", "dev", dev, "root", "tbf", "rate", s.Rate, "burst", s.Burst, "latency", s.Latency}
}

// controlNet is the namespace of the planner and finalizer: on AWS they are
// Lambdas too, with the same network cap, and the planner reads every source
// whose CRC-32 S3 does not store.
func controlNet() lambdaNet {
	return lambdaNet{NS: nsPrefix + "ctl", HostLink: linkPrefix + "ch", NSLink: linkPrefix + "cn", HostIP: "10.77.0.1", NSIP: "10.77.0.2"}
}

// setUpNetworks makes n shaped worker namespaces and the control namespace.
// serverIP is the host address every namespace routes to (the S3 server binds
// it); it is the host end of the first worker's pair, so nothing outside the
// test's own links is touched.
func setUpNetworks(n int, sh shaping) (workers []lambdaNet, control lambdaNet, serverIP string, err error) {
	if n < 1 || n > 250 {
		return nil, control, "", fmt.Errorf("workers %d: want 1 to 250 (one 10.77.k.0/30 per worker)", n)
	}
	if err := mustBeRoot(); err != nil {
		return nil, control, "", err
	}
	serverIP = lambdaNetFor(0).HostIP
	for k := 0; k < n; k++ {
		l := lambdaNetFor(k)
		if err := setUpNetwork(l, serverIP, sh); err != nil {
			return nil, control, "", fmt.Errorf("network for worker %d: %w", k, err)
		}
		workers = append(workers, l)
	}
	control = controlNet()
	if err := setUpNetwork(control, serverIP, sh); err != nil {
		return nil, control, "", fmt.Errorf("network for the planner and finalizer: %w", err)
	}
	return workers, control, serverIP, nil
}

func setUpNetwork(l lambdaNet, serverIP string, sh shaping) error {
	steps := [][]string{
		{"netns", "add", l.NS},
		{"link", "add", l.HostLink, "type", "veth", "peer", "name", l.NSLink},
		{"link", "set", l.NSLink, "netns", l.NS},
		{"addr", "add", l.HostIP + "/30", "dev", l.HostLink},
		{"link", "set", l.HostLink, "up"},
		{"-n", l.NS, "addr", "add", l.NSIP + "/30", "dev", l.NSLink},
		{"-n", l.NS, "link", "set", "lo", "up"},
		{"-n", l.NS, "link", "set", l.NSLink, "up"},
	}
	if l.HostIP != serverIP {
		steps = append(steps, []string{"-n", l.NS, "route", "add", serverIP + "/32", "via", l.HostIP})
	}
	for _, s := range steps {
		if err := run("ip", s...); err != nil {
			return err
		}
	}
	if err := run("tc", sh.tbf(l.HostLink)...); err != nil {
		return fmt.Errorf("shape %s: %w", l.HostLink, err)
	}
	if err := run("ip", append([]string{"netns", "exec", l.NS, "tc"}, sh.tbf(l.NSLink)...)...); err != nil {
		return fmt.Errorf("shape %s in %s: %w", l.NSLink, l.NS, err)
	}
	return nil
}

// dialIn returns a DialContext that opens its sockets inside namespace ns: a
// socket belongs to the namespace of the thread that creates it, so the dial
// runs on a locked thread switched into ns. The thread is never switched
// back; it ends with its goroutine (a locked goroutine's thread exits with it).
func dialIn(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		done := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			f, err := os.Open("/run/netns/" + ns)
			if err != nil {
				done <- result{nil, fmt.Errorf("open namespace %s: %w", ns, err)}
				return
			}
			defer f.Close()
			if _, _, errno := syscall.RawSyscall(sysSetns(), f.Fd(), syscall.CLONE_NEWNET, 0); errno != 0 {
				done <- result{nil, fmt.Errorf("setns %s: %w", ns, errno)}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			done <- result{c, err}
		}()
		r := <-done
		return r.c, r.err
	}
}

// tearDownNetworks removes every namespace and host link the benchmark names,
// including those of an earlier run that was killed. It reports what it could
// not remove.
func tearDownNetworks() error {
	var failed []string
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.HasPrefix(name, nsPrefix) {
			if err := run("ip", "netns", "del", name); err != nil {
				failed = append(failed, err.Error())
			}
		}
	}
	// Deleting a namespace deletes its veth end and so the pair; a host end
	// whose namespace step failed is left over otherwise.
	out, _ = exec.Command("ip", "-o", "link", "show").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if strings.HasPrefix(name, linkPrefix) {
			// The pair may be going away with its namespace already.
			if err := run("ip", "link", "del", name); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
				failed = append(failed, err.Error())
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("clean-up left: %s", strings.Join(failed, "; "))
	}
	return nil
}

// linkBytes is what crossed the shaped links: toWorkers from the host into
// the namespaces (downloads), fromWorkers back (uploads).
type linkBytes struct{ toWorkers, fromWorkers int64 }

func readLinkBytes(nets []lambdaNet) (linkBytes, error) {
	var b linkBytes
	for _, l := range nets {
		tx, err := readCounter(l.HostLink, "tx_bytes")
		if err != nil {
			return b, err
		}
		rx, err := readCounter(l.HostLink, "rx_bytes")
		if err != nil {
			return b, err
		}
		b.toWorkers += tx
		b.fromWorkers += rx
	}
	return b, nil
}

func readCounter(dev, name string) (int64, error) {
	raw, err := os.ReadFile("/sys/class/net/" + dev + "/statistics/" + name)
	if err != nil {
		return 0, fmt.Errorf("read %s counter of %s: %w", name, dev, err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
}

func mustBeRoot() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the benchmark makes network namespaces, veth pairs and tc qdiscs, which needs root (CAP_NET_ADMIN); run it as root (CI does), it does not fall back to an unshaped run")
	}
	return nil
}

func run(name string, args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// sysSetns is setns(2)'s number; package syscall predates it.
func sysSetns() uintptr {
	switch runtime.GOARCH {
	case "arm64":
		return 268
	case "386":
		return 346
	}
	return 308 // amd64
}
