package splitstorage_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestReleaseVerifiesFirst: a quarantined backup whose part was damaged
// stays quarantined on release (ErrDamaged, naming the part); once the part
// is whole again, release puts it back in the list.
func TestReleaseVerifiesFirst(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	s := newStorage(t, srv.Config)
	dir, name := "ks/0", "2026-11-23.120000.zone1-0000000100"
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	require.NoError(t, writeFile(ctx, bh, "f0", newGen(3, 3<<20), rand.New(rand.NewPCG(1, 3))))
	require.NoError(t, bh.EndBackup(ctx))
	require.NoError(t, findBackup(t, s, dir, name).(*splitstorage.Handle).Quarantine(ctx, "test restore failed: checksum mismatch"))

	part := firstPart(t, srv.Dir)
	good, err := os.ReadFile(part)
	require.NoError(t, err)
	bad := append([]byte(nil), good...)
	bad[len(bad)/3] ^= 0xff
	require.NoError(t, os.WriteFile(part, bad, 0o644))

	_, err = s.Release(ctx, dir, name)
	require.Error(t, err)
	assert.True(t, errors.Is(err, splitstorage.ErrDamaged), "%v", err)
	assert.Contains(t, err.Error(), "stays quarantined (test restore failed: checksum mismatch)")
	assert.Contains(t, err.Error(), filepath.Base(part))
	bhs, err := s.ListBackups(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, bhs, "a damaged backup is not released")

	require.NoError(t, os.WriteFile(part, good, 0o644))
	_, err = s.Release(ctx, dir, name)
	require.NoError(t, err)
	bhs, err = s.ListBackups(ctx, dir)
	require.NoError(t, err)
	assert.Len(t, bhs, 1)
}

// firstPart is the path of the first part object under dir, in walk order.
func firstPart(t *testing.T, dir string) string {
	t.Helper()
	var part string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && part == "" && strings.Contains(d.Name(), ".part-") {
			part = p
		}
		return err
	}))
	require.NotEmpty(t, part, "a part under %s", dir)
	return part
}

// TestAReleaseThatCannotReadJudgesNothing: a quarantined backup whose parts
// the store answers with 500 at every attempt (S3 behind the fault proxy)
// stays quarantined, and the error is could-not-be-read, not ErrDamaged;
// once the store answers, release puts it back.
func TestAReleaseThatCannotReadJudgesNothing(t *testing.T) {
	ctx := context.Background()
	s, p, _ := proxied(t, "s3", func(c *splitstorage.Config) {
		c.RetryMaxAttempts, c.RetryInitialBackoff, c.RetryMaxBackoff = 2, 10*time.Millisecond, 20*time.Millisecond
	})
	bh := storedFile(t, s, 3<<20)
	dir, name := "ks/0", bh.Name()
	require.NoError(t, bh.Quarantine(ctx, "test restore failed: planted"))

	p.FailMatching("GET", "part-", splitstoragetest.InternalError, 1000)
	_, err := s.Release(ctx, dir, name)
	require.ErrorContains(t, err, "stays quarantined (test restore failed: planted): 1 of its objects could not be read, so it is not known whether it is whole")
	assert.True(t, unreadable.Is(err), "%v", err)
	assert.False(t, errors.Is(err, splitstorage.ErrDamaged), "%v", err)
	bhs, err := s.ListBackups(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, bhs)

	p.ClearMatching()
	_, err = s.Release(ctx, dir, name)
	require.NoError(t, err)
	bhs, err = s.ListBackups(ctx, dir)
	require.NoError(t, err)
	assert.Len(t, bhs, 1)
}
