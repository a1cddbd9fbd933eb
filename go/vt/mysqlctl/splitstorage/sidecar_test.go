package splitstorage_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestSidecars: a document stored beside a complete backup is read back,
// replaced, never taken for a stray object by VerifyParts, refused on an
// incomplete backup and removed with the backup.
func TestSidecars(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	s := newStorage(t, srv.Config)
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	dir := "ks/0"
	bh, err := s.StartBackup(ctx, dir, "done")
	require.NoError(t, err)
	require.NoError(t, writeFile(ctx, bh, "f", newGen(1, 1000), rand.New(rand.NewPCG(1, 1))))

	// Not complete yet: refused.
	wh := bh.(*splitstorage.Handle)
	err = wh.PutSidecar(ctx, "verification", []byte(`{}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is not complete")
	require.NoError(t, bh.EndBackup(ctx))

	h := findBackup(t, s, dir, "done").(*splitstorage.Handle)
	_, err = h.ReadSidecar(ctx, "verification")
	require.ErrorIs(t, err, splitstorage.ErrNotExist)
	require.NoError(t, h.PutSidecar(ctx, "verification", []byte(`{"n":1}`)))
	require.NoError(t, h.PutSidecar(ctx, "verification", []byte(`{"n":2}`)))
	doc, err := h.ReadSidecar(ctx, "verification")
	require.NoError(t, err)
	assert.Equal(t, `{"n":2}`, string(doc))
	for _, bad := range []string{"", ".x", "a/b", "..", "x\x00"} {
		assert.Error(t, h.PutSidecar(ctx, bad, []byte("x")), "sidecar name %q", bad)
	}
	assert.Error(t, h.PutSidecar(ctx, "big", make([]byte, 1<<20+1)))

	_, err = h.VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err, "a sidecar is no stray object")
	_, err = readAll(ctx, h, "f")
	require.NoError(t, err)

	require.NoError(t, s.RemoveBackup(ctx, dir, "done"))
	objs, err := be.List(ctx, dir+"/", false)
	require.NoError(t, err)
	assert.Empty(t, objs, "removing the backup removes its sidecars")
}
