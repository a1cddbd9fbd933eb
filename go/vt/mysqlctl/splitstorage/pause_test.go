package splitstorage_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// A reader that stops reading for longer than --split-storage-request-timeout
// (a restore's lane waiting on its disk) is not a stalled download: the part
// stays one request, nothing is retried, and the data arrives whole.
func TestPausedReaderIsNotAStall(t *testing.T) {
	srv := splitstoragetest.Start(t, splitstorage.BackendS3)
	srv.Setenv(t)
	c := srv.Config
	c.PartSize = 4 << 20
	c.ReadAhead = 1 << 20
	c.RequestTimeout = time.Second
	s := newStorage(t, c)
	ctx := context.Background()
	bh, err := s.StartBackup(ctx, "ks/0", "pause")
	require.NoError(t, err)
	w, err := bh.AddFile(ctx, "a", -1)
	require.NoError(t, err)
	_, err = io.Copy(w, newGen(7, 12<<20))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, bh.EndBackup(ctx))
	before := s.Retries()

	r, err := findBackup(t, s, "ks/0", "pause").ReadFile(ctx, "a")
	require.NoError(t, err)
	defer r.Close()
	v := newVerify(7, 12<<20)
	_, err = io.CopyN(v, r, 5<<20) // into the second part
	require.NoError(t, err)
	time.Sleep(3 * c.RequestTimeout)
	_, err = io.Copy(v, r)
	require.NoError(t, err)
	require.NoError(t, v.check())
	assert.Equal(t, before, s.Retries(), "a paused reader was taken for a stalled download")
}
