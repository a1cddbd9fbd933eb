package testrestore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// TestTablesOfAnOlderServersFormat, on a real MariaDB: a table whose .frm
// says MySQL 5.1.0 made it (its version bytes rewritten, as a table carried
// over from an old server and never rebuilt has them) is one the server
// neither checks nor reads ("Table rebuild required"): not damage. The
// check lists it apart, with the server's words, and passes; the other
// tables are checked and counted as before. A table whose CHECK TABLE
// fails still fails the check.
func TestTablesOfAnOlderServersFormat(t *testing.T) {
	srv := mariadbtest.Start(t)
	ctx := context.Background()
	for _, q := range []string{
		"CREATE DATABASE k",
		"CREATE TABLE k.old (id INT PRIMARY KEY, a VARCHAR(10) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci, KEY (a)) ENGINE=InnoDB",
		"INSERT INTO k.old VALUES (1, 'x'), (2, 'y')",
		"CREATE TABLE k.fine (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO k.fine VALUES (1), (2), (3)",
		"FLUSH TABLES",
	} {
		srv.Exec(t, q)
	}
	frm, err := os.OpenFile(filepath.Join(srv.DataDir, "k", "old.frm"), os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = frm.WriteAt([]byte{0xb4, 0xc3, 0, 0}, 51) // MYSQL_VERSION_ID 50100, little-endian
	require.NoError(t, err)
	require.NoError(t, frm.Close())
	srv.Exec(t, "FLUSH TABLES")

	var rec Record
	require.NoError(t, checkTables(ctx, srv.DB(), 2, &rec, logutil.NewMemoryLogger()))
	assert.Equal(t, []string{"`k`.`old`: Table rebuild required. Please do \"ALTER TABLE `old` FORCE\" or dump/reload to fix it!"}, rec.NeedsRebuild)
	assert.Empty(t, rec.TablesFailed)
	var all int64
	require.NoError(t, srv.DB().QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') "+
		"AND TABLE_SCHEMA NOT IN ('information_schema', 'performance_schema')").Scan(&all))
	assert.EqualValues(t, all, rec.Tables, "every table, the old one included")

	// A MyISAM table whose index file is cut short: a failed check.
	srv.Exec(t, "CREATE TABLE k.cut (id INT, KEY (id)) ENGINE=MyISAM")
	srv.Exec(t, "INSERT INTO k.cut SELECT seq FROM k.seq_1_to_2000")
	srv.Exec(t, "FLUSH TABLES")
	require.NoError(t, os.Truncate(filepath.Join(srv.DataDir, "k", "cut.MYI"), 2048))
	srv.Exec(t, "FLUSH TABLES")
	rec = Record{}
	err = checkTables(ctx, srv.DB(), 2, &rec, logutil.NewMemoryLogger())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CHECK TABLE failed on 1 of ")
	assert.Contains(t, rec.TablesFailed, "`k`.`cut`")
	assert.Len(t, rec.NeedsRebuild, 1)
}
