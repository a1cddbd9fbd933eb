package splitstorage_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestPromotionResumesAndGuardsTheSource: a delta promoted from a working
// storage (local disk) to a protected one (versitygw with Object Lock) is
// copied with its base, verified and locked there. Cut short while it
// copies, and again while it locks, it leaves the source marked (every
// removal, retention's included, keeps off it), the destination not locked
// (or refused to removal, its lock record written), and nothing recorded
// as promoted; run again, it copies nothing twice and finishes, and then
// the working storage may drop it.
func TestPromotionResumesAndGuardsTheSource(t *testing.T) {
	ctx := context.Background()
	src := newStorage(t, splitstoragetest.Local(t).Config)
	srv := splitstoragetest.StartS3ObjectLock(t)
	p := splitstoragetest.NewFaultProxy(t, srv.Addr)
	ps := srv.WithProxy(p)
	ps.Setenv(t)
	dst := newStorage(t, ps.Config)
	dbe, err := dst.RawBackendForTest(ctx)
	require.NoError(t, err)
	dir := "ks/0"
	chainBackup(t, src, dir, "a-full", "")
	chainBackup(t, src, dir, "b-delta", "a-full")
	lock := backend.Lock{Until: time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second), Mode: backend.LockCompliance}
	promotion := func(name string) string {
		bh, err := src.OpenBackup(ctx, dir, name)
		require.NoError(t, err)
		s, err := bh.(*splitstorage.Handle).Promotion(ctx)
		require.NoError(t, err)
		return s
	}
	requireGuarded := func() {
		t.Helper()
		err := src.RemoveBackup(ctx, dir, "b-delta")
		require.True(t, errors.Is(err, splitstorage.ErrInUse), "%v", err)
		require.ErrorContains(t, err, "its promotion to "+dbe.String())
		require.ErrorContains(t, err, "has not finished (vtfifo promote resumes it)")
		require.Contains(t, promotion("b-delta"), "being promoted to ")
	}

	// Cut while copying the delta (its completion marker refused at the destination).
	p.FailMatching(http.MethodPut, "b-delta/.complete", splitstoragetest.Forbidden, 1)
	_, err = src.Promote(ctx, dst, dir, "b-delta", lock, splitstorage.CopyOptions{})
	require.ErrorContains(t, err, "split storage: promoting backup ks/0/b-delta to ")
	requireGuarded()
	require.Equal(t, []string{"a-full"}, listed(t, dst, dir), "the delta is not listed at the destination")

	// Cut while locking (the first read of an object's retention refused:
	// the copy locked each object as it wrote it, the lock step checks them).
	p.FailMatching(http.MethodGet, "retention", splitstoragetest.Forbidden, 1)
	_, err = src.Promote(ctx, dst, dir, "b-delta", lock, splitstorage.CopyOptions{})
	require.Error(t, err)
	requireGuarded()

	// Resumed: nothing copied twice, the chain locked at the destination.
	rep, err := src.Promote(ctx, dst, dir, "b-delta", lock, splitstorage.CopyOptions{})
	require.NoError(t, err)
	require.Empty(t, rep.Copied, "both were copied by the runs cut short")
	require.Equal(t, lock.Until, rep.Until)
	require.Equal(t, []string{"a-full"}, rep.Lock.Bases)
	requireLockedUntil(t, dbe, dir, "b-delta", lock.Until)
	requireLockedUntil(t, dbe, dir, "a-full", lock.Until)
	require.Contains(t, promotion("b-delta"), "promoted to "+dbe.String()+" on "+rep.Done.Format(time.RFC3339)+", locked until "+
		lock.Until.Format(time.RFC3339)+" (compliance) there (")
	_, err = dst.OpenBackup(ctx, dir, "b-delta")
	require.NoError(t, err)
	require.ErrorIs(t, dst.RemoveBackup(ctx, dir, "b-delta"), backend.ErrLocked)

	// The working storage may now drop it; the protected copy restores alone.
	require.NoError(t, src.RemoveBackup(ctx, dir, "b-delta"))
	require.NoError(t, readBackupFiles(dst, dir, "b-delta", "f"))
}

// readBackupFiles reads files of a backup through s.
func readBackupFiles(s *splitstorage.Storage, dir, name string, files ...string) error {
	ctx := context.Background()
	bh, err := s.OpenBackup(ctx, dir, name)
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, err := readAll(ctx, bh, f); err != nil {
			return err
		}
	}
	_, err = bh.(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	return err
}
