package splitstorage_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// More files open for writing than the budget has parts for would let a lane
// splitter and the storage wait on each other forever: the file that would
// overflow is refused at AddFile, before any of its data moves, naming the
// flags; closing a file makes room again.
func TestAddFileRefusesMoreWritersThanPartsInBudget(t *testing.T) {
	cfg := splitstoragetest.Local(t).Config
	cfg.PartSize = 4 << 20
	cfg.MemoryBudget = 16 << 20 // 4 parts
	cfg.UploadConcurrency = 2
	cfg.ReadAhead = 2
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	bh, err := bs.StartBackup(ctx, "ks/0", "writers")
	require.NoError(t, err)

	var open []io.WriteCloser
	for _, name := range []string{"a", "b", "c", "d"} {
		w, err := bh.AddFile(ctx, name, -1)
		require.NoError(t, err)
		_, err = w.Write(make([]byte, 1<<20))
		require.NoError(t, err)
		open = append(open, w)
	}
	_, err = bh.AddFile(ctx, "e", -1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--split-storage-memory-budget")
	assert.Contains(t, err.Error(), "--split-storage-part-size")

	require.NoError(t, open[0].Close())
	w, err := bh.AddFile(ctx, "f", -1)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	for _, w := range open[1:] {
		require.NoError(t, w.Close())
	}
	require.NoError(t, bh.AbortBackup(ctx))
}
