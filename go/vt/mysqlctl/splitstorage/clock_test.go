package splitstorage_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestTheStoresClock: Now is the write time each store gives a probe (the
// servers here run on this host's clock: within a few seconds of it, at
// S3's and Azure's one-second precision), and the probe is gone after; a
// root without its root identity gets no probe. SeenNow, which writes
// nothing, is the time a network store's answer gives; local disk gives
// none.
func TestTheStoresClock(t *testing.T) {
	for _, kind := range []string{splitstorage.BackendFile, splitstorage.BackendS3, splitstorage.BackendGCS, splitstorage.BackendAzure} {
		t.Run(kind, func(t *testing.T) {
			srv := splitstoragetest.Start(t, kind)
			srv.Setenv(t)
			s := newStorage(t, srv.Config)
			ctx := context.Background()
			be, err := s.RawBackendForTest(ctx)
			require.NoError(t, err)
			_, err = s.Now(ctx)
			require.ErrorContains(t, err, "the store's clock is read from a probe written beside the root identity .split-storage, which "+
				be.String()+" does not hold yet (the next backup or copy writes it)")
			left, err := be.List(ctx, "", false)
			require.NoError(t, err)
			require.Empty(t, left, "a root without its identity gets no probe")

			// Read without writing: the time the store's answer gives,
			// even in a root without its identity; none on local disk.
			before := time.Now()
			seen, err := s.SeenNow(ctx)
			if kind == splitstorage.BackendFile {
				require.ErrorIs(t, err, splitstorage.ErrNoClockSeen)
			} else {
				require.NoError(t, err)
				require.WithinRange(t, seen, before.Add(-2*time.Second), time.Now().Add(2*time.Second))
			}
			left, err = be.List(ctx, "", false)
			require.NoError(t, err)
			require.Empty(t, left, "reading the clock wrote nothing")

			sealedBackup(t, s, "ks/0", "b")
			before = time.Now()
			now, err := s.Now(ctx)
			require.NoError(t, err)
			require.WithinRange(t, now, before.Add(-2*time.Second), time.Now().Add(2*time.Second))
			left, err = be.List(ctx, ".fleet/clock/", false)
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}

// TestAFileRootIsJudgedByItsFileServersClock: a local root may be a file
// server's (NFS), shared by hosts whose clocks are off from it; its files'
// write times are the file server's. A remover whose clock ran three days
// ahead of it took a read lease for an hour as ended and removed the
// backup under a restore (seen here), and took a lock for a day as ended
// (then only the local backend's own check of each file, by the real
// clock here, kept them: on that host it would not have). Now both are
// judged by the write time of a probe at the root: the file server's clock
// (here, the real one; this host's, as the storage reads it, is set off).
func TestAFileRootIsJudgedByItsFileServersClock(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Start(t, splitstorage.BackendFile)
	s := newStorage(t, srv.Config)
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	for _, name := range []string{"locked", "read"} {
		sealedBackup(t, s, "ks/0", name)
	}
	until := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	_, err = s.Lock(ctx, "ks/0", "locked", backend.Lock{Until: until, Mode: backend.LockGovernance})
	require.NoError(t, err)
	splitstoragetest.PlantForeignLease(t, be, "ks/0", "read", "reader-1-0a0b", "restore into /var/lib/mysql", 0, time.Hour)

	splitstorage.SetHostClockOffForTest(t, 72*time.Hour)
	err = s.RemoveBackup(ctx, "ks/0", "locked")
	require.ErrorIs(t, err, backend.ErrLocked)
	require.ErrorContains(t, err, "not removing backup ks/0/locked: it is locked until "+until.Format(time.RFC3339))
	err = s.RemoveUnread(ctx, "ks/0", "read")
	require.ErrorIs(t, err, splitstorage.ErrInUse)
	require.ErrorContains(t, err, "restore into /var/lib/mysql by reader-1-0a0b")
	bhs, err := s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 2, "both backups kept")

	// A lock's date is checked against the file server's clock too: a day
	// from its now is taken, though this host's clock says it has passed.
	_, err = s.Lock(ctx, "ks/0", "read", backend.Lock{Until: until, Mode: backend.LockGovernance})
	require.NoError(t, err)
}
