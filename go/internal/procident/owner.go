package procident

import (
	"os"
	"sync"
)

// Owner is a process as a record (a lease, a work directory's owner file)
// names it: its host, the host's boot, the PID namespace its PID belongs
// to, and the process by PID and start time. Empty fields are unknown (a
// record written before they were, or a system without /proc).
type Owner struct {
	Host         string `json:"host,omitempty"`
	Boot         string `json:"boot,omitempty"`
	PIDNamespace string `json:"pid_ns,omitempty"`
	PID          int    `json:"pid,omitempty"`
	ProcStart    string `json:"proc_start,omitempty"`
}

// Self is this process as an Owner.
var Self = sync.OnceValue(func() Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return Owner{Host: host, Boot: BootID(), PIDNamespace: PIDNamespace(), PID: pid, ProcStart: Start(pid)}
})

// PIDNamespace names this process's PID namespace ("pid:[4026531836]"), or
// "" where it cannot be read. Two containers of one host (a pod's, or
// docker's with the host's network and so its host name) see each other's
// PIDs as nothing, or as other processes.
func PIDNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

// Outlived reports whether o is provably gone, as seen from viewer (this
// process, Self): on its host, in another boot of it; or in this boot and its PID
// namespace, a process that no longer runs (no such PID, or a PID given to
// a process started at another time). Another host's process, another PID
// namespace's, or one a record does not fully name, is never judged from
// here: its PID means nothing here.
func (viewer Owner) Outlived(o Owner) bool {
	switch {
	case o.Host == "" || o.Host != viewer.Host || viewer.Boot == "" || o.Boot == "":
		return false
	case o.Boot != viewer.Boot:
		return true
	case o.PIDNamespace == "" || o.PIDNamespace != viewer.PIDNamespace || o.PID <= 0 || o.ProcStart == "":
		return false
	}
	return !Running(o.PID, o.ProcStart)
}
