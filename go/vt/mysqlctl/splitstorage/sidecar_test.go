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

// TestSidecarsLiveAndDieWithTheirBackup: a document stored beside a complete backup is read back,
// replaced, never taken for a stray object by VerifyParts, refused on an
// incomplete backup and removed with the backup.
func TestSidecarsLiveAndDieWithTheirBackup(t *testing.T) {
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

// TestQuarantinedBackupIsNeverRestoredButKept: a quarantined backup leaves ListBackups (so no restore
// chooses it) but keeps its objects; ListIncomplete shows why; Release
// makes it complete and readable again; RemoveBackup removes it whole.
func TestQuarantinedBackupIsNeverRestoredButKept(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	s := newStorage(t, srv.Config)
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	dir := "ks/0"
	for _, name := range []string{"a", "b"} {
		bh, err := s.StartBackup(ctx, dir, name)
		require.NoError(t, err)
		require.NoError(t, writeFile(ctx, bh, "f", newGen(1, 1000), rand.New(rand.NewPCG(1, 1))))
		require.NoError(t, bh.EndBackup(ctx))
	}
	names := func() []string {
		bhs, err := s.ListBackups(ctx, dir)
		require.NoError(t, err)
		var out []string
		for _, bh := range bhs {
			out = append(out, bh.Name())
		}
		return out
	}

	h := findBackup(t, s, dir, "b").(*splitstorage.Handle)
	require.NoError(t, h.Quarantine(ctx, "test restore failed: mysqld did not start"))
	assert.Equal(t, []string{"a"}, names(), "a quarantined backup is not listed")
	inc, err := s.ListIncomplete(ctx, dir)
	require.NoError(t, err)
	require.Len(t, inc, 1)
	assert.Equal(t, "b", inc[0].Name)
	assert.Equal(t, "test restore failed: mysqld did not start", inc[0].Quarantined)
	assert.Error(t, h.Quarantine(ctx, "again"), "only a complete backup is quarantined")
	assert.Error(t, h.PutSidecar(ctx, "verification", []byte(`{}`)), "a quarantined backup is not complete")
	_, err = s.Release(ctx, dir, "a")
	require.ErrorIs(t, err, splitstorage.ErrNotExist, "a is not quarantined")

	_, err = s.Release(ctx, dir, "b")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, names())
	h = findBackup(t, s, dir, "b").(*splitstorage.Handle)
	_, err = h.VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err, "released, the backup verifies")
	_, err = readAll(ctx, h, "f")
	require.NoError(t, err)
	inc, err = s.ListIncomplete(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, inc)

	require.NoError(t, h.Quarantine(ctx, "again"))
	require.NoError(t, s.RemoveBackup(ctx, dir, "b"))
	objs, err := be.List(ctx, dir+"/b/", false)
	require.NoError(t, err)
	assert.Empty(t, objs, "removing a quarantined backup removes it whole")
}
