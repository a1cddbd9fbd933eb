package fifobackupengine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// plantedRows inserts rows holding a distinctive value and returns it.
func plantedRows(t *testing.T, f *fixture) string {
	value := "PLANTED" + fmt.Sprint(os.Getpid()) + "ROWVALUE"
	f.srv.Exec(t, "CREATE TABLE sample.planted (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL) ENGINE=InnoDB")
	for i := range 200 {
		f.srv.Exec(t, "INSERT INTO sample.planted VALUES (?, ?)", i, fmt.Sprintf("%s-%04d", value, i))
	}
	mariadbtest.Checkpoint(t, f.srv.DB())
	return value
}

// filesHolding lists the files under root that contain value.
func filesHolding(t *testing.T, root, value string) []string {
	var found []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil && bytes.Contains(b, []byte(value)) {
			found = append(found, path)
		}
		return err
	}))
	return found
}

// encryptedStorage registers the fixture's split storage on srv, with 1 MiB
// parts (several per lane) and the key file (empty: none).
func (f *fixture) encryptedStorage(t *testing.T, srv *splitstoragetest.Server, keyFile string) {
	cfg := srv.Config
	cfg.PartSize = 1 << 20
	cfg.EncryptionKeyFile = keyFile
	f.useSplitConfig(t, cfg, srv.Dir)
}

// TestEncryptedBackupRealMariaDB: with a key file, no object of a fifo
// backup holds a row planted in a table (the same backup without the key
// does: the check can fail), and the backup restores to the exact data. Keys
// that cannot open it fail before mysqld is touched; damaged, swapped or
// truncated parts fail the restore naming backup, lane and part, and mysqld
// is not started on what was extracted.
func TestEncryptedBackupRealMariaDB(t *testing.T) {
	for _, kind := range splitstoragetest.LocalAndRemote() {
		t.Run(kind, func(t *testing.T) { runEncryptedBackup(t, kind) })
	}
}

func runEncryptedBackup(t *testing.T, kind string) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 20, BigTableBytes: 8 << 20})
	// Uncompressed lanes: the rows are there to be found (zstd's Huffman
	// coded literals would hide them without encryption).
	useEngine(t, testConfig(2, SourceStdout, CompressionConfig{}))
	value := plantedRows(t, f)

	clear := splitstoragetest.Start(t, kind)
	clear.Setenv(t)
	f.encryptedStorage(t, clear, "")
	require.NoError(t, f.backup(t, nil))
	require.NotEmpty(t, filesHolding(t, clear.Dir, value), "a backup in the clear holds the planted rows")

	srv := splitstoragetest.Start(t, kind)
	keys := splitstoragetest.KeyFile(t, "k1")
	f.encryptedStorage(t, srv, keys)
	require.NoError(t, f.backup(t, nil))
	assert.Empty(t, filesHolding(t, srv.Dir, value), "no object of the encrypted backup holds a planted row")
	m := f.latestManifest(t)
	want := mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes")

	// Keys that do not open it: Vitess reads no MANIFEST and says none is
	// complete (not ErrNoBackup, on which a tablet would start empty); mysqld
	// keeps serving. The MANIFEST's error names backup and key ID.
	f.srv.Exec(t, "CREATE TABLE sample.after_restore (id INT PRIMARY KEY)")
	for _, k := range []struct{ keyFile, want string }{
		{"", `is encrypted (key ID "k1"): set --split-storage-encryption-key-file`},
		{splitstoragetest.KeyFile(t, "k1"), `does not unwrap with key ID "k1"`},
		{splitstoragetest.KeyFile(t, "k2"), `key ID "k1", which the key file`},
	} {
		f.encryptedStorage(t, srv, k.keyFile)
		_, err := ReadManifest(context.Background(), f.backupHandles(t)[0])
		require.Error(t, err)
		assert.Contains(t, err.Error(), k.want)
		assert.Contains(t, err.Error(), m.BackupName)
		_, err = f.restore(t, nil)
		assert.True(t, errors.Is(err, mysqlctl.ErrNoCompleteBackup), "%v", err)
		assertUntouched(t, f)
	}

	// Damage that the indexes agree with: each part is checked on its own.
	// (A lane cut short is caught before mysqld is touched: its stored size
	// is not the MANIFEST's; the storage's tests cut frames.)
	f.encryptedStorage(t, srv, keys)
	be, err := splitstorage.OpenBackend(context.Background(), srv.Config)
	require.NoError(t, err)
	dir, lane := testKeyspace+"/"+testShard, m.Lanes[0].File
	idx, err := f.backupHandles(t)[0].(*splitstorage.Handle).Index(context.Background(), lane)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(idx.Parts), 3, "lane %s has enough parts to swap", lane)
	var saved [][]byte
	for _, d := range []struct {
		name   string
		mutate func([][]byte) [][]byte
		want   string
	}{
		{"flipped byte", func(p [][]byte) [][]byte { p[1][1000] ^= 1; return p }, "part 2"},
		{"parts swapped", func(p [][]byte) [][]byte { p[1], p[2] = p[2], p[1]; return p }, "part 2"},
	} {
		t.Run(d.name, func(t *testing.T) {
			splitstoragetest.Tamper(t, be, dir, m.BackupName, lane, func(p [][]byte) [][]byte {
				saved = saved[:0]
				for _, b := range p {
					saved = append(saved, bytes.Clone(b))
				}
				return d.mutate(p)
			})
			_, err := f.restore(t, nil)
			require.Error(t, err)
			for _, w := range []string{"backup " + dir + "/" + m.BackupName, "file " + lane, d.want, "does not decrypt"} {
				assert.Contains(t, err.Error(), w)
			}
			assert.FileExists(t, filepath.Join(f.tb.Cnf.TabletDir(), mysqlctl.RestoreState), "the restore stays marked as unfinished")
			assert.NoFileExists(t, f.tb.Cnf.SocketFile, "mysqld is not started")
			splitstoragetest.Tamper(t, be, dir, m.BackupName, lane, func([][]byte) [][]byte { return saved })
		})
	}

	t.Run("last frame truncated", func(t *testing.T) {
		splitstoragetest.Tamper(t, be, dir, m.BackupName, lane, func(p [][]byte) [][]byte {
			saved = saved[:0]
			for _, b := range p {
				saved = append(saved, bytes.Clone(b))
			}
			l := p[len(p)-1]
			p[len(p)-1] = l[:len(l)-1]
			return p
		})
		_, err := f.restore(t, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("backup %s is damaged: lane %s has %d bytes stored, its MANIFEST says %d", m.BackupName, lane,
			m.Lanes[0].StoredBytes-1, m.Lanes[0].StoredBytes))
		splitstoragetest.Tamper(t, be, dir, m.BackupName, lane, func([][]byte) [][]byte { return saved })
	})

	// Undamaged again, it restores to the exact data.
	_, err = f.restore(t, nil)
	require.NoError(t, err)
	assert.Equal(t, want, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"))
}
