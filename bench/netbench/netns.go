package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
)

// Every name the benchmark gives the kernel starts with these prefixes, so a
// clean-up finds exactly what a run (or a killed earlier run) made.
const (
	nsPrefix   = "s3zip-bench-" // network namespaces
	linkPrefix = "s3zb"         // host-side veth ends (names are at most 15 bytes)
)

// The bench's networks: every address it uses lives in a namespace it made.
// The hub namespace routes between the server's namespace and every
// worker's; each worker namespace is joined to the hub by a veth pair whose
// two ends are shaped (the hub end's egress is what the worker downloads,
// the namespace end's what it uploads). The server's own link is not shaped:
// S3 is far wider than one Lambda.
const (
	hubNS    = nsPrefix + "hub"
	serverNS = nsPrefix + "s3"
	serverIP = "10.77.255.2" // versitygw binds here, inside serverNS
	hubToS3  = "10.77.255.1"
)

// lambdaNet is one emulated Lambda network: a namespace joined to the hub by
// a veth pair, shaped to rate (and delayed) on both ends.
type lambdaNet struct {
	NS       string // namespace name
	HostLink string // veth end in the hub namespace
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

// shaping is the tc token bucket on each direction of a Lambda's link: its
// bandwidth. (S3's request latency is added by the server's proxy,
// latency.go.)
type shaping struct {
	Rate    string // e.g. 600mbit
	Burst   string // bucket size, e.g. 256kb
	Latency string // tbf queueing bound, e.g. 50ms
}

// qdiscs are the tc commands (after "tc") that shape dev; verb is add, or
// change for a link already shaped.
func (s shaping) qdiscs(verb, dev string) [][]string {
	return [][]string{{"qdisc", verb, "dev", dev, "root", "tbf", "rate", s.Rate, "burst", s.Burst, "latency", s.Latency}}
}

// shapeEnds shapes both ends of l's veth (verb as qdiscs).
func shapeEnds(l lambdaNet, sh shaping, verb string) error {
	for _, q := range sh.qdiscs(verb, l.HostLink) {
		if err := run("tc", append([]string{"-n", hubNS}, q...)...); err != nil {
			return fmt.Errorf("shape %s: %w", l.HostLink, err)
		}
	}
	for _, q := range sh.qdiscs(verb, l.NSLink) {
		if err := run("tc", append([]string{"-n", l.NS}, q...)...); err != nil {
			return fmt.Errorf("shape %s in %s: %w", l.NSLink, l.NS, err)
		}
	}
	return nil
}

// controlNet is the namespace of the planner and finalizer: on AWS they are
// Lambdas too, with the same network cap.
func controlNet() lambdaNet {
	return lambdaNet{NS: nsPrefix + "ctl", HostLink: linkPrefix + "ch", NSLink: linkPrefix + "cn", HostIP: "10.77.0.1", NSIP: "10.77.0.2"}
}

// setUpHub makes the hub (a router) and the server's namespace; the workers'
// links are added by setUpLambdas.
func setUpHub() error {
	if err := mustBeRoot(); err != nil {
		return err
	}
	steps := [][]string{
		{"netns", "add", hubNS},
		{"netns", "add", serverNS},
		{"-n", hubNS, "link", "set", "lo", "up"},
		{"-n", serverNS, "link", "set", "lo", "up"},
		{"-n", hubNS, "link", "add", linkPrefix + "sh", "type", "veth", "peer", "name", linkPrefix + "sn", "netns", serverNS},
		{"-n", hubNS, "addr", "add", hubToS3 + "/30", "dev", linkPrefix + "sh"},
		{"-n", hubNS, "link", "set", linkPrefix + "sh", "up"},
		{"-n", serverNS, "addr", "add", serverIP + "/30", "dev", linkPrefix + "sn"},
		{"-n", serverNS, "link", "set", linkPrefix + "sn", "up"},
		{"-n", serverNS, "route", "add", "10.77.0.0/16", "via", hubToS3},
	}
	for _, s := range steps {
		if err := run("ip", s...); err != nil {
			return err
		}
	}
	// The hub forwards between its links; a new namespace starts with
	// forwarding off, and the machine's own setting is not touched.
	return run("ip", "netns", "exec", hubNS, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
}

// setUpLambdas makes n shaped worker namespaces and the control namespace,
// each joined to the hub (setUpHub first).
func setUpLambdas(n int, sh shaping) (workers []lambdaNet, control lambdaNet, err error) {
	if n < 1 || n > 250 {
		return nil, control, fmt.Errorf("workers %d: want 1 to 250 (one 10.77.k.0/30 per worker)", n)
	}
	for k := 0; k < n; k++ {
		l := lambdaNetFor(k)
		if err := setUpNetwork(l, sh); err != nil {
			return nil, control, fmt.Errorf("network for worker %d: %w", k, err)
		}
		workers = append(workers, l)
	}
	control = controlNet()
	if err := setUpNetwork(control, sh); err != nil {
		return nil, control, fmt.Errorf("network for the planner and finalizer: %w", err)
	}
	return workers, control, nil
}

// reshape changes the shaping of links already set up, both ends.
func reshape(links []lambdaNet, sh shaping) error {
	for _, l := range links {
		if err := shapeEnds(l, sh, "change"); err != nil {
			return fmt.Errorf("reshape: %w", err)
		}
	}
	return nil
}

func setUpNetwork(l lambdaNet, sh shaping) error {
	steps := [][]string{
		{"netns", "add", l.NS},
		{"-n", hubNS, "link", "add", l.HostLink, "type", "veth", "peer", "name", l.NSLink, "netns", l.NS},
		{"-n", hubNS, "addr", "add", l.HostIP + "/30", "dev", l.HostLink},
		{"-n", hubNS, "link", "set", l.HostLink, "up"},
		{"-n", l.NS, "addr", "add", l.NSIP + "/30", "dev", l.NSLink},
		{"-n", l.NS, "link", "set", "lo", "up"},
		{"-n", l.NS, "link", "set", l.NSLink, "up"},
		{"-n", l.NS, "route", "add", serverIP + "/32", "via", l.HostIP},
	}
	for _, s := range steps {
		if err := run("ip", s...); err != nil {
			return err
		}
	}
	return shapeEnds(l, sh, "add")
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

// linkBytes is what crossed the shaped links: toWorkers from the hub into
// the namespaces (downloads), fromWorkers back (uploads).
type linkBytes struct{ toWorkers, fromWorkers int64 }

func readLinkBytes(nets []lambdaNet) (linkBytes, error) {
	var b linkBytes
	out, err := exec.Command("ip", "-n", hubNS, "-j", "-s", "link", "show").Output()
	if err != nil {
		return b, fmt.Errorf("read link counters in %s: %w", hubNS, err)
	}
	var links []struct {
		Name  string `json:"ifname"`
		Stats struct {
			RX struct{ Bytes int64 } `json:"rx"`
			TX struct{ Bytes int64 } `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return b, fmt.Errorf("read link counters in %s: %w", hubNS, err)
	}
	byName := map[string]int{}
	for i, l := range links {
		byName[l.Name] = i
	}
	for _, l := range nets {
		i, ok := byName[l.HostLink]
		if !ok {
			return b, fmt.Errorf("link %s not found in %s", l.HostLink, hubNS)
		}
		b.toWorkers += links[i].Stats.TX.Bytes
		b.fromWorkers += links[i].Stats.RX.Bytes
	}
	return b, nil
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
