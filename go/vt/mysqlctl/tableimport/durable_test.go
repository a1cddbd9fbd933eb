package tableimport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// TestImportDurableRealMariaDB: what Import reported is what the server has
// after a crash. Plain, partitioned, compressed and instant-ALTERed tables
// are imported, written to, one ALTERed again instantly, and the live
// server killed with SIGKILL before InnoDB would have checkpointed on its
// own (a large redo log, an idle server): after crash recovery every table
// holds its imported rows and the writes after them, and CHECK TABLE passes.
// Without the checkpoint Import waits for, MariaDB 10.11 brings such tables
// back empty or corrupted.
func TestImportDurableRealMariaDB(t *testing.T) {
	// A durable server (the test servers' default gives it up for speed).
	srv := mariadbtest.Start(t, mariadbtest.WithArgs("--innodb-log-file-size=512M", "--innodb-flush-log-at-trx-commit=1", "--innodb-doublewrite=1"))
	srv.Exec(t, "CREATE DATABASE d")
	tables := map[string][]string{
		"plain": {"CREATE TABLE d.plain (id INT PRIMARY KEY, v VARCHAR(64), KEY (v)) ENGINE=InnoDB"},
		"part":  {"CREATE TABLE d.part (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB PARTITION BY HASH (id) PARTITIONS 6"},
		"comp":  {"CREATE TABLE d.comp (id INT PRIMARY KEY, v VARCHAR(64), KEY (v)) ENGINE=InnoDB ROW_FORMAT=COMPRESSED"},
		"inst": {"CREATE TABLE d.inst (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB",
			"ALTER TABLE d.inst ADD COLUMN w INT NOT NULL DEFAULT 7 FIRST, ALGORITHM=INSTANT"},
	}
	for tb, ddl := range tables {
		for _, q := range ddl {
			srv.Exec(t, q)
		}
		srv.Exec(t, "INSERT INTO d."+tb+" (id, v) SELECT seq, MD5(seq) FROM d.seq_1_to_600")
	}
	dir := filepath.Join(srv.Dir, "restore")
	preparedBackup(t, srv, dir)

	ctx := context.Background()
	var names [][2]string
	for tb := range tables {
		names = append(names, [2]string{"d", tb})
	}
	defs, _, err := testrestore.Definitions(ctx, dir, names, testrestore.Options{Logger: logutil.NewMemoryLogger()})
	require.NoError(t, err)
	for tb := range tables {
		var files []string
		for _, pattern := range []string{tb + ".ibd", tb + ".cfg", tb + "#P#*"} {
			m, _ := filepath.Glob(filepath.Join(dir, "d", pattern))
			for _, f := range m {
				files = append(files, "d/"+filepath.Base(f))
			}
		}
		res, err := Import(ctx, srv.DB(), Source{DB: "d", Table: tb, Dir: dir, Files: files, Create: defs["d."+tb]}, Target{"d", tb + "_r"}, Options{},
			logutil.NewMemoryLogger())
		require.NoError(t, err, tb)
		require.Equal(t, int64(600), res.Rows, tb)
		srv.Exec(t, "INSERT INTO d."+tb+"_r (id, v) SELECT 1000 + seq, 'after' FROM d.seq_1_to_100")
	}
	srv.Exec(t, "ALTER TABLE d.inst_r ADD COLUMN z INT NOT NULL DEFAULT 9, ALGORITHM=INSTANT")
	srv.Exec(t, "UPDATE d.inst_r SET z = 10 WHERE id % 10 = 0")

	srv.Crash()
	for tb := range tables {
		assert.Equal(t, "700", srv.Query(t, "SELECT COUNT(*) FROM d."+tb+"_r"), "%s_r after a crash", tb)
		var table, op, typ, msg string
		require.NoError(t, srv.DB().QueryRow("CHECK TABLE d."+tb+"_r EXTENDED").Scan(&table, &op, &typ, &msg), tb)
		assert.Equal(t, "OK", msg, "%s_r after a crash", tb)
	}
	assert.Equal(t, "70", srv.Query(t, "SELECT COUNT(*) FROM d.inst_r WHERE z = 10"), "the instant ALTER and the update after it")
	assert.NotContains(t, strings.ToLower(srv.ErrorLog()), "corrupt", "the server's log after recovery")
}

// TestASettingsRecordNotOursIsKept: a file at the settings record's name
// that is no record restore-table writes (an operator's, a truncated copy)
// is neither removed nor written over: the run fails naming it, and the
// server's setting is untouched. A record of a stopped run on this server
// start puts the value it recorded back, and goes.
func TestASettingsRecordNotOursIsKept(t *testing.T) {
	srv := mariadbtest.Start(t)
	ctx := context.Background()
	path := filepath.Join(srv.Query(t, "SELECT @@datadir"), settingsRecord)
	before := srv.Query(t, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
	for _, notOurs := range []string{"keep: the pct we tuned on 29 Nov", "{}", `{"innodb_max_dirty_pages_pct":"75"}`} {
		require.NoError(t, os.WriteFile(path, []byte(notOurs), 0o640))
		err := RestoreSettings(ctx, srv.DB(), logutil.NewMemoryLogger())
		require.Error(t, err, notOurs)
		assert.ErrorContains(t, err, path+" is not a record restore-table writes")
		assert.ErrorContains(t, err, "it is neither removed nor written over; move it away")
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, notOurs, string(got))
		assert.Equal(t, before, srv.Query(t, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct"))
	}

	conn, err := srv.DB().Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, started, err := recordOf(ctx, conn)
	require.NoError(t, err)
	require.NoError(t, writeRecord(path, settingsDoc{MaxDirtyPagesPct: before, Set: "0", ServerStarted: started, PID: 1 << 22}))
	srv.Exec(t, "SET GLOBAL innodb_max_dirty_pages_pct = 0")
	require.NoError(t, RestoreSettings(ctx, srv.DB(), logutil.NewMemoryLogger()))
	assert.NoFileExists(t, path)
	assert.Equal(t, before, srv.Query(t, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct"))
}
