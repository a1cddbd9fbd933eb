package splitstorage_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// TestMemoryDoesNotGrowWithPartSize writes 8 files of 64 MiB at once and
// reads them back at once, with 4 MiB and with 256 MiB parts, sampling the
// heap. Writes hold no part in memory (parts wait in the spool), reads hold
// a block per file plus the shared read budget: the peaks stay under a
// bound that does not depend on the part size.
func TestMemoryDoesNotGrowWithPartSize(t *testing.T) {
	const (
		nfiles   = 8
		fileSize = 64 << 20
		budget   = 16 << 20
		slack    = 24 << 20
	)
	srv := splitstoragetest.Local(t)
	for _, part := range []int64{4 << 20, 256 << 20} {
		t.Run(fmt.Sprintf("part=%dMiB", part>>20), func(t *testing.T) {
			c := srv.Config
			c.PartSize = part
			c.MemoryBudget = budget
			c.ReadAhead = 8 << 20
			c.UploadConcurrency = 4
			s := newStorage(t, c)
			ctx := context.Background()
			name := fmt.Sprintf("2026-04-01.mem-%d", part>>20)

			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			baseline := ms.HeapInuse
			h := sampleHeap(2 * time.Millisecond)
			start := time.Now()
			bh, err := s.StartBackup(ctx, "ks/0", name)
			require.NoError(t, err)
			var wg sync.WaitGroup
			errs := make(chan error, 2*nfiles)
			for i := range nfiles {
				wg.Go(func() {
					w, err := bh.AddFile(ctx, string(rune('a'+i)), -1)
					if err != nil {
						errs <- err
						return
					}
					_, err = io.CopyBuffer(w, newGen(uint64(i), fileSize), make([]byte, 256<<10))
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

			runtime.GC()
			runtime.ReadMemStats(&ms)
			rbase := ms.HeapInuse
			h = sampleHeap(2 * time.Millisecond)
			start = time.Now()
			rbh := findBackup(t, s, "ks/0", name)
			for i := range nfiles {
				wg.Go(func() {
					r, err := rbh.ReadFile(ctx, string(rune('a'+i)))
					if err != nil {
						errs <- err
						return
					}
					defer r.Close()
					v := newVerify(uint64(i), fileSize)
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
			growth := func(peak, base uint64) uint64 { return peak - min(peak, base) }
			t.Logf("%d files x %d MiB, %d MiB parts: write %v (heap +%.1f MiB), read+verify %v (heap +%.1f MiB)",
				nfiles, fileSize>>20, part>>20, wdur.Round(time.Millisecond), mib(growth(wmax, baseline)), rdur.Round(time.Millisecond), mib(growth(rmax, rbase)))
			assert.LessOrEqual(t, growth(wmax, baseline), uint64(slack), "write heap grew with the parts")
			// A block per file, the budget, and the test's own 1 MiB comparison buffer per file.
			assert.LessOrEqual(t, growth(rmax, rbase), uint64(nfiles*2<<20+budget+slack), "read heap over a block per file + the budget")
		})
	}
}
