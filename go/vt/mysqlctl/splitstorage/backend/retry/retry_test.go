package retry_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	stats "vitess.io/vitess/go/vt/mysqlctl/backupstats"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/backendtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/retry"
)

var quick = retry.Policy{MaxAttempts: 20, InitialBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond, RequestTimeout: 30 * time.Second}

// Over a backend that fails every fourth request and breaks every fourth
// body, the wrapper keeps the whole contract: each fault costs one retry,
// and nothing else does.
func TestConformanceThroughFaults(t *testing.T) {
	b, err := local.New(t.TempDir())
	require.NoError(t, err)
	faulty := &backendtest.Faulty{Backend: b, Every: 4, CutAfter: 1000}
	r := retry.New(faulty, quick, logutil.NewMemoryLogger(), stats.NoStats(), nil)
	backendtest.Run(t, r)
	assert.Greater(t, faulty.Injected.Load(), int64(10), "faults were injected")
	assert.Positive(t, faulty.Cut.Load(), "bodies were cut, and resumed")
	assert.Equal(t, faulty.Injected.Load(), r.Retries(), "one retry per fault")
	assert.Same(t, backend.Backend(faulty), backend.Innermost(r))
}

// errorBackend answers every request with err.
type errorBackend struct {
	backend.Backend
	err   error
	calls int
}

func (e *errorBackend) Stat(context.Context, string) (backend.ObjectInfo, error) {
	e.calls++
	return backend.ObjectInfo{}, e.err
}

func (e *errorBackend) Put(_ context.Context, _ string, r io.ReadSeeker, _ int64, _ backend.PutOptions) error {
	e.calls++
	_, _ = io.Copy(io.Discard, r)
	return e.err
}

func TestWhatIsRetried(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		err   error
		calls int
	}{
		{"permanent", backend.Permanent(errors.New("access denied")), 1},
		{"missing", backend.ErrNotExist, 1},
		{"transient", backend.Transient(errors.New("slow down")), 3},
		{"unknown", errors.New("connection reset by peer"), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &errorBackend{err: tc.err}
			logger := logutil.NewMemoryLogger()
			r := retry.New(e, retry.Policy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, RequestTimeout: time.Second},
				logger, stats.NoStats(), nil)
			_, err := r.Stat(ctx, "k")
			require.ErrorIs(t, err, tc.err)
			assert.Equal(t, tc.calls, e.calls)
			assert.Equal(t, int64(tc.calls-1), r.Retries())
			if tc.calls > 1 {
				assert.ErrorContains(t, err, "giving up after 3 attempts")
				assert.Contains(t, logger.String(), "stat k: attempt 1/3 failed")
			}
		})
	}

	t.Run("put-rereads-the-body", func(t *testing.T) {
		e := &errorBackend{err: backend.Transient(errors.New("reset"))}
		r := retry.New(e, retry.Policy{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, RequestTimeout: time.Second},
			logutil.NewMemoryLogger(), stats.NoStats(), nil)
		body := strings.NewReader("payload")
		require.Error(t, r.Put(ctx, "k", body, 7, backend.PutOptions{}))
		assert.Equal(t, 2, e.calls)
		assert.Zero(t, body.Len(), "the second attempt read the body again from its start")
	})
}

// A cancelled context ends the retries at once.
func TestCancelStopsRetrying(t *testing.T) {
	e := &errorBackend{err: backend.Transient(errors.New("unavailable"))}
	r := retry.New(e, retry.Policy{MaxAttempts: 100, InitialBackoff: time.Hour, MaxBackoff: time.Hour, RequestTimeout: time.Second},
		logutil.NewMemoryLogger(), stats.NoStats(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Stat(ctx, "k")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "unavailable", "the cause is kept")
	assert.Less(t, time.Since(start), time.Minute)
	assert.Equal(t, 1, e.calls)
}

// pagedLister lists in pages that each take pageTime; progress says
// whether it tells the watchdog of each (backend.Progress).
type pagedLister struct {
	backend.Backend
	pages    int
	pageTime time.Duration
	progress bool
	calls    int
}

func (p *pagedLister) List(ctx context.Context, prefix string, dirs bool) ([]backend.ObjectInfo, error) {
	p.calls++
	var out []backend.ObjectInfo
	for i := range p.pages {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(p.pageTime):
		}
		if p.progress {
			backend.Progress(ctx)
		}
		out = append(out, backend.ObjectInfo{Key: prefix + strings.Repeat("k", i+1)})
	}
	return out, nil
}

// TestALongListingThatMovesIsNotStalled: a listing of many pages, longer
// in all than the request timeout, completes when each page says it
// moved (every backend's List does), and is retried as stalled, then
// given up, when none does.
func TestALongListingThatMovesIsNotStalled(t *testing.T) {
	pol := retry.Policy{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, RequestTimeout: 300 * time.Millisecond}
	moving := &pagedLister{pages: 30, pageTime: 20 * time.Millisecond, progress: true}
	out, err := retry.New(moving, pol, logutil.NewMemoryLogger(), stats.NoStats(), nil).List(context.Background(), "p/", false)
	require.NoError(t, err)
	assert.Len(t, out, 30)
	assert.Equal(t, 1, moving.calls)

	silent := &pagedLister{pages: 30, pageTime: 20 * time.Millisecond}
	_, err = retry.New(silent, pol, logutil.NewMemoryLogger(), stats.NoStats(), nil).List(context.Background(), "p/", false)
	require.Error(t, err)
	assert.ErrorContains(t, err, "no progress for 300ms")
	assert.Equal(t, 2, silent.calls)
}

// breakingBackend serves an object of size bytes whose every body breaks
// before its first byte.
type breakingBackend struct {
	backend.Backend
	size int64
}

func (b *breakingBackend) Stat(_ context.Context, key string) (backend.ObjectInfo, error) {
	return backend.ObjectInfo{Key: key, Size: b.size}, nil
}

func (b *breakingBackend) Get(context.Context, string, int64, int64) (io.ReadCloser, error) {
	return io.NopCloser(iotest.ErrReader(io.ErrUnexpectedEOF)), nil
}

// TestABodyThatKeepsBreaking: a body that breaks at every attempt is no
// proof about an object the store holds whole (could-not-be-read, never
// damage); about one shorter than what was asked it is left as it is, a
// body cut short, which the reader judges.
func TestABodyThatKeepsBreaking(t *testing.T) {
	for _, tc := range []struct {
		size       int64
		unreadable bool
	}{{1 << 20, true}, {100, false}} {
		r := retry.New(&breakingBackend{size: tc.size}, retry.Policy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
			RequestTimeout: time.Second}, logutil.NewMemoryLogger(), stats.NoStats(), nil)
		body, err := r.Get(context.Background(), "k", 0, 1000)
		require.NoError(t, err)
		_, err = io.ReadAll(body)
		require.ErrorContains(t, err, "get k: body broken 3 times, giving up at offset 0")
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Equal(t, tc.unreadable, unreadable.Is(err), "an object of %d bytes", tc.size)
	}
}
