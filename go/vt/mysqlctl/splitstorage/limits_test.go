package splitstorage_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestRateLimits: --split-storage-upload-limit and -download-limit hold a
// backup's writes and a restore's reads to their rates. Only lower bounds on
// time are checked: a busy machine makes the transfer slower, never faster.
func TestRateLimits(t *testing.T) {
	c := splitstoragetest.Local(t).Config
	c.PartSize = 1 << 20
	c.UploadLimit, c.DownloadLimit = 2<<20, 2<<20
	s := newStorage(t, c)
	ctx := context.Background()
	data := bytes.Repeat([]byte("rate"), 1<<20) // 4 MiB: 4 parts
	least := 1500 * time.Millisecond            // 4 MiB at 2 MiB/s, less the first bursts

	start := time.Now()
	bh, err := s.StartBackup(ctx, "ks/0", "limited")
	require.NoError(t, err)
	w, err := bh.AddFile(ctx, "f", -1)
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, bh.EndBackup(ctx))
	assert.GreaterOrEqual(t, time.Since(start), least, "uploads held to 2 MiB/s")

	start = time.Now()
	bh = findBackup(t, s, "ks/0", "limited")
	r, err := bh.ReadFile(ctx, "f")
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Equal(t, data, got)
	assert.GreaterOrEqual(t, time.Since(start), least, "downloads held to 2 MiB/s")
}
