package backendtest

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// ErrInjected is the transient error Faulty fails with.
var ErrInjected = backend.Transient(errors.New("backendtest: injected fault"))

// Faulty wraps a Backend and fails on purpose, the way a network store
// does: every Every-th request fails before it reaches the backend (a Put
// after reading part of its body), and every Every-th body Get returns
// breaks after CutAfter bytes. Injected counts both; Cut the broken bodies.
type Faulty struct {
	backend.Backend
	Every    int   // 0: no fault
	CutAfter int64 // bytes a broken body hands out first

	requests atomic.Int64
	Injected atomic.Int64
	Cut      atomic.Int64
}

var _ backend.Backend = (*Faulty)(nil)

// due says whether this request is one to fail.
func (f *Faulty) due() bool {
	return f.Every > 0 && f.requests.Add(1)%int64(f.Every) == 0
}

// fault says whether to fail this request, and counts it.
func (f *Faulty) fault() bool {
	if !f.due() {
		return false
	}
	f.Injected.Add(1)
	return true
}

func (f *Faulty) Put(ctx context.Context, key string, r io.ReadSeeker, size int64, opts backend.PutOptions) error {
	if f.fault() {
		_, _ = io.CopyN(io.Discard, r, size/2)
		return ErrInjected
	}
	return f.Backend.Put(ctx, key, r, size, opts)
}

func (f *Faulty) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if f.fault() {
		return nil, ErrInjected
	}
	rc, err := f.Backend.Get(ctx, key, offset, length)
	if err != nil || !f.due() {
		return rc, err
	}
	return &cutBody{ReadCloser: rc, left: f.CutAfter, faulty: f}, nil
}

func (f *Faulty) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	if f.fault() {
		return backend.ObjectInfo{}, ErrInjected
	}
	return f.Backend.Stat(ctx, key)
}

func (f *Faulty) List(ctx context.Context, prefix string, dirs bool) ([]backend.ObjectInfo, error) {
	if f.fault() {
		return nil, ErrInjected
	}
	return f.Backend.List(ctx, prefix, dirs)
}

func (f *Faulty) Delete(ctx context.Context, key string) error {
	if f.fault() {
		return ErrInjected
	}
	return f.Backend.Delete(ctx, key)
}

// cutBody hands out left bytes, then breaks as a reset connection does
// (a body shorter than that ends as it should, and counts no fault).
type cutBody struct {
	io.ReadCloser
	left   int64
	faulty *Faulty
	broken bool
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if !c.broken {
			c.broken = true
			c.faulty.Injected.Add(1)
			c.faulty.Cut.Add(1)
		}
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}
