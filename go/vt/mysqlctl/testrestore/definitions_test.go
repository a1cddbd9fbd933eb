package testrestore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDictionaryCopy: on MySQL 8.0.30+ the definitions server cannot start
// --innodb-read-only on a prepared subset (PXB's prepare leaves #innodb_redo
// empty: xtrabackup.cc xtrabackup_close_temp_log; MySQL refuses a read-only
// start without redo files: mysql-test suite/innodb/r/log_read_only.result,
// "Scenario 3"). It starts writable on a copy of the dictionary alone: the
// exported tablespaces are neither copied nor touched.
func TestDictionaryCopy(t *testing.T) {
	restored := t.TempDir()
	files := map[string]string{
		"ibdata1": "sys", "mysql.ibd": "dd", "undo_001": "u1", "undo_002": "u2", "u3.ibu": "u3",
		"backup-my.cnf": perconaBackupCnf, "xtrabackup_checkpoints": "x", "ts_gen.ibd": "general",
		"shop/orders.ibd": "exported", "shop/orders.cfg": "cfg", "shop/cards.cfp": "key", "sys/sys_config.ibd": "s",
	}
	for name, body := range files {
		p := filepath.Join(restored, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o640))
	}
	require.NoError(t, os.Mkdir(filepath.Join(restored, "#innodb_redo"), 0o750))
	dd, err := dictionaryCopy(restored, filepath.Join(t.TempDir(), "dictionary"))
	require.NoError(t, err)
	for _, name := range []string{"ibdata1", "mysql.ibd", "undo_001", "undo_002", "u3.ibu", "backup-my.cnf"} {
		b, err := os.ReadFile(filepath.Join(dd, name))
		require.NoError(t, err, name)
		assert.Equal(t, files[name], string(b), name)
	}
	for _, name := range []string{"xtrabackup_checkpoints", "ts_gen.ibd", "shop/orders.ibd", "shop/orders.cfg", "shop/cards.cfp", "sys/sys_config.ibd"} {
		assert.NoFileExists(t, filepath.Join(dd, name), "not copied: %s", name)
	}
	for _, d := range []string{"shop", "sys", "#innodb_redo"} {
		assert.DirExists(t, filepath.Join(dd, d))
	}
	left, _ := os.ReadDir(filepath.Join(dd, "#innodb_redo"))
	assert.Empty(t, left, "the server creates its redo")
	b, err := os.ReadFile(filepath.Join(restored, "shop/orders.ibd"))
	require.NoError(t, err)
	assert.Equal(t, "exported", string(b))
}
