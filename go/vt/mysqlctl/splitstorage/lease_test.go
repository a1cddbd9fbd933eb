package splitstorage_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestReadLeaseKeepsRemovalOff: a backup under a current read lease is not
// removed by RemoveUnread (ErrInUse, naming who reads it and why); its
// verification ignores the lease; once released, or expired, removal
// works. Vitess's RemoveBackup does not look at leases.
func TestReadLeaseKeepsRemovalOff(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	s := newStorage(t, srv.Config)
	dir := "ks/0"
	for _, name := range []string{"a", "b"} {
		bh, err := s.StartBackup(ctx, dir, name)
		require.NoError(t, err)
		require.NoError(t, writeFile(ctx, bh, "f0", newGen(5, 1<<20), rand.New(rand.NewPCG(1, 5))))
		require.NoError(t, bh.EndBackup(ctx))
	}
	other, err := s.Hold(ctx, dir, "b", "export", time.Hour)
	require.NoError(t, err)
	defer other.Release(ctx)
	lease, err := s.Hold(ctx, dir, "a", "restore into /var/lib/mysql-restored", time.Hour)
	require.NoError(t, err)
	_, err = findBackup(t, s, dir, "a").(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err, "a lease is no stray object")

	err = s.RemoveUnread(ctx, dir, "a")
	require.Error(t, err)
	assert.True(t, errors.Is(err, splitstorage.ErrInUse), "%v", err)
	assert.Contains(t, err.Error(), "backup ks/0/a is not removed: the backup is being read: restore into /var/lib/mysql-restored by ")
	require.NoError(t, lease.Release(ctx))
	require.NoError(t, s.RemoveUnread(ctx, dir, "a"), "released")

	require.NoError(t, s.RemoveBackup(ctx, dir, "b"), "Vitess's RemoveBackup does not look at leases")
	bh, err := s.StartBackup(ctx, dir, "c")
	require.NoError(t, err)
	require.NoError(t, bh.EndBackup(ctx))
	expired, err := s.Hold(ctx, dir, "c", "copy", -time.Second)
	require.NoError(t, err)
	require.NotNil(t, expired)
	require.NoError(t, s.RemoveUnread(ctx, dir, "c"), "an expired lease (its reader died) does not block")
	bhs, err := s.ListBackups(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, bhs)
}
