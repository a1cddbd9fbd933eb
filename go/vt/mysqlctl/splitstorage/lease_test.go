package splitstorage_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"regexp"
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

// TestALeaseIsJudgedByTheStoresClock: a read lease runs for its holder's
// term from its write time at the store, judged by the store's clock,
// whatever the holder's clock wrote in it. A lease from a reader whose
// clock ran three days behind was expired for every other host (a
// cleanup removed the backup under its restore); one from a reader three
// days ahead blocked removals for three days more than its term (4 s here). File and
// S3 (versitygw, whose listing answer gives the store's time).
func TestALeaseIsJudgedByTheStoresClock(t *testing.T) {
	for _, kind := range []string{splitstorage.BackendFile, splitstorage.BackendS3} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			srv := splitstoragetest.Start(t, kind)
			srv.Setenv(t)
			s := newStorage(t, srv.Config)
			be, err := s.RawBackendForTest(ctx)
			require.NoError(t, err)
			for _, name := range []string{"behind", "ahead"} {
				sealedBackup(t, s, "ks/0", name)
			}
			written := time.Now().UTC()
			splitstoragetest.PlantForeignLease(t, be, "ks/0", "behind", "behind-1-0a0b", "restore into /var/lib/mysql", -72*time.Hour, time.Hour)
			err = s.RemoveUnread(ctx, "ks/0", "behind")
			require.ErrorIs(t, err, splitstorage.ErrInUse)
			require.Regexp(t, `backup ks/0/behind is not removed: the backup is being read: restore into /var/lib/mysql by behind-1-0a0b since `+
				`(\S+) \(until (\S+)\)`, err.Error())
			m := regexp.MustCompile(`since (\S+) \(until (\S+)\)`).FindStringSubmatch(err.Error())
			since, err := time.Parse(time.RFC3339, m[1])
			require.NoError(t, err)
			until, err := time.Parse(time.RFC3339, m[2])
			require.NoError(t, err)
			require.WithinRange(t, since, written.Add(-2*time.Second), time.Now().Add(2*time.Second), "its write time at the store")
			require.Equal(t, time.Hour, until.Sub(since), "its holder's term")

			splitstoragetest.PlantForeignLease(t, be, "ks/0", "ahead", "ahead-1-0c0d", "restore into /var/lib/mysql", 72*time.Hour, 4*time.Second)
			// Its term from its write time, which the store gives to the
			// second: it ends 3 to 4 s from now.
			require.ErrorIs(t, s.RemoveUnread(ctx, "ks/0", "ahead"), splitstorage.ErrInUse)
			time.Sleep(5 * time.Second)
			require.NoError(t, s.RemoveUnread(ctx, "ks/0", "ahead"), "its term has run on the store's clock")
		})
	}
}
