package limiter_test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/backendtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/limiter"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
)

func newLocal(t *testing.T) backend.Backend {
	b, err := local.New(t.TempDir())
	require.NoError(t, err)
	return b
}

func readAll(t *testing.T, b backend.Backend, key string) []byte {
	rc, err := b.Get(context.Background(), key, 0, -1)
	require.NoError(t, err)
	defer rc.Close()
	data, err := io.ReadAll(rc)
	require.NoError(t, err)
	return data
}

// The wrapper keeps the backend's contract.
func TestConformance(t *testing.T) {
	backendtest.Run(t, limiter.NewLimits(64<<20, 64<<20).Wrap(newLocal(t)))
}

func TestNoLimitIsNoWrapper(t *testing.T) {
	b := newLocal(t)
	assert.Same(t, b, limiter.NewLimits(0, 0).Wrap(b))
}

// The rates are lower bounds on time, never upper ones: a busy machine only
// makes a transfer slower, so these cannot fail for being slow.
func TestRatesAreLowerBoundsOnTime(t *testing.T) {
	ctx := context.Background()
	const rate = 2 << 20
	data := make([]byte, 3<<20)
	// The first burst (256 KiB) is free; the rest waits for its tokens.
	least := time.Duration(float64(len(data)-256<<10) / rate * float64(time.Second))

	t.Run("upload", func(t *testing.T) {
		b := limiter.NewLimits(rate, 0).Wrap(newLocal(t))
		start := time.Now()
		require.NoError(t, b.Put(ctx, "k", bytes.NewReader(data), int64(len(data)), backend.PutOptions{}))
		assert.GreaterOrEqual(t, time.Since(start), least*9/10)

		assert.Equal(t, data, readAll(t, b, "k"))
	})

	t.Run("download", func(t *testing.T) {
		b := limiter.NewLimits(0, rate).Wrap(newLocal(t))
		require.NoError(t, b.Put(ctx, "k", bytes.NewReader(data), int64(len(data)), backend.PutOptions{}))
		start := time.Now()
		assert.Equal(t, data, readAll(t, b, "k"))
		assert.GreaterOrEqual(t, time.Since(start), least*9/10)
	})

	t.Run("shared", func(t *testing.T) {
		// Two backends wrapped by one Limits share its rate.
		limits := limiter.NewLimits(rate, 0)
		a, b := limits.Wrap(newLocal(t)), limits.Wrap(newLocal(t))
		start := time.Now()
		var wg sync.WaitGroup
		for _, be := range []backend.Backend{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				assert.NoError(t, be.Put(ctx, "k", bytes.NewReader(data), int64(len(data)), backend.PutOptions{}))
			}()
		}
		wg.Wait()
		assert.GreaterOrEqual(t, time.Since(start), 2*least*9/10)
	})
}

// A transfer waiting for its turn ends when its context does.
func TestCancelWhileWaiting(t *testing.T) {
	b := limiter.NewLimits(1<<20, 0).Wrap(newLocal(t))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	data := make([]byte, 64<<20)
	err := b.Put(ctx, "k", bytes.NewReader(data), int64(len(data)), backend.PutOptions{})
	require.Error(t, err)
	_, err = b.Stat(context.Background(), "k")
	assert.ErrorIs(t, err, backend.ErrNotExist, "nothing half-written is left")
}

// A server-side copy passes through the wrapper to the store's own (a hard
// link between two local roots, for a move), and is not limited: no byte
// passes through the process.
func TestServerCopyPassesThrough(t *testing.T) {
	ctx := context.Background()
	src, dst := newLocal(t), limiter.NewLimits(1<<20, 1<<20).Wrap(newLocal(t))
	data := make([]byte, 8<<20)
	require.NoError(t, src.Put(ctx, "k", bytes.NewReader(data), int64(len(data)), backend.PutOptions{}))
	copier, ok := dst.(backend.ServerCopier)
	require.True(t, ok)
	copied, err := copier.CopyFrom(ctx, src, "k", int64(len(data)), backend.PutOptions{Moving: true})
	require.NoError(t, err)
	assert.True(t, copied)
	info, err := dst.Stat(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), info.Size)
}
