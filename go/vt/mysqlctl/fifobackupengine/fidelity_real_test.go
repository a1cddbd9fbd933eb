package fifobackupengine

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// TestBackupsAreWhatTheySayRealMariaDB: with the real mariabackup, whatever
// tells the tool to compress or to copy only some databases (a line in the
// tablet's my.cnf, an option the engine cannot see), the backup fails naming
// the cause and is not listed; a database named like the tool's metadata is
// restored.
func TestBackupsAreWhatTheySayRealMariaDB(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 3})
	f.srv.Exec(t, "CREATE DATABASE other")
	f.srv.Exec(t, "CREATE TABLE other.kept (id INT PRIMARY KEY) ENGINE=InnoDB")
	f.srv.Exec(t, "INSERT INTO other.kept VALUES (1), (2), (3)")
	cfg := testConfig(2, SourceStdout, zstdConfig())
	useEngine(t, cfg)
	cnf, err := os.ReadFile(f.tb.Cnf.Path)
	require.NoError(t, err)
	withCnf := func(t *testing.T, extra string) {
		require.NoError(t, os.WriteFile(f.tb.Cnf.Path, append(append([]byte{}, cnf...), extra...), 0o644))
		t.Cleanup(func() { require.NoError(t, os.WriteFile(f.tb.Cnf.Path, cnf, 0o644)) })
	}
	refused := func(t *testing.T, want ...string) {
		before := len(f.listBackups(t))
		err := f.backup(t, nil)
		require.Error(t, err)
		for _, w := range want {
			assert.Contains(t, err.Error(), w)
		}
		assert.Len(t, f.listBackups(t), before, "a refused backup is not listed")
	}

	t.Run("compress in the tool's group of my.cnf", func(t *testing.T) {
		withCnf(t, "\n[mariabackup]\ncompress\n")
		refused(t, f.tb.Cnf.Path+" line ", "sets [mariabackup] compress", "never decompresses")
	})
	t.Run("databases in [client] of my.cnf", func(t *testing.T) {
		withCnf(t, "\n[client]\ndatabases = sample\n")
		refused(t, "sets [client] databases", "listed as a full one")
	})
	t.Run("compress from a source the engine cannot read", func(t *testing.T) {
		c := cfg
		c.ToolPath = standinPath
		useEngine(t, c)
		t.Setenv("XTRABACKUP_STANDIN_FLAVOR", "mariabackup")
		t.Setenv("XTRABACKUP_STANDIN_EXTRA_ARGS", "--compress")
		refused(t, "the backup tool wrote ", ".qp, a file it compressed or encrypted itself")
	})
	t.Run("a database left out by a source the engine cannot read", func(t *testing.T) {
		c := cfg
		c.ToolPath = standinPath
		useEngine(t, c)
		t.Setenv("XTRABACKUP_STANDIN_FLAVOR", "mariabackup")
		t.Setenv("XTRABACKUP_STANDIN_EXTRA_ARGS", "--databases-exclude=other")
		refused(t, "the backup tool says its backup is partial")
	})
	t.Run("a database silently missing from the stream", func(t *testing.T) {
		c := cfg
		c.ToolPath = standinPath
		useEngine(t, c)
		t.Setenv("XTRABACKUP_STANDIN_FLAVOR", "mariabackup")
		t.Setenv("XTRABACKUP_STANDIN_DROP", "other/")
		refused(t, "lacks 1 tables the server had from the start of the backup to its end: other.kept (other/kept.frm)")
	})
	t.Run("a database named like the tool's metadata is restored", func(t *testing.T) {
		useEngine(t, cfg)
		f.srv.Exec(t, "CREATE DATABASE xtrabackup_shop")
		f.srv.Exec(t, "CREATE TABLE xtrabackup_shop.orders (id INT PRIMARY KEY) ENGINE=InnoDB")
		f.srv.Exec(t, "INSERT INTO xtrabackup_shop.orders VALUES (7), (8)")
		f.srv.Exec(t, "CREATE DATABASE mariadb_backup_x")
		f.srv.Exec(t, "CREATE TABLE mariadb_backup_x.t (id INT PRIMARY KEY) ENGINE=Aria")
		f.srv.Exec(t, "INSERT INTO mariadb_backup_x.t VALUES (9)")
		require.NoError(t, f.backup(t, nil))
		_, err := f.restore(t, nil)
		require.NoError(t, err)
		assert.Equal(t, "2", f.srv.Query(t, "SELECT COUNT(*) FROM xtrabackup_shop.orders"))
		assert.Equal(t, "1", f.srv.Query(t, "SELECT COUNT(*) FROM mariadb_backup_x.t"))
		assert.Equal(t, "3", f.srv.Query(t, "SELECT COUNT(*) FROM other.kept"))
		assert.Equal(t, f.static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"))
	})
}
