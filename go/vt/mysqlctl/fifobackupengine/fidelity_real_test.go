package fifobackupengine

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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
	t.Run("no-lock in the tool's group of my.cnf", func(t *testing.T) {
		withCnf(t, "\n[mariabackup]\nno_lock\n")
		refused(t, "sets [mariabackup] no-lock", "--slave-info")
	})
	t.Run("databases in [client] of my.cnf", func(t *testing.T) {
		withCnf(t, "\n[client]\ndatabases = sample\n")
		refused(t, "sets [client] databases", "listed as a full one")
	})
	// mariabackup behind the stand-in, told what the engine cannot see: an
	// option from another source, or files left out of its stream.
	for _, tc := range []struct{ name, knob, value, want string }{
		{"compress from a source the engine cannot read", "EXTRA_ARGS", "--compress", ".qp, a file it compressed or encrypted itself"},
		{"a database left out by a source the engine cannot read", "EXTRA_ARGS", "--databases-exclude=other", "the backup tool says its backup is partial"},
		{"a database silently missing from the stream", "DROP", "other/", "lacks 2 tables or databases the server had from the start of the backup to " +
			"its end: database other (other/db.opt), other.kept (other/kept.frm)"},
		{"an empty database silently missing from the stream", "DROP", "emptydb/", "lacks 1 tables or databases the server had from the start of the " +
			"backup to its end: database emptydb (emptydb/db.opt)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.value == "emptydb/" {
				f.srv.Exec(t, "CREATE DATABASE emptydb")
				defer f.srv.Exec(t, "DROP DATABASE emptydb")
			}
			c := cfg
			c.ToolPath = standinPath
			useEngine(t, c)
			t.Setenv("XTRABACKUP_STANDIN_FLAVOR", "mariabackup")
			t.Setenv("XTRABACKUP_STANDIN_"+tc.knob, tc.value)
			refused(t, tc.want)
		})
	}
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

// TestDeltaOf32KiBPagesRealMariaDB: on a server with 32 KiB pages a delta
// is written in clusters of page_size/4 pages (write_filt.cc), one chunk of
// up to 256 MiB each, past the 64 MiB a whole chunk may be: dealt in pieces,
// the incremental backup is taken and its chain restores the data.
func TestDeltaOf32KiBPagesRealMariaDB(t *testing.T) {
	f := newFixtureWith(t, mariadbtest.Options{Tables: 210, RowsPerTable: 3, SkipOtherEngines: true}, "innodb_page_size=32k\n")
	require.Equal(t, "32768", f.srv.Query(t, "SELECT @@innodb_page_size"))
	f.srv.Exec(t, "CREATE TABLE sample.wide (id INT PRIMARY KEY, v VARCHAR(255) NOT NULL) ENGINE=InnoDB")
	f.srv.Exec(t, "INSERT INTO sample.wide SELECT seq, REPEAT(MD5(seq), 7) FROM sample.seq_1_to_400000")
	useEngine(t, incrementalConfig())
	require.NoError(t, f.backup(t, nil))
	// Every page of the ~100 MiB table changes: more than 64 MiB of pages
	// of one tablespace, so at least one delta cluster is a chunk past it.
	f.srv.Exec(t, "UPDATE sample.wide SET v = REPEAT(MD5(id + 1), 7)")
	mariadbtest.Checkpoint(t, f.srv.DB())
	want := mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes")
	require.NoError(t, f.backup(t, nil))
	m := f.latestManifest(t)
	require.True(t, m.isDelta(), "the second backup is a delta")
	_, err := f.restore(t, nil)
	require.NoError(t, err)
	assert.Equal(t, want, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"))
}

// TestAriaLogDirRealMariaDB: a server that keeps Aria's log in
// aria_log_dir_path gets it back there from a restore (mariabackup
// --copy-back does so since MDEV-30968): with it left in the data directory
// the restored server's mysql_upgrade failed on mysql.global_priv.
func TestAriaLogDirRealMariaDB(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 3})
	ctx := context.Background()
	require.NoError(t, f.tb.Mysqld.Shutdown(ctx, f.tb.Cnf, true, time.Minute))
	ariaDir := filepath.Join(filepath.Dir(f.tb.Cnf.DataDir), "aria")
	require.NoError(t, os.Mkdir(ariaDir, 0o750))
	logs, err := filepath.Glob(filepath.Join(f.tb.Cnf.DataDir, "aria_log*"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	for _, l := range logs {
		require.NoError(t, os.Rename(l, filepath.Join(ariaDir, filepath.Base(l))))
	}
	st, err := os.Stat(f.tb.Cnf.DataDir)
	require.NoError(t, err)
	sys := st.Sys().(*syscall.Stat_t)
	require.NoError(t, filepath.Walk(ariaDir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(p, int(sys.Uid), int(sys.Gid))
	}))
	// Where an operator sets it: the extra my.cnf Vitess adds to the one it
	// writes (a restore writes my.cnf again from its templates).
	extra, err := os.OpenFile(os.Getenv("EXTRA_MY_CNF"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = extra.WriteString("\n[mysqld]\naria_log_dir_path = " + ariaDir + "\n")
	require.NoError(t, err)
	require.NoError(t, extra.Close())
	require.NoError(t, f.tb.Mysqld.ReinitConfig(ctx, f.tb.Cnf))
	require.NoError(t, f.tb.Mysqld.Start(ctx, f.tb.Cnf))
	f.srv = mariadbtest.Attach(t, f.tb.Cnf.SocketFile, f.tb.Cnf.DataDir, "vt_dba", "")
	require.Equal(t, ariaDir, filepath.Clean(f.srv.Query(t, "SELECT @@aria_log_dir_path")))
	require.NoFileExists(t, filepath.Join(f.tb.Cnf.DataDir, "aria_log_control"))
	// A new my.cnf starts new binary logs: a write gives the backup a position.
	f.srv.Exec(t, "INSERT INTO sample.writes (payload) VALUES ('after the restart')")
	f.static = mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes")

	useEngine(t, testConfig(2, SourceStdout, zstdConfig()))
	require.NoError(t, f.backup(t, nil))
	_, err = f.restore(t, nil)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(ariaDir, "aria_log_control"))
	assert.NoFileExists(t, filepath.Join(f.tb.Cnf.DataDir, "aria_log_control"))
	assert.Equal(t, f.static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"))
}
