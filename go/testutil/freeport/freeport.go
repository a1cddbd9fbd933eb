// Package freeport hands out TCP ports for the servers tests start. A port
// taken with Listen(":0") and closed again is one the kernel also hands to
// outgoing connections (the ephemeral range) and to every other test process,
// so a server started on it a moment later may find it taken ("Address
// already in use"), the more so with test processes running side by side
// (scripts/gotest.sh). Ports here come from below the ephemeral range, from a
// block that this process holds alone (a lock file, released when it exits),
// each checked free on every interface before it is handed out, and never
// handed out twice.
package freeport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

const (
	blockSize = 500
	lowest    = 10000
)

var (
	mu    sync.Mutex
	block *portBlock
	held  []*os.File // every block's lock, held while the process lives
)

type portBlock struct {
	next, last int
}

// Get returns a port no other process holds and this one has not handed out.
func Get() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for {
		if block == nil || block.next > block.last {
			b, err := claimBlock(block)
			if err != nil {
				return 0, err
			}
			block = b
		}
		for block.next <= block.last {
			port := block.next
			block.next++
			if free(port) {
				return port, nil
			}
		}
	}
}

// free says whether nothing listens on port, on any interface.
func free(port int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// claimBlock locks the first block after prev (or the first) that no other
// process holds.
func claimBlock(prev *portBlock) (*portBlock, error) {
	hi := ephemeralLow()
	dir := filepath.Join(os.TempDir(), "vtfifo-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	start := lowest
	if prev != nil {
		start = prev.last + 1
	}
	for first := start; first+blockSize <= hi; first += blockSize {
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(first)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		held = append(held, f)
		return &portBlock{next: first, last: first + blockSize - 1}, nil
	}
	return nil, errors.New("freeport: every block of test ports below the ephemeral range is taken")
}

// ephemeralLow is the first port the kernel hands to outgoing connections.
func ephemeralLow() int {
	doc, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(strings.TrimSpace(string(doc)), &lo, &hi); err == nil && lo > lowest+blockSize {
			return lo
		}
	}
	return 32768
}
