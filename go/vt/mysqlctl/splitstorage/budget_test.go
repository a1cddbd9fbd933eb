package splitstorage_test

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestTightBudgetTwoReaders: two writers and then two readers share a budget
// of exactly part-size x 2. Reservations are taken in part order, so a
// prefetched later part never holds the memory the reader waits for (this
// deadlocked once).
func TestTightBudgetTwoReaders(t *testing.T) {
	srv := splitstoragetest.Local(t)
	c := srv.Config
	c.PartSize = 8 << 20
	c.MemoryBudget = 16 << 20
	c.UploadConcurrency = 1
	c.ReadAhead = 1
	s := newStorage(t, c)
	ctx := context.Background()
	bh, err := s.StartBackup(ctx, "ks/0", "tight")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for f := range 2 {
		wg.Go(func() {
			w, err := bh.AddFile(ctx, string(rune('a'+f)), -1)
			require.NoError(t, err)
			_, err = io.Copy(w, newGen(1, 64<<20))
			require.NoError(t, err)
			require.NoError(t, w.Close())
		})
	}
	wg.Wait()
	require.NoError(t, bh.EndBackup(ctx))
	require.Zero(t, s.PoolHeldForTest(ctx), "budget reserved after EndBackup")
	rbh := findBackup(t, s, "ks/0", "tight")
	for f := range 2 {
		wg.Go(func() {
			r, err := rbh.ReadFile(ctx, string(rune('a'+f)))
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, r)
			require.NoError(t, err)
			r.Close()
		})
	}
	wg.Wait()
	require.Zero(t, s.PoolHeldForTest(ctx), "budget reserved after the readers closed")
}
