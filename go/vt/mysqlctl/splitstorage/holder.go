package splitstorage

import (
	"os"
	"sync"

	"github.com/vtfifo/vtfifo/go/internal/procident"
)

// holder is who holds a lease: a process on a host, in one boot of it.
type holder struct {
	Host, Boot string
	PID        int
	ProcStart  string
}

// thisProcess is the holder this process writes in its leases.
var thisProcess = sync.OnceValue(func() holder {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return holder{Host: host, Boot: procident.BootID(), PID: pid, ProcStart: procident.Start(pid)}
})

// outlived reports whether l's holder is provably gone, as seen from this
// process: on this host, in another boot of it, or its process no longer
// runs (no such PID, or a PID given to a process started at another
// time). Another host's holder, or one that did not say who it is, is
// never judged from here.
func (h holder) outlived(l leaseDoc) bool {
	switch {
	case l.Host == "" || l.Host != h.Host || h.Boot == "" || l.Boot == "":
		return false
	case l.Boot != h.Boot:
		return true
	case l.PID <= 0 || l.ProcStart == "":
		return false
	}
	return !procident.Running(l.PID, l.ProcStart)
}
