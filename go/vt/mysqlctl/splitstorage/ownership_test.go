package splitstorage_test

import (
	"context"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// runOnlyProvenBackupsAreOurs: directories whose names look like the
// storage's (an index, a part, a '.'-leading marker that is not a start
// marker of this storage) are not its backups: never listed as incomplete,
// RemoveBackup refuses them (ErrNotOurs) and leaves every object. A backup
// it started is listed, aged by its objects' write time as the store
// reports it, and removed.
func runOnlyProvenBackupsAreOurs(t *testing.T, s *splitstorage.Storage) {
	ctx := context.Background()
	dir := "own/0"
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	foreign := map[string]string{
		dir + "/bin-logs/vt-0000000101-bin.000001": "binlog", dir + "/bin-logs/vt-0000000101-bin.index": "./vt-0000000101-bin.000001\n",
		dir + "/vitess-file/MANIFEST": `{"BackupMethod":"fifo"}`, dir + "/vitess-file/lanes.index": "{}",
		dir + "/named-like-parts/f.part-00000001": "bytes", dir + "/named-like-parts/f.index": "{}",
		dir + "/another-tool/.started": `{"token":"x","started":"2026-01-01T00:00:00Z"}`, dir + "/another-tool/data": "x",
		dir + "/another-storage/.started": `{"storage":"restic","token":"00112233445566778899aabbccddeeff","started":"2026-01-01T00:00:00Z","part_size":1}`,
	}
	for k, v := range foreign {
		require.NoError(t, be.Put(ctx, k, strings.NewReader(v), int64(len(v)), backend.PutOptions{CRC32C: crc32.Checksum([]byte(v), crc32.MakeTable(crc32.Castagnoli))}))
	}
	before := time.Now()
	_, err = s.StartBackup(ctx, dir, "2026-02-01.000000.zone1-0000000100")
	require.NoError(t, err)

	inc, err := s.ListIncomplete(ctx, dir)
	require.NoError(t, err)
	require.Len(t, inc, 1)
	assert.Equal(t, "2026-02-01.000000.zone1-0000000100", inc[0].Name)
	assert.WithinDuration(t, before, inc[0].LastWrite, time.Minute, "its age is the store's write time")
	assert.WithinDuration(t, before, inc[0].Started, time.Minute)

	for _, name := range []string{"bin-logs", "vitess-file", "named-like-parts", "another-tool", "another-storage"} {
		err := s.RemoveBackup(ctx, dir, name)
		assert.True(t, errors.Is(err, splitstorage.ErrNotOurs), "%s: %v", name, err)
		err = s.CheckOwn(ctx, dir, name)
		assert.True(t, errors.Is(err, splitstorage.ErrNotOurs), "%s: %v", name, err)
		assert.ErrorContains(t, err, "not a backup the split storage wrote: it holds ", name)
	}
	assert.EqualError(t, s.CheckOwn(ctx, dir, "bin-logs"), "not a backup the split storage wrote: it holds 2 objects (vt-0000000101-bin.000001, "+
		"vt-0000000101-bin.index) and no start or completion marker of the split storage's: another tool's backup (a Vitess storage's is listed "+
		"with --split-storage-legacy) or put there by hand; it is left as it is")
	assert.NoError(t, s.CheckOwn(ctx, dir, "2026-02-01.000000.zone1-0000000100"), "its own")
	assert.NoError(t, s.CheckOwn(ctx, dir, "nothing-there"))
	// Nor is another storage's backup of a name written over: its files
	// would go with a later removal of ours.
	_, err = s.StartBackup(ctx, dir, "vitess-file")
	assert.True(t, errors.Is(err, splitstorage.ErrNotOurs), "%v", err)
	assert.ErrorContains(t, err, "own/0/vitess-file in ")
	assert.ErrorContains(t, err, " holds 2 objects the split storage did not write (MANIFEST, ...): another storage's backup of that name; "+
		"nothing was written")
	for k := range foreign {
		_, err := be.Stat(ctx, k)
		assert.NoError(t, err, "%s is left alone", k)
	}
	_, err = be.Stat(ctx, dir+"/vitess-file/.started")
	assert.ErrorIs(t, err, splitstorage.ErrNotExist, "no start marker written there")
	require.NoError(t, s.RemoveBackup(ctx, dir, "2026-02-01.000000.zone1-0000000100"))
	inc, err = s.ListIncomplete(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, inc)
	dirs, err := s.ListBackupDirs(ctx)
	require.NoError(t, err)
	assert.NotContains(t, dirs, dir, "a shard of foreign directories is not one of the storage's")
	for k := range foreign {
		require.NoError(t, be.Delete(ctx, k))
	}
}

// runObjectsPutInABackupAreLeftAlone: objects put in a backup's directory
// by someone else (an operator's notes, a file manager's '.'-file, a
// folder) are not the backup's: VerifyParts notes them and finds the
// backup good, a copy does not carry them, and RemoveBackup removes the
// backup and leaves them, byte for byte; then the directory is no backup
// of the storage's, and a second removal refuses it. A left-over part of
// the storage's own kind goes with the backup.
func runObjectsPutInABackupAreLeftAlone(t *testing.T, s *splitstorage.Storage) {
	ctx := context.Background()
	dir, name := "foreign/0", "2026-02-02.000000.zone1-0000000100"
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	require.NoError(t, writeFile(ctx, bh, "f", newGen(7, 2<<20+9), rand.New(rand.NewPCG(1, 3))))
	require.NoError(t, bh.EndBackup(ctx))
	prefix := dir + "/" + name + "/"
	put := func(key, body string) {
		require.NoError(t, be.Put(ctx, key, strings.NewReader(body), int64(len(body)),
			backend.PutOptions{CRC32C: crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))}))
	}
	foreign := map[string]string{prefix + "NOTES.txt": "restored fine on 2026-02-03\n", prefix + ".DS_Store": "finder", prefix + "notes/today.txt": "x"}
	for k, v := range foreign {
		put(k, v)
	}
	leftOver := prefix + "f.part-00000099"
	put(leftOver, "an old part")

	rep, err := findBackup(t, s, dir, name).(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err, "objects the backup does not list are no damage of it")
	assert.Equal(t, []string{prefix + ".DS_Store", prefix + "NOTES.txt", leftOver, prefix + "notes/today.txt"}, rep.Unlisted)

	dst := newStorage(t, splitstoragetest.Local(t).Config)
	_, err = s.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{})
	require.NoError(t, err)
	dbe, err := dst.RawBackendForTest(ctx)
	require.NoError(t, err)
	for k := range foreign {
		_, err := dbe.Stat(ctx, k)
		assert.ErrorIs(t, err, splitstorage.ErrNotExist, "%s is not copied", k)
	}

	require.NoError(t, s.RemoveBackup(ctx, dir, name))
	assert.NotContains(t, listed(t, s, dir), name)
	for _, k := range []string{leftOver, prefix + "f.index", prefix + ".started", prefix + ".complete"} {
		_, err := be.Stat(ctx, k)
		assert.ErrorIs(t, err, splitstorage.ErrNotExist, "%s went with the backup", k)
	}
	for k, v := range foreign {
		r, err := be.Get(ctx, k, 0, -1)
		require.NoError(t, err, "%s is left alone", k)
		b, err := io.ReadAll(r)
		r.Close()
		require.NoError(t, err)
		assert.Equal(t, v, string(b), k)
	}
	err = s.RemoveBackup(ctx, dir, name)
	assert.True(t, errors.Is(err, splitstorage.ErrNotOurs), "what is left is not a backup of the storage's: %v", err)
	for k := range foreign {
		require.NoError(t, be.Delete(ctx, k))
	}
}
