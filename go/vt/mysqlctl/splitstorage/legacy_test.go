package splitstorage_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// legacyBackup writes a backup as Vitess's file storage lays it out (its
// own StartBackup/AddFile/EndBackup), with an xtrabackup engine MANIFEST.
func legacyBackup(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	bh, err := backupstorage.BackupStorageMap["file"].StartBackup(ctx, "ks/0", name)
	require.NoError(t, err)
	for file, body := range map[string]string{"MANIFEST": `{"BackupMethod":"xtrabackup","BackupName":"` + name + `"}`, "backup.xbstream": "data"} {
		w, err := bh.AddFile(ctx, file, int64(len(body)))
		require.NoError(t, err)
		_, err = io.WriteString(w, body)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	require.NoError(t, bh.EndBackup(ctx))
}

// TestLegacyStorageListedBeside: with --split-storage-legacy=file, the file
// storage's backups are listed beside the split storage's, sorted by name,
// each its own storage's handle (read as it was), marked with its origin;
// removing one removes it from the file storage; new backups go to the
// split storage only; the split storage named as its own legacy, or a
// storage the binary does not link, is refused naming the flag.
func TestLegacyStorageListedBeside(t *testing.T) {
	ctx := context.Background()
	legacyRoot := t.TempDir()
	old := filebackupstorage.FileBackupStorageRoot
	filebackupstorage.FileBackupStorageRoot = legacyRoot
	t.Cleanup(func() { filebackupstorage.FileBackupStorageRoot = old })
	legacyBackup(t, "2026-11-01.000000.zone1-0000000100")
	legacyBackup(t, "2026-11-03.000000.zone1-0000000100")

	cfg := splitstorage.DefaultConfig()
	cfg.File.Root, cfg.PartSize, cfg.Legacy = t.TempDir(), splitstorage.MinPartSize, "file"
	s, err := splitstorage.New(cfg)
	require.NoError(t, err)
	defer s.Close()
	splitstoragetest.Plant(t, s, "ks/0", "2026-11-02.000000.zone1-0000000100", "{}")

	bhs, err := s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	var names, origins []string
	for _, b := range bhs {
		names, origins = append(names, b.Name()), append(origins, s.Origin(b))
	}
	assert.Equal(t, []string{"2026-11-01.000000.zone1-0000000100", "2026-11-02.000000.zone1-0000000100", "2026-11-03.000000.zone1-0000000100"}, names)
	assert.Equal(t, []string{"file", "split", "file"}, origins)
	r, err := bhs[0].ReadFile(ctx, "backup.xbstream")
	require.NoError(t, err)
	data, _ := io.ReadAll(r)
	r.Close()
	assert.Equal(t, "data", string(data), "read through the file storage's own handle")
	_, err = os.Stat(filepath.Join(cfg.File.Root, "ks", "0", "2026-11-01.000000.zone1-0000000100"))
	assert.True(t, os.IsNotExist(err), "nothing of the legacy backup is written to the split storage")

	require.NoError(t, s.RemoveBackup(ctx, "ks/0", "2026-11-01.000000.zone1-0000000100"))
	assert.NoDirExists(t, filepath.Join(legacyRoot, "ks", "0", "2026-11-01.000000.zone1-0000000100"), "removed from the file storage")
	bhs, err = s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	assert.Len(t, bhs, 2)

	// A legacy storage that cannot list fails the listing, naming it.
	filebackupstorage.FileBackupStorageRoot = filepath.Join(legacyRoot, "ks", "0", "2026-11-03.000000.zone1-0000000100", "MANIFEST")
	_, err = s.ListBackups(ctx, "ks/0")
	assert.ErrorContains(t, err, "split storage: listing the backups of the legacy file storage (--split-storage-legacy) in ks/0")
	filebackupstorage.FileBackupStorageRoot = legacyRoot

	for _, bad := range []string{"split", "tape"} {
		c := cfg
		c.Legacy = bad
		_, err := splitstorage.New(c)
		assert.ErrorContains(t, err, `invalid value "`+bad+`" for --split-storage-legacy: allowed values are empty, or one of the Vitess storages this `+
			"binary links: ")
	}
}
