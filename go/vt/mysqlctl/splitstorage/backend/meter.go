package backend

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
)

// What an operation (a backup, a copy, a verification, a promotion) cost
// at the store: its requests by the class object stores bill them by, and
// the bytes it moved. Counted where requests leave this process (the
// network backends' HTTP client), so retries, listing pages and each
// store's own requests count as the store sees them; local disk bills
// nothing and counts nothing.

// Requests is what an operation sent to the store.
type Requests struct {
	// Write are the requests billed as writes: PUT, POST, PATCH, COPY,
	// and listings (S3's class A, GCS's class A, Azure's write and list).
	Write int64 `json:"write"`
	// Read are GET and HEAD of objects (class B, read).
	Read int64 `json:"read"`
	// Delete are DELETE requests (free on S3 and GCS).
	Delete int64 `json:"delete"`
	// BytesUp and BytesDown are the request and response bodies' bytes.
	BytesUp   int64 `json:"bytes_up"`
	BytesDown int64 `json:"bytes_down"`
}

// Total is every request.
func (r Requests) Total() int64 { return r.Write + r.Read + r.Delete }

// Add returns r plus o.
func (r Requests) Add(o Requests) Requests {
	return Requests{r.Write + o.Write, r.Read + o.Read, r.Delete + o.Delete, r.BytesUp + o.BytesUp, r.BytesDown + o.BytesDown}
}

// A Meter counts the requests sent with a context that carries it
// (Metered), concurrently; an operation within another (a copy within a
// promotion) counts in both.
type Meter struct {
	write, read, del, up, down atomic.Int64
	parent                     *Meter
}

// Requests is what the meter counted so far.
func (m *Meter) Requests() Requests {
	if m == nil {
		return Requests{}
	}
	return Requests{m.write.Load(), m.read.Load(), m.del.Load(), m.up.Load(), m.down.Load()}
}

type meterKey struct{}

// Metered returns ctx carrying a new Meter, which also counts into the one
// ctx carried: the requests sent with it count there.
func Metered(ctx context.Context) (context.Context, *Meter) {
	m := &Meter{parent: meterFrom(ctx)}
	return WithMeter(ctx, m), m
}

// WithMeter returns ctx carrying m (nil: as it is).
func WithMeter(ctx context.Context, m *Meter) context.Context {
	if m == nil {
		return ctx
	}
	return context.WithValue(ctx, meterKey{}, m)
}

func (m *Meter) count(f func(*Meter) *atomic.Int64, n int64) {
	for ; m != nil; m = m.parent {
		f(m).Add(n)
	}
}

func meterFrom(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// countingTransport counts each request into its context's Meter.
type countingTransport struct {
	next    http.RoundTripper
	listing func(*http.Request) bool
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	m := meterFrom(req.Context())
	if m == nil {
		return t.next.RoundTrip(req)
	}
	class := func(m *Meter) *atomic.Int64 { return &m.write }
	switch {
	case req.Method == http.MethodDelete:
		class = func(m *Meter) *atomic.Int64 { return &m.del }
	case t.listing != nil && t.listing(req):
	case req.Method == http.MethodGet || req.Method == http.MethodHead:
		class = func(m *Meter) *atomic.Int64 { return &m.read }
	}
	m.count(class, 1)
	if req.ContentLength > 0 {
		m.count(func(m *Meter) *atomic.Int64 { return &m.up }, req.ContentLength)
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.Body != nil {
		resp.Body = &countingBody{resp.Body, m}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	m *Meter
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.m.count(func(m *Meter) *atomic.Int64 { return &m.down }, int64(n))
	return n, err
}
