package fifobackupengine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// serverKeys is a file_key_management key file's keys, by id.
type serverKeys map[uint32]string

func newServerKeys(ids ...uint32) serverKeys {
	k := serverKeys{}
	for _, id := range ids {
		k[id] = randomHexKey()
	}
	return k
}

func randomHexKey() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// write writes the key file (readable by the mysql user the tablet runs as).
func (k serverKeys) write(t testing.TB, path string) {
	var b strings.Builder
	b.WriteString("# file_key_management keys\n")
	for id, key := range k {
		fmt.Fprintf(&b, "%d;%s\n", id, key)
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

// readableDir is a directory the tablet's mysqld (another user) can read:
// t.TempDir's parent is not.
func readableDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "keys-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	return dir
}

// encryptedServerLines are the [mysqld] lines of a MariaDB that encrypts
// its data at rest with the key file plugin, as an operator writes them:
// the plugin by name, no plugin_dir.
func encryptedServerLines(keyFile string) string {
	return "plugin_load_add=file_key_management\nfile_key_management_filename=" + keyFile + "\n" +
		"innodb_encrypt_tables=ON\ninnodb_encrypt_log=ON\ninnodb_encrypt_temporary_tables=ON\nencrypt_binlog=ON\n"
}

// TestServerEncryptedRealMariaDB: a tablet whose MariaDB encrypts its data
// at rest (file_key_management, tables, redo log, temporary tables, binary
// log; a table under a second key id) backs up under writes and restores
// through Vitess's mysqlctl.Restore with the tablet's own option file, a
// full and then a delta on it (each delta's prepare); with the key file
// moved, as on another host, the host's option file says where. The MANIFEST
// records the plugin and the key ids with check values, no key. A key file
// without a key id, with another key under one, or missing fails before
// mysqld is touched, naming the key id and the option to set.
func TestServerEncryptedRealMariaDB(t *testing.T) {
	keyFile := filepath.Join(readableDir(t), "keys.txt")
	keys := newServerKeys(1, 2)
	keys.write(t, keyFile)
	f := newFixtureWith(t, mariadbtest.Options{Tables: 200, RowsPerTable: 5, BigTableBytes: 4 << 20}, encryptedServerLines(keyFile))
	f.srv.Exec(t, "CREATE TABLE sample.secret2 (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB ENCRYPTED=YES ENCRYPTION_KEY_ID=2")
	f.srv.Exec(t, "INSERT INTO sample.secret2 SELECT seq, CONCAT('row ', seq) FROM sample.seq_1_to_500")
	f.static = mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes")

	cfg := incrementalConfig()
	full := f.roundTrip(t, cfg)
	m := f.latestManifest(t)
	require.NotNil(t, m.ServerEncryption, "the MANIFEST records the server's encryption")
	enc := m.ServerEncryption
	assert.Equal(t, fileKeyManagement, enc.Plugin)
	assert.Equal(t, []uint32{1, 2}, enc.KeyIDs)
	assert.Equal(t, keyFile, enc.KeyFile)
	assert.True(t, enc.EncryptLog)
	assert.Len(t, enc.KeyChecks, 2)
	doc, err := json.Marshal(m)
	require.NoError(t, err)
	for id, key := range keys {
		assert.NotContains(t, strings.ToLower(string(doc)), key, "key %d in the MANIFEST", id)
	}

	delta := f.roundTrip(t, cfg)
	assert.Equal(t, full.BackupName, f.latestManifest(t).BaseBackup, "the second backup is a delta on the first: its prepare applies it")
	require.NotNil(t, f.latestManifest(t).ServerEncryption)

	// The keys elsewhere, as on another host: the tablet's option file says
	// where; backup-my.cnf's path (the source's) is gone.
	moved := filepath.Join(readableDir(t), "moved-keys.txt")
	keys.write(t, moved)
	require.NoError(t, os.Remove(keyFile))
	for _, p := range []string{os.Getenv("EXTRA_MY_CNF"), f.tb.Cnf.Path} {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, []byte(strings.ReplaceAll(string(b), keyFile, moved)), 0o644))
	}
	restored, err := f.restore(t, nil)
	require.NoError(t, err, "the restoring host's key file, named by its option file")
	assert.Equal(t, delta.BackupName, restored.BackupName)
	assert.Equal(t, f.static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"))

	f.srv.Exec(t, "CREATE TABLE sample.after_restore (id INT PRIMARY KEY)")
	for _, tc := range []struct {
		name string
		keys serverKeys
		want string
	}{
		{"key id missing", serverKeys{1: keys[1]}, "key id 2 is not in the key file " + moved},
		{"another key under an id", serverKeys{1: keys[1], 2: randomHexKey()}, "key id 2 in the key file " + moved + " (file_key_management_filename in " +
			f.tb.Cnf.Path + ") is not the key backup"},
		{"key file missing", nil, "the key file (file_key_management_filename in " + f.tb.Cnf.Path + ") cannot be used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(moved)
			if tc.keys != nil {
				tc.keys.write(t, moved)
			}
			_, err := f.restore(t, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "set file_key_management_filename in the [mysqld] group of "+f.tb.Cnf.Path)
			assert.Contains(t, err.Error(), "nothing was downloaded")
			assertUntouched(t, f)
		})
	}
	keys.write(t, moved)
}
