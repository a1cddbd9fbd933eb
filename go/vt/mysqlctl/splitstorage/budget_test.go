package splitstorage_test

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestReadersWithAnEmptyBudget: with no read budget at all, files read at
// once still progress, each on its own block buffer (a reader never waits
// for memory another one holds), and nothing stays borrowed or spooled.
func TestReadersWithAnEmptyBudget(t *testing.T) {
	srv := splitstoragetest.Local(t)
	c := srv.Config
	c.PartSize = 8 << 20
	c.MemoryBudget = 0
	c.UploadConcurrency = 1
	c.ReadAhead = 4 << 20
	s := newStorage(t, c)
	ctx := context.Background()
	bh, err := s.StartBackup(ctx, "ks/0", "tight")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for f := range 3 {
		wg.Go(func() {
			w, err := bh.AddFile(ctx, string(rune('a'+f)), -1)
			require.NoError(t, err)
			_, err = io.Copy(w, newGen(uint64(f), 40<<20))
			require.NoError(t, err)
			require.NoError(t, w.Close())
		})
	}
	wg.Wait()
	require.NoError(t, bh.EndBackup(ctx))
	reserved, live := s.SpoolForTest(ctx)
	require.Zero(t, reserved, "spool reserved after EndBackup")
	require.Zero(t, live, "spool bytes on disk after EndBackup")
	rbh := findBackup(t, s, "ks/0", "tight")
	for f := range 3 {
		wg.Go(func() {
			r, err := rbh.ReadFile(ctx, string(rune('a'+f)))
			require.NoError(t, err)
			v := newVerify(uint64(f), 40<<20)
			_, err = io.Copy(v, r)
			require.NoError(t, err)
			require.NoError(t, v.check())
			require.NoError(t, r.Close())
		})
	}
	wg.Wait()
	require.Zero(t, s.ReadBudgetHeldForTest(ctx), "read budget borrowed after the readers closed")
}
