package splitstorage_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// lockingStores are the stores whose locks are enforced where we test
// them: local disk (by our code) and versitygw (S3 Object Lock, by the
// store).
func lockingStores(t *testing.T) map[string]func(t *testing.T) *splitstoragetest.Server {
	return map[string]func(t *testing.T) *splitstoragetest.Server{
		"file": func(t *testing.T) *splitstoragetest.Server { return splitstoragetest.Local(t) },
		"s3-object-lock": func(t *testing.T) *splitstoragetest.Server {
			srv := splitstoragetest.StartS3ObjectLock(t)
			srv.Setenv(t)
			return srv
		},
	}
}

// lockingPair opens srv's storage twice: plain, and locking every new
// backup for 48 hours in governance mode (with cfg, its configuration, and
// be, its backend).
func lockingPair(t *testing.T, srv *splitstoragetest.Server) (plain, locking *splitstorage.Storage, cfg splitstorage.Config, be backend.Backend) {
	t.Helper()
	plain = newStorage(t, srv.Config)
	cfg = srv.Config
	cfg.LockFor, cfg.LockMode = 48*time.Hour, backend.LockGovernance
	locking = newStorage(t, cfg)
	be, err := locking.RawBackendForTest(context.Background())
	require.NoError(t, err)
	return plain, locking, cfg, be
}

// storeLocks returns the lock the store holds on every object of a backup,
// by key relative to the backup.
func storeLocks(t *testing.T, be backend.Backend, dir, name string) map[string]backend.Lock {
	t.Helper()
	ctx := context.Background()
	lk, ok := backend.LockerOf(be)
	require.True(t, ok)
	prefix := dir + "/" + name + "/"
	objs, err := be.List(ctx, prefix, false)
	require.NoError(t, err)
	out := map[string]backend.Lock{}
	for _, o := range objs {
		l, err := lk.LockOf(ctx, o.Key)
		require.NoError(t, err, o.Key)
		l.Until = l.Until.UTC()
		out[strings.TrimPrefix(o.Key, prefix)] = l
	}
	return out
}

// requireLockedUntil checks that every object a backup's lock covers is
// locked at the store until exactly until, and the moving markers are not.
func requireLockedUntil(t *testing.T, be backend.Backend, dir, name string, until time.Time) {
	t.Helper()
	locks := storeLocks(t, be, dir, name)
	require.NotEmpty(t, locks)
	for key, l := range locks {
		switch {
		case key == ".complete" || strings.HasPrefix(key, ".sidecar-"):
			require.True(t, l.IsZero(), "%s/%s: %s is locked (%v): it moves or is replaced", dir, name, key, l)
		default:
			require.Equal(t, until, l.Until, "%s/%s: %s", dir, name, key)
		}
	}
}

// TestLockedBackupsAreKept: with --split-storage-lock-for every object a
// new backup writes is locked at the store, no removal takes it (an error
// naming the date, a contradiction: exit 2 in the CLI), Lock extends and
// never shortens, a chain is locked as a unit, and a backup written without
// a lock is removed as before.
func TestLockedBackupsAreKept(t *testing.T) {
	for kind, start := range lockingStores(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			plain, locking, cfg, be := lockingPair(t, start(t))
			dir := "ks/0"

			before := time.Now().UTC().Truncate(time.Second)
			chainBackup(t, locking, dir, "a-full", "")
			bl, err := locking.LockOf(ctx, dir, "a-full")
			require.NoError(t, err)
			until := bl.Lock.Until
			require.True(t, !until.Before(before.Add(48*time.Hour)) && until.Before(before.Add(48*time.Hour+time.Minute)), "locked until %s", until)
			started, err := be.Stat(ctx, dir+"/a-full/.started")
			require.NoError(t, err)
			require.Equal(t, started.Modified.Add(48*time.Hour).UTC().Truncate(time.Second), until.UTC(),
				"the lock runs from the store's write time of the start marker, not this host's clock")
			require.NotNil(t, bl.Complete, "the lock record keeps the completion marker")
			requireLockedUntil(t, be, dir, "a-full", until)

			// No removal takes it, and nothing of it goes.
			objects := len(storeLocks(t, be, dir, "a-full"))
			err = plain.RemoveBackup(ctx, dir, "a-full")
			require.Error(t, err)
			require.True(t, errors.Is(err, backend.ErrLocked), "%v", err)
			require.True(t, flagvalue.IsContradiction(err), "a locked backup's removal is a request that cannot succeed: %v", err)
			require.ErrorContains(t, err, "not removing backup ks/0/a-full: it is locked until "+until.Format(time.RFC3339)+" (governance)")
			require.Equal(t, []string{"a-full"}, listed(t, plain, dir))
			require.Len(t, storeLocks(t, be, dir, "a-full"), objects)

			// It verifies as any backup (its lock record is no stray object),
			// and a copy elsewhere is not locked by the source's record.
			bh, err := plain.OpenBackup(ctx, dir, "a-full")
			require.NoError(t, err)
			_, err = bh.(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
			require.NoError(t, err)
			dst := newStorage(t, splitstoragetest.Local(t).Config)
			_, err = plain.CopyBackup(ctx, dst, dir, "a-full", splitstorage.CopyOptions{})
			require.NoError(t, err)
			bl, err = dst.LockOf(ctx, dir, "a-full")
			require.NoError(t, err)
			require.True(t, bl.Lock.IsZero(), "the copy holds the source's lock record: %v", bl.Lock)
			require.NoError(t, dst.RemoveBackup(ctx, dir, "a-full"))

			// A delta is capped at its base's lock, then locked with it as a unit.
			cfg.LockFor = 96 * time.Hour
			longer := newStorage(t, cfg)
			chainBackup(t, longer, dir, "b-delta", "a-full")
			requireLockedUntil(t, be, dir, "b-delta", until)
			later := until.Add(24 * time.Hour)
			res, err := plain.Lock(ctx, dir, "b-delta", backend.Lock{Until: later, Mode: backend.LockGovernance})
			require.NoError(t, err)
			require.Equal(t, []string{"a-full"}, res.Bases)
			requireLockedUntil(t, be, dir, "b-delta", later)
			requireLockedUntil(t, be, dir, "a-full", later)
			// An earlier date shortens nothing.
			_, err = plain.Lock(ctx, dir, "a-full", backend.Lock{Until: until, Mode: backend.LockGovernance})
			require.NoError(t, err)
			requireLockedUntil(t, be, dir, "a-full", later)
			bl, err = plain.LockOf(ctx, dir, "a-full")
			require.NoError(t, err)
			require.Equal(t, later, bl.Lock.Until)

			// The control: a backup written without a lock goes.
			chainBackup(t, plain, dir, "c-free", "")
			bl, err = plain.LockOf(ctx, dir, "c-free")
			require.NoError(t, err)
			require.True(t, bl.Lock.IsZero())
			require.NoError(t, plain.RemoveBackup(ctx, dir, "c-free"))
			require.Equal(t, []string{"a-full", "b-delta"}, listed(t, plain, dir))
		})
	}
}

// TestLockedObjectsResistTheStoresOwnAPI: on versitygw, which enforces S3
// Object Lock, a locked backup's part cannot be deleted by version, or
// shortened in governance mode without a bypass, by a client that goes
// around our code.
func TestLockedObjectsResistTheStoresOwnAPI(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.StartS3ObjectLock(t)
	srv.Setenv(t)
	cfg := srv.Config
	cfg.LockFor, cfg.LockMode = 24*time.Hour, backend.LockGovernance
	s := newStorage(t, cfg)
	chainBackup(t, s, "ks/0", "a-full", "")
	key := aws.String(cfg.S3.Prefix + "/ks/0/a-full/f.part-00000001")
	bucket := aws.String(splitstoragetest.Bucket)
	v, err := srv.S3Client.ListObjectVersions(ctx, &awss3.ListObjectVersionsInput{Bucket: bucket, Prefix: key})
	require.NoError(t, err)
	require.Len(t, v.Versions, 1)
	_, err = srv.S3Client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: bucket, Key: key, VersionId: v.Versions[0].VersionId})
	require.Error(t, err, "the store deleted a locked part by version")
	r, err := srv.S3Client.GetObjectRetention(ctx, &awss3.GetObjectRetentionInput{Bucket: bucket, Key: key})
	require.NoError(t, err)
	_, err = srv.S3Client.PutObjectRetention(ctx, &awss3.PutObjectRetentionInput{Bucket: bucket, Key: key,
		Retention: &s3types.ObjectLockRetention{Mode: r.Retention.Mode, RetainUntilDate: aws.Time(time.Now().Add(time.Hour))}})
	require.Error(t, err, "the store shortened a governance lock without a bypass")
}

// TestALockIsJudgedByTheStoresClock: whether a lock still holds is judged
// by the store's clock as its answers give it, never this host's: with
// this host's clock three days ahead, a backup locked for two days is
// still refused to removal as locked, and a delta written on it is locked
// with it (capped at its base's lock), where this host's clock took the
// base's lock for expired and left the delta unlocked. A new lock's date
// is checked against the store's clock too. S3 with Object Lock
// (versitygw), whose answers carry their time.
func TestALockIsJudgedByTheStoresClock(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.StartS3ObjectLock(t)
	srv.Setenv(t)
	plain, locking, cfg, be := lockingPair(t, srv)
	dir := "ks/0"
	chainBackup(t, locking, dir, "a-full", "")
	bl, err := locking.LockOf(ctx, dir, "a-full")
	require.NoError(t, err)
	until := bl.Lock.Until

	splitstorage.SetHostClockOffForTest(t, 72*time.Hour)
	err = plain.RemoveBackup(ctx, dir, "a-full")
	require.ErrorIs(t, err, backend.ErrLocked)
	require.ErrorContains(t, err, "not removing backup ks/0/a-full: it is locked until "+until.Format(time.RFC3339)+" (governance)")
	cfg.LockFor = 96 * time.Hour
	chainBackup(t, newStorage(t, cfg), dir, "b-delta", "a-full")
	requireLockedUntil(t, be, dir, "b-delta", until)

	// A lock's date is checked against the store's clock too: a day from
	// the store's now is taken; a day gone is refused, saying the store's now.
	tomorrow := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	res, err := plain.Lock(ctx, dir, "a-full", backend.Lock{Until: tomorrow.Add(96 * time.Hour), Mode: backend.LockGovernance})
	require.NoError(t, err)
	require.Equal(t, tomorrow.Add(96*time.Hour), res.Lock.Until)
	splitstorage.SetHostClockOffForTest(t, -72*time.Hour)
	yesterday := time.Now().Add(-24 * time.Hour).UTC().Truncate(time.Second)
	_, err = plain.Lock(ctx, dir, "a-full", backend.Lock{Until: yesterday, Mode: backend.LockGovernance})
	require.ErrorContains(t, err, "split storage: a lock until "+yesterday.Format(time.RFC3339)+" keeps nothing: the date has passed "+
		"(the store's clock says ")
	said, perr := time.Parse(time.RFC3339, strings.TrimSuffix(strings.SplitAfter(err.Error(), "the store's clock says ")[1], ")"))
	require.NoError(t, perr, err.Error())
	assert.WithinDuration(t, time.Now(), said, time.Minute, "the store's clock, not this host's three days behind")
}
