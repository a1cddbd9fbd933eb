package splitstorage

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// holder is who holds a lease: a process on a host, in one boot of it.
type holder struct {
	Host, Boot string
	PID        int
	ProcStart  string
}

var self = sync.OnceValue(func() holder {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return holder{Host: host, Boot: bootID(), PID: pid, ProcStart: procStart(pid)}
})

// thisProcess is the holder this process writes in its leases.
func thisProcess() holder { return self() }

// outlived reports whether l's holder is provably gone, as seen from this
// process: on this host, in another boot of it, or its process no longer
// runs (no such PID, or a PID reused by a process started at another
// time). Another host's holder, or one that did not say who it is, is
// never judged from here.
func (h holder) outlived(l leaseDoc) bool {
	if l.Host == "" || l.Host != h.Host || h.Boot == "" || l.Boot == "" {
		return false
	}
	if l.Boot != h.Boot {
		return true
	}
	if l.PID <= 0 || l.ProcStart == "" {
		return false
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(l.PID)); os.IsNotExist(err) {
		return true
	}
	now := procStart(l.PID)
	return now != "" && now != l.ProcStart
}

// bootID is the kernel's id of this boot (Linux; empty elsewhere: no
// holder is then judged gone).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStart is process pid's start time in clock ticks after boot
// (/proc/<pid>/stat, field 22), empty when it cannot be read.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state): field 22 is fields[19].
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}
