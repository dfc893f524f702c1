package main

import (
	"fmt"
	"os"
	"strings"
)

// processIdentity names process pid exactly on this machine by the boot,
// the PID namespace and the process's start time, so a PID reused by another
// process is not taken for it. It returns "" when the process does not exist
// or /proc cannot tell; a zombie counts as gone.
func processIdentity(pid int) string {
	machine := machineIdentity()
	if machine == "" {
		return ""
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// Fields are counted after the command in parentheses, which may hold
	// spaces. state is the 3rd field, starttime the 22nd.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return fmt.Sprintf("%s pid %d start %s", machine, pid, f[19])
}

// machineIdentity names this boot and PID namespace. Processes with the
// same one see the same PIDs.
func machineIdentity() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return "linux boot " + strings.TrimSpace(string(boot)) + " " + ns
}

// sameMachine says whether a process identity was taken in this boot and
// PID namespace, where processIdentity can tell whether it still runs.
func sameMachine(identity string) bool {
	m := machineIdentity()
	return m != "" && strings.HasPrefix(identity, m+" pid ")
}
