package splitstorage_test

import (
	"context"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// heapSampler records the largest HeapInuse seen while it runs.
type heapSampler struct {
	max  atomic.Uint64
	stop chan struct{}
	done sync.WaitGroup
}

func sampleHeap(every time.Duration) *heapSampler {
	h := &heapSampler{stop: make(chan struct{})}
	h.done.Go(func() {
		var ms runtime.MemStats
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > h.max.Load() {
				h.max.Store(ms.HeapInuse)
			}
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	})
	return h
}

func (h *heapSampler) Stop() uint64 {
	close(h.stop)
	h.done.Wait()
	return h.max.Load()
}

// TestMemoryBudget writes 2 GiB through the storage (4 files written at once)
// with a 128 MiB budget and reads it back, sampling the heap: it stays within
// the budget plus a small slack.
func TestMemoryBudget(t *testing.T) {
	const (
		total  = 2 << 30
		budget = 128 << 20
		slack  = 24 << 20
		nfiles = 4
	)
	srv := splitstoragetest.Local(t)
	c := srv.Config
	c.PartSize = 16 << 20
	c.MemoryBudget = budget
	c.UploadConcurrency = 4
	c.ReadAhead = 3
	s := newStorage(t, c)
	ctx := context.Background()

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseline := ms.HeapInuse
	h := sampleHeap(5 * time.Millisecond)

	bh, err := s.StartBackup(ctx, "ks/0", "2026-04-01.mem")
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 2*nfiles)
	start := time.Now()
	for i := range nfiles {
		wg.Go(func() {
			w, err := bh.AddFile(ctx, string(rune('a'+i)), -1)
			if err != nil {
				errs <- err
				return
			}
			_, err = io.CopyBuffer(w, newGen(uint64(i), total/nfiles), make([]byte, 1<<20))
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			errs <- err
		})
	}
	wg.Wait()
	require.NoError(t, bh.EndBackup(ctx))
	wdur := time.Since(start)
	wmax := h.Stop()

	h = sampleHeap(5 * time.Millisecond)
	start = time.Now()
	rbh := findBackup(t, s, "ks/0", "2026-04-01.mem")
	for i := range nfiles {
		wg.Go(func() {
			r, err := rbh.ReadFile(ctx, string(rune('a'+i)))
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			v := newVerify(uint64(i), total/nfiles)
			if _, err := io.Copy(v, r); err != nil {
				errs <- err
				return
			}
			errs <- v.check()
		})
	}
	wg.Wait()
	rdur := time.Since(start)
	rmax := h.Stop()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	mib := func(v uint64) float64 { return float64(v) / (1 << 20) }
	t.Logf("2 GiB with a %d MiB budget: write %v (peak heap in use %.1f MiB, %.1f above baseline), read+verify %v (peak %.1f MiB, %.1f above baseline)",
		budget>>20, wdur.Round(time.Millisecond), mib(wmax), mib(wmax-baseline), rdur.Round(time.Millisecond), mib(rmax), mib(rmax-baseline))
	assert.LessOrEqual(t, wmax-baseline, uint64(budget+slack), "write heap over budget")
	assert.LessOrEqual(t, rmax-baseline, uint64(budget+slack), "read heap over budget")
}

// TestValidateMemoryBudget: a budget that cannot hold part-size x (concurrency
// + 1) is refused before any data moves, naming the flags and the numbers.
func TestValidateMemoryBudget(t *testing.T) {
	c := splitstoragetest.TestConfig()
	c.Root = t.TempDir()
	c.PartSize = 256 << 20
	c.MemoryBudget = 1 << 30
	c.UploadConcurrency = 4
	_, err := splitstorage.New(c)
	require.Error(t, err)
	for _, w := range []string{"--split-storage-memory-budget=1GiB", "--split-storage-part-size=256MiB", "--split-storage-upload-concurrency=4", "= 1280MiB", "allowed values are sizes >= 1280MiB"} {
		assert.Contains(t, err.Error(), w)
	}
	c.UploadConcurrency = 3
	c.ReadAhead = 4
	_, err = splitstorage.New(c)
	require.ErrorContains(t, err, "--split-storage-read-ahead=4")
	c.ReadAhead = 3
	_, err = splitstorage.New(c)
	require.NoError(t, err)
}
