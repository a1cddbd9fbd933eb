package fifobackupengine

import (
	"errors"
	"io"
	"sync"
	"time"
)

// errLaneStopped is what a lane reader returns once the restore or verify
// that owns it has stopped.
var errLaneStopped = errors.New("lane reader stopped")

// laneGuard serializes Read with the shutdown of a lane. xbstream.Extract
// and Verify return at the first error without waiting for the other lanes'
// goroutines, which may still be inside Read; closing a decompressor under
// them (zstd's Decoder is not safe for Close during Read: it panics) would
// crash the process. Stop waits for an in-flight Read to return (the caller
// cancels the storage reads first, so it returns promptly) and makes every
// later Read fail.
type laneGuard struct {
	mu      sync.Mutex
	r       io.Reader
	stopped bool
}

func (g *laneGuard) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return 0, errLaneStopped
	}
	return g.r.Read(p)
}

// stop waits up to wait for an in-flight Read to return and marks the lane
// stopped; it reports false if the Read is still blocked (the caller must
// then not close what that Read is using).
func (g *laneGuard) stop(wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for !g.mu.TryLock() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	g.stopped = true
	g.mu.Unlock()
	return true
}

// laneStopWait bounds how long shutdown waits for a lane's Read.
const laneStopWait = 30 * time.Second
