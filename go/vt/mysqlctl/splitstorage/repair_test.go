package splitstorage_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
