package retry

import (
	"context"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// serverCopyRate is the slowest a server-side copy is assumed to move: an
// attempt is given RequestTimeout plus size at this rate before the
// watchdog may call it stalled (it moves no byte through this process).
const serverCopyRate = 8 << 20

// CopyFrom retries the wrapped backend's server-side copy.
func (r *Backend) CopyFrom(ctx context.Context, src backend.Backend, key string, size int64, opts backend.PutOptions) (bool, error) {
	c, ok := r.Backend.(backend.ServerCopier)
	if !ok {
		return false, nil
	}
	src = backend.Innermost(src)
	copied := false
	err := r.do(ctx, "copy", key, func(ctx context.Context, kick func()) error {
		stop := kickUntil(kick, time.Now().Add(time.Duration(size/serverCopyRate)*time.Second+r.policy.RequestTimeout))
		defer stop()
		var err error
		copied, err = c.CopyFrom(ctx, src, key, size, opts)
		return err
	})
	return copied, err
}

// kickUntil keeps a watchdog from firing until the deadline; stop ends it.
func kickUntil(kick func(), deadline time.Time) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				if now.After(deadline) {
					return
				}
				kick()
			}
		}
	}()
	return func() { close(done); <-finished }
}
