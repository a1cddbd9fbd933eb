// Package procident tells one process of this host from another over time
// (Linux /proc; elsewhere nothing is known and nothing is judged gone): a
// PID with its start time, since a PID is given again to a later process,
// in one boot of the host. Work directories and leases record it so that
// what a killed process left is told from what a live one holds.
package procident

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Stat returns the fields of /proc/pid/stat after "pid (comm)" (comm may
// hold spaces and parentheses): [0] is the state, [19] the start time.
func Stat(pid int) ([]string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(string(b[i+1:]))
	return f, len(f) >= 20
}

// Start is pid's start time in clock ticks since boot, or "" where it
// cannot be read.
func Start(pid int) string {
	if f, ok := Stat(pid); ok {
		return f[19]
	}
	return ""
}

// Alive reports whether a process pid exists (one of another user's
// included).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Running reports whether the process pid that started at start (as Start
// gave it; "" when not known) still runs: a live pid that started at
// another time is another process.
func Running(pid int, start string) bool {
	if !Alive(pid) {
		return false
	}
	if now := Start(pid); start != "" && now != "" {
		return now == start
	}
	return true
}

// BootID is the kernel's id of this boot, or "" where it cannot be read.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
