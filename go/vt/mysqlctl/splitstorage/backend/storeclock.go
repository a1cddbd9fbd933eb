package backend

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// The store's clock as its answers give it (each HTTP answer's Date), for
// what judges ages and writes nothing: a read-only view's check of a
// backup's age (a host whose clock is off would call a fresh backup stale,
// or a stale one fresh). Local disk gives none: the host is the store.

// A ClockWatch keeps the newest Date of the answers to the requests sent
// with a context that carries it (WatchClock).
type ClockWatch struct {
	mu   sync.Mutex
	date time.Time // the store's time in the answer
	got  time.Time // when the answer came, on this host's monotonic clock
}

type clockKey struct{}

// WatchClock returns ctx carrying a new ClockWatch.
func WatchClock(ctx context.Context) (context.Context, *ClockWatch) {
	w := &ClockWatch{}
	return context.WithValue(ctx, clockKey{}, w), w
}

// Now is the store's time now: the newest answer's Date plus the time
// since it came (the monotonic clock, which no step of this host's wall
// clock moves); false where no answer gave one.
func (w *ClockWatch) Now() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.got.IsZero() {
		return time.Time{}, false
	}
	return w.date.Add(time.Since(w.got)), true
}

func (w *ClockWatch) saw(h http.Header) {
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return
	}
	got := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.date, w.got = date, got
}

// clockTransport gives each answer's Date to its request's ClockWatch.
type clockTransport struct{ next http.RoundTripper }

func (t clockTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if w, ok := req.Context().Value(clockKey{}).(*ClockWatch); ok && err == nil {
		w.saw(resp.Header)
	}
	return resp, err
}
