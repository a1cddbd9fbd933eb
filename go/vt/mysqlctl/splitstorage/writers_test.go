package splitstorage_test

import (
	"context"
	"errors"
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

	writable := bh.(interface{ WritableFilesAtOnce() int })
	assert.Equal(t, 4, writable.WritableFilesAtOnce())
	var open []io.WriteCloser
	for _, name := range []string{"a", "b", "c", "d"} {
		w, err := bh.AddFile(ctx, name, -1)
		require.NoError(t, err)
		_, err = w.Write(make([]byte, 1<<20))
		require.NoError(t, err)
		open = append(open, w)
	}
	assert.Equal(t, 0, writable.WritableFilesAtOnce())
	_, err = bh.AddFile(ctx, "e", -1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--split-storage-memory-budget")
	assert.Contains(t, err.Error(), "--split-storage-part-size")

	require.NoError(t, open[0].Close())
	assert.Equal(t, 1, writable.WritableFilesAtOnce())
	w, err := bh.AddFile(ctx, "f", -1)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	for _, w := range open[1:] {
		require.NoError(t, w.Close())
	}
	require.NoError(t, bh.AbortBackup(ctx))
}

// Wait (Vitess v25's BackupHandle) returns once no upload is in flight, with
// the errors recorded for the backup's files.
func TestWaitReportsRecordedErrors(t *testing.T) {
	bs, err := splitstorage.New(splitstoragetest.Local(t).Config)
	require.NoError(t, err)
	ctx := context.Background()
	bh, err := bs.StartBackup(ctx, "ks/0", "wait")
	require.NoError(t, err)
	waiter := bh.(interface{ Wait() error })
	w, err := bh.AddFile(ctx, "a", -1)
	require.NoError(t, err)
	_, err = w.Write(make([]byte, 3<<20))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, waiter.Wait())
	bh.RecordError("b", errors.New("lane b failed"))
	require.ErrorContains(t, waiter.Wait(), "lane b failed")
	require.NoError(t, bh.AbortBackup(ctx))
}
