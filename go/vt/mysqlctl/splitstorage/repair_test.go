package splitstorage_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestRepairBackup: parts damaged in place (a flipped byte, one missing,
// one cut short) are replaced by the copy's, each checked against the
// backup's own index, and the backup verifies and reads back the same bytes
// after; a part damaged in the copy too is refused, naming file and part; a
// damaged index is no part to repair: nothing is changed; a backup that
// verifies reads nothing from the copy.
func TestRepairBackup(t *testing.T) {
	ctx := context.Background()
	srcSrv, dstSrv := splitstoragetest.Local(t), splitstoragetest.Local(t)
	src, dst := newStorage(t, srcSrv.Config), newStorage(t, dstSrv.Config)
	dir, name := "ks/0", "2026-11-23.120000.zone1-0000000100"
	writeBackup(ctx, t, src, dir, name, 18<<20, 300)
	_, err := src.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{})
	require.NoError(t, err)
	want, err := readAll(ctx, findBackup(t, src, dir, name), "f0")
	require.NoError(t, err)

	rep, err := src.RepairBackup(ctx, dst, dir, name)
	require.NoError(t, err)
	assert.Empty(t, rep.Damaged, "a backup that verifies needs no repair")

	parts := partFiles(t, filepath.Join(srcSrv.Dir, dir, name))
	require.GreaterOrEqual(t, len(parts), 4, "f0 spans several 4 MiB parts")
	flipByte(t, parts[0])
	require.NoError(t, os.Remove(parts[1]))
	require.NoError(t, os.Truncate(parts[2], 10))
	rep, err = src.RepairBackup(ctx, dst, dir, name)
	require.NoError(t, err)
	assert.Len(t, rep.Damaged, 3)
	assert.Len(t, rep.Repaired, 3)
	sh := findBackup(t, src, dir, name).(*splitstorage.Handle)
	_, err = sh.VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err)
	got, err := readAll(ctx, sh, "f0")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "the repaired file reads back the same bytes")

	// The same part damaged in both: refused, naming it; the copy's bytes never land.
	flipByte(t, parts[3])
	dstPart := strings.Replace(parts[3], srcSrv.Dir, dstSrv.Dir, 1)
	flipByte(t, dstPart)
	_, err = src.RepairBackup(ctx, dst, dir, name)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "file f0, part 4")
	assert.Contains(t, err.Error(), "the copy's part is damaged too: expected crc32c")

	// A damaged index is not a part: nothing is changed.
	index := filepath.Join(srcSrv.Dir, dir, name, "f1.index")
	require.NoError(t, os.WriteFile(index, []byte("{"), 0o644))
	before, err := os.ReadFile(parts[3])
	require.NoError(t, err)
	_, err = src.RepairBackup(ctx, dst, dir, name)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "damage that a copy's parts cannot repair (only parts are repaired); nothing was changed")
	after, err := os.ReadFile(parts[3])
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

// partFiles lists the part objects under dir, sorted.
func partFiles(t *testing.T, dir string) []string {
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".part-") {
			out = append(out, p)
		}
		return err
	}))
	sort.Strings(out)
	return out
}

func flipByte(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// TestARepairThatCannotReadJudgesNothing: a backup whose parts the store
// answers with 500 at every attempt (S3 behind the fault proxy) is no
// damage to repair: the error is could-not-be-read, Damaged is empty,
// nothing is read from the copy or changed. A damaged part whose copy
// cannot be read stays damaged, Damaged names it, and the error is
// could-not-be-read; once the copy answers, the repair goes through.
func TestARepairThatCannotReadJudgesNothing(t *testing.T) {
	ctx := context.Background()
	src, p, _ := proxied(t, "s3", func(c *splitstorage.Config) {
		c.RetryMaxAttempts, c.RetryInitialBackoff, c.RetryMaxBackoff = 2, 10*time.Millisecond, 20*time.Millisecond
	})
	local := splitstoragetest.Local(t)
	dst := newStorage(t, local.Config)
	bh := storedFile(t, src, 3<<20)
	dir, name := "ks/0", bh.Name()
	_, err := src.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{})
	require.NoError(t, err)

	p.FailMatching("GET", "part-", splitstoragetest.InternalError, 1000)
	rep, err := src.RepairBackup(ctx, dst, dir, name)
	require.ErrorContains(t, err, "could not be read, so what needs repair is not known; nothing was changed")
	assert.True(t, unreadable.Is(err), "%v", err)
	assert.Empty(t, rep.Damaged)
	assert.Empty(t, rep.Repaired)
	p.ClearMatching()

	// The other way round: the copy, on local disk, behind a store that
	// fails (the source S3 damaged, the copy's parts out of reach).
	back := newStorage(t, local.Config)
	parts := partFiles(t, filepath.Join(local.Dir, dir, name))
	require.NotEmpty(t, parts)
	flipByte(t, parts[0])
	p.FailMatching("GET", "part-", splitstoragetest.InternalError, 1000)
	rep, err = back.RepairBackup(ctx, src, dir, name)
	require.Error(t, err)
	assert.True(t, unreadable.Is(err), "%v", err)
	require.Len(t, rep.Damaged, 1)
	assert.Contains(t, rep.Damaged[0].Error(), "checksum mismatch")
	assert.Empty(t, rep.Repaired)
	p.ClearMatching()
	rep, err = back.RepairBackup(ctx, src, dir, name)
	require.NoError(t, err)
	assert.Len(t, rep.Repaired, 1)
}
