// Package retry wraps a backend.Backend so that every request is retried with
// backoff on transient errors, cancelled when it stalls, and a cut download is
// resumed where it broke.
package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"vitess.io/vitess/go/vt/logutil"
	stats "vitess.io/vitess/go/vt/mysqlctl/backupstats"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Policy is the exponential backoff with full jitter of the retrying backend.
type Policy struct {
	MaxAttempts    int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	RequestTimeout time.Duration
}

func (p Policy) backoff(attempt int) time.Duration {
	d := p.InitialBackoff
	for i := 1; i < attempt && d < p.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.MaxBackoff)
	// full jitter: uniform in [0, d], but never zero so a busy store gets some air.
	return time.Duration(rand.Int64N(int64(d))+1) + time.Millisecond
}

// Backend wraps a backend.Backend: every call is retried with backoff on transient
// errors, each attempt is cancelled when it moves no byte for RequestTimeout,
// and Get returns a reader that resumes a body cut mid-way at the offset
// reached. Every retry is logged and counted (Retries and the stats scope).
type Backend struct {
	backend.Backend
	policy  Policy
	logger  logutil.Logger
	stats   stats.Stats // scoped to Operation("Retry")
	retries *atomic.Int64
}

// New wraps b. Retries are logged to logger, timed in st's Operation("Retry")
// scope and counted in counter (nil: a counter of its own).
func New(b backend.Backend, policy Policy, logger logutil.Logger, st stats.Stats, counter *atomic.Int64) *Backend {
	if counter == nil {
		counter = new(atomic.Int64)
	}
	return &Backend{Backend: b, policy: policy, logger: logger, stats: st.Scope(stats.Operation("Retry")), retries: counter}
}

// Unwrap returns the backend wrapped.
func (r *Backend) Unwrap() backend.Backend { return r.Backend }

// Retries returns how many retries this backend has made.
func (r *Backend) Retries() int64 { return r.retries.Load() }

// do runs fn until it succeeds, fails permanently or runs out of attempts.
func (r *Backend) do(ctx context.Context, op, key string, fn func(ctx context.Context, kick func()) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		if ctxErr := ctx.Err(); ctxErr != nil {
			if err != nil {
				return fmt.Errorf("%s %s: %w (after %v)", op, key, ctxErr, err)
			}
			return ctxErr
		}
		wd := newWatchdog(ctx, r.policy.RequestTimeout)
		err = fn(wd.ctx, wd.kick)
		stalled := wd.stop()
		if err == nil {
			return nil
		}
		if stalled && ctx.Err() == nil && !backend.MarkedTransient(err) {
			err = backend.Transient(fmt.Errorf("no progress for %v: %w", r.policy.RequestTimeout, err))
		}
		if ctx.Err() != nil || !backend.IsTransient(err) {
			return err
		}
		if attempt >= r.policy.MaxAttempts {
			// The store did not serve it (5xx, throttling, stalls, the
			// network): never damage (go/internal/unreadable).
			return unreadable.Error(fmt.Errorf("%s %s: giving up after %d attempts: %w", op, key, attempt, err))
		}
		if err := r.sleep(ctx, op, key, attempt, err); err != nil {
			return err
		}
	}
}

func (r *Backend) sleep(ctx context.Context, op, key string, attempt int, cause error) error {
	d := r.policy.backoff(attempt)
	n := r.retries.Add(1)
	r.stats.TimedIncrement(d)
	r.logger.Warningf("split storage: %s %s: attempt %d/%d failed: %v; retrying in %v (retry #%d)", op, key, attempt, r.policy.MaxAttempts, cause,
		d.Round(time.Millisecond), n)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w (after %v)", op, key, ctx.Err(), cause)
	case <-t.C:
		return nil
	}
}

func (r *Backend) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, opts backend.PutOptions) error {
	first := true
	return r.do(ctx, "put", key, func(ctx context.Context, kick func()) error {
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return backend.Permanent(err)
		}
		err := r.Backend.Put(ctx, key, &kickReadSeeker{body, kick}, size, opts)
		if errors.Is(err, backend.ErrExists) && !first {
			// An earlier attempt may have written it and lost the answer; the caller
			// decides (see StartBackup's token check).
			return fmt.Errorf("%w (on a retry)", err)
		}
		first = false
		return err
	})
}

func (r *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	var oi backend.ObjectInfo
	err := r.do(ctx, "stat", key, func(ctx context.Context, kick func()) error {
		var err error
		oi, err = r.Backend.Stat(ctx, key)
		return err
	})
	return oi, err
}

func (r *Backend) List(ctx context.Context, prefix string, dirs bool) ([]backend.ObjectInfo, error) {
	var out []backend.ObjectInfo
	err := r.do(ctx, "list", prefix, func(ctx context.Context, kick func()) error {
		var err error
		out, err = r.Backend.List(backend.WithProgress(ctx, kick), prefix, dirs) // each page moves the watchdog
		return err
	})
	return out, err
}

func (r *Backend) Delete(ctx context.Context, key string) error {
	return r.do(ctx, "delete", key, func(ctx context.Context, kick func()) error {
		return r.Backend.Delete(ctx, key)
	})
}

// Get opens key and returns a reader that, when the body breaks, reopens it at
// the offset reached (with backoff), up to the attempt limit per break.
func (r *Backend) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	rr := &resumingReader{r: r, ctx: ctx, key: key, offset: offset, remaining: length}
	if err := rr.open(); err != nil {
		return nil, err
	}
	return rr, nil
}

type resumingReader struct {
	r         *Backend
	ctx       context.Context
	key       string
	offset    int64
	remaining int64 // < 0: to the end
	body      io.ReadCloser
	wd        *watchdog
}

func (rr *resumingReader) open() error {
	return rr.r.do(rr.ctx, "get", rr.key, rr.openOnce)
}

func (rr *resumingReader) openOnce(_ context.Context, _ func()) error {
	// The attempt context of do() ends when do returns; a body outlives it, so
	// the body gets its own watchdog that lives until the body is closed.
	wd := newWatchdog(rr.ctx, rr.r.policy.RequestTimeout)
	body, err := rr.r.Backend.Get(wd.ctx, rr.key, rr.offset, rr.remaining)
	if err != nil {
		stalled := wd.stop()
		if stalled && rr.ctx.Err() == nil {
			err = backend.Transient(fmt.Errorf("no progress for %v: %w", rr.r.policy.RequestTimeout, err))
		}
		return err
	}
	rr.body, rr.wd = body, wd
	return nil
}

// storeHoldsAll says whether the object is at least as long as what was
// asked of it: then a body that kept breaking was cut on the way, which is
// no proof about the object (a short object reads the same way).
func (rr *resumingReader) storeHoldsAll() bool {
	if rr.remaining <= 0 {
		return false
	}
	oi, err := rr.r.Backend.Stat(rr.ctx, rr.key)
	return err == nil && oi.Size >= rr.offset+rr.remaining
}

func (rr *resumingReader) closeBody() bool {
	stalled := false
	if rr.body != nil {
		rr.body.Close()
		stalled = rr.wd.stop()
		rr.body, rr.wd = nil, nil
	}
	return stalled
}

func (rr *resumingReader) Read(p []byte) (int, error) {
	if rr.remaining == 0 {
		return 0, io.EOF
	}
	if rr.remaining > 0 && int64(len(p)) > rr.remaining {
		p = p[:rr.remaining]
	}
	for attempt := 1; ; attempt++ {
		if rr.body == nil {
			if err := rr.open(); err != nil {
				return 0, err
			}
		}
		// The watchdog runs only while a Read waits on the body: a reader
		// that pauses (a restore's lane waiting on its disk) is not a stall.
		rr.wd.kick()
		n, err := rr.body.Read(p)
		rr.wd.pause()
		if n > 0 {
			rr.offset += int64(n)
			if rr.remaining > 0 {
				rr.remaining -= int64(n)
			}
		}
		if err == nil || (err == io.EOF && rr.remaining <= 0) {
			if err == io.EOF {
				rr.closeBody()
			}
			return n, err
		}
		if err == io.EOF {
			// The body ended before the length asked for: cut short.
			err = io.ErrUnexpectedEOF
		}
		stalled := rr.closeBody()
		if stalled && rr.ctx.Err() == nil {
			err = backend.Transient(fmt.Errorf("no progress for %v: %w", rr.r.policy.RequestTimeout, err))
		}
		if rr.ctx.Err() != nil || !backend.IsTransient(err) {
			return n, err
		}
		if attempt >= rr.r.policy.MaxAttempts {
			err = fmt.Errorf("get %s: body broken %d times, giving up at offset %d: %w", rr.key, attempt, rr.offset, err)
			if rr.storeHoldsAll() {
				return n, unreadable.Error(err) // cut on the way, not short in the store
			}
			return n, err
		}
		if err := rr.r.sleep(rr.ctx, "get (resume at offset "+fmt.Sprint(rr.offset)+")", rr.key, attempt, err); err != nil {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
	}
}

func (rr *resumingReader) Close() error {
	rr.closeBody()
	return nil
}

// watchdog cancels its context when kick has not been called for d.
type watchdog struct {
	ctx     context.Context
	cancel  context.CancelFunc
	timer   *time.Timer
	d       time.Duration
	mu      sync.Mutex
	fired   bool
	stopped bool
}

func newWatchdog(parent context.Context, d time.Duration) *watchdog {
	ctx, cancel := context.WithCancel(parent)
	w := &watchdog{ctx: ctx, cancel: cancel, d: d}
	w.timer = time.AfterFunc(d, func() {
		w.mu.Lock()
		if !w.stopped {
			w.fired = true
		}
		w.mu.Unlock()
		cancel()
	})
	return w
}

func (w *watchdog) kick() { w.timer.Reset(w.d) }

// pause holds the watchdog until the next kick.
func (w *watchdog) pause() { w.timer.Stop() }

// stop ends the watchdog and says whether it had fired.
func (w *watchdog) stop() bool {
	w.mu.Lock()
	w.stopped = true
	fired := w.fired
	w.mu.Unlock()
	w.timer.Stop()
	w.cancel()
	return fired
}

// kickReadSeeker calls kick on every read: the watchdog sees the body move.
type kickReadSeeker struct {
	io.ReadSeeker
	kick func()
}

var _ backend.WatchedBody = (*kickReadSeeker)(nil)

// Unwrap lets a backend that links a spooled file (local) find it; such a
// Put reads nothing, so it has nothing to kick.
func (k *kickReadSeeker) Unwrap() io.ReadSeeker { return k.ReadSeeker }

func (k *kickReadSeeker) Read(p []byte) (int, error) {
	n, err := k.ReadSeeker.Read(p)
	if n > 0 {
		k.kick()
	}
	return n, err
}
