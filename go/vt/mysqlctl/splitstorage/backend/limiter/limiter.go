// Package limiter wraps a backend.Backend so that the bytes it uploads and
// downloads stay under a rate: a backup on a replica beside live traffic must
// not take the whole network link. One wrapper is shared by every lane and
// file of a process, so the limit is the process's, not a lane's.
package limiter

import (
	"context"
	"io"

	"golang.org/x/time/rate"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// chunk is the most bytes one wait asks for; a rate's burst is at least this.
const chunk = 256 << 10

// Limits are an upload and a download rate; every backend Wrap returns
// draws on the same two.
type Limits struct {
	up, down *rate.Limiter // nil: no limit
}

// NewLimits returns the limits; upload and download are bytes per second, 0
// for no limit.
func NewLimits(upload, download int64) *Limits {
	return &Limits{up: newLimiter(upload), down: newLimiter(download)}
}

// Wrap returns b limited, or b itself when there is no limit.
func (l *Limits) Wrap(b backend.Backend) backend.Backend {
	if l.up == nil && l.down == nil {
		return b
	}
	return &Backend{Backend: b, Limits: l}
}

// Backend limits the bytes Put reads and Get's readers hand out. Requests
// that carry no data (Stat, List, Delete) and server-side copies (no byte
// passes through the process) are not limited. It goes outside the retrying
// wrapper: a wait for the limit is not a stalled request.
type Backend struct {
	backend.Backend
	*Limits
}

var (
	_ backend.Backend      = (*Backend)(nil)
	_ backend.ServerCopier = (*Backend)(nil)
)

func newLimiter(bytesPerSecond int64) *rate.Limiter {
	if bytesPerSecond <= 0 {
		return nil
	}
	// A burst of a tenth of a second's bytes keeps the rate smooth at the
	// scale of a part, and at least one chunk so a wait can always be met.
	return rate.NewLimiter(rate.Limit(bytesPerSecond), max(chunk, int(bytesPerSecond/10)))
}

// Unwrap returns the backend wrapped.
func (l *Backend) Unwrap() backend.Backend { return l.Backend }

func (l *Backend) Put(ctx context.Context, key string, r io.ReadSeeker, size int64, opts backend.PutOptions) error {
	if l.up == nil {
		return l.Backend.Put(ctx, key, r, size, opts)
	}
	return l.Backend.Put(ctx, key, &readSeeker{reader{ctx: ctx, lim: l.up, r: r}, r}, size, opts)
}

// CopyFrom passes a server-side copy to the backend wrapped, when it makes them.
func (l *Backend) CopyFrom(ctx context.Context, src backend.Backend, key string, size int64, opts backend.PutOptions) (bool, error) {
	c, ok := l.Backend.(backend.ServerCopier)
	if !ok {
		return false, nil
	}
	return c.CopyFrom(ctx, src, key, size, opts)
}

func (l *Backend) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	rc, err := l.Backend.Get(ctx, key, offset, length)
	if err != nil || l.down == nil {
		return rc, err
	}
	return &readCloser{reader{ctx: ctx, lim: l.down, r: rc}, rc}, nil
}

// reader waits for the limiter before each read of at most one chunk.
type reader struct {
	ctx context.Context
	lim *rate.Limiter
	r   io.Reader
}

func (r *reader) Read(p []byte) (int, error) {
	p = p[:min(len(p), chunk)]
	if len(p) == 0 {
		return r.r.Read(p)
	}
	if err := r.lim.WaitN(r.ctx, len(p)); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

type readSeeker struct {
	reader
	s io.Seeker
}

func (r *readSeeker) Seek(offset int64, whence int) (int64, error) { return r.s.Seek(offset, whence) }

type readCloser struct {
	reader
	c io.Closer
}

func (r *readCloser) Close() error { return r.c.Close() }
