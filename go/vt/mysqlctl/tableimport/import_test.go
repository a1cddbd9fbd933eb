package tableimport

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// TestImportRealMariaDB: a real mariabackup backup, prepared with --export,
// its tables' definitions read by a throwaway server on the prepared files
// (which also runs Aria's recovery), its Aria tables made movable; then
// each table imported into the server it came from, under another name and
// (dropped first) its own: InnoDB with secondary indexes, Aria (one written
// throughout the backup), MyISAM and CSV, with their checksums. A table in
// the way is never replaced, and an Aria table that was not closed cleanly
// is refused before it is touched.
func TestImportRealMariaDB(t *testing.T) {
	ariaChk := mariadbtest.LookPath(t, "aria_chk")
	mariabackup := mariadbtest.LookPath(t, "mariabackup")
	srv := mariadbtest.Start(t)
	srv.Exec(t, "CREATE DATABASE d")
	for _, q := range []string{
		"CREATE TABLE d.inno (id INT PRIMARY KEY, a INT, b VARCHAR(40), KEY (a), KEY (b, a)) ENGINE=InnoDB",
		"INSERT INTO d.inno SELECT seq, seq % 97, MD5(seq) FROM d.seq_1_to_3000",
		"CREATE TABLE d.aria (id INT PRIMARY KEY, k INT, v VARCHAR(100), KEY (k)) ENGINE=Aria",
		"INSERT INTO d.aria SELECT seq, seq % 13, REPEAT(MD5(seq), 2) FROM d.seq_1_to_20000",
		"CREATE TABLE d.busy (id INT PRIMARY KEY AUTO_INCREMENT, k INT, v VARCHAR(200), KEY (k)) ENGINE=Aria",
		"INSERT INTO d.busy (k, v) SELECT seq, REPEAT('b', 150) FROM d.seq_1_to_50000",
		"CREATE TABLE d.my (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=MyISAM",
		"INSERT INTO d.my SELECT seq, SHA1(seq) FROM d.seq_1_to_5000",
		"CREATE TABLE d.csv (id INT NOT NULL, v VARCHAR(100) NOT NULL) ENGINE=CSV",
		"INSERT INTO d.csv SELECT seq, SHA1(seq) FROM d.seq_1_to_2000",
		// Kinds of InnoDB tables an import must bring back whole and writable.
		// Created while COMPACT was the default: its definition names no row format.
		"SET GLOBAL innodb_default_row_format = 'compact'",
		"CREATE TABLE d.oldfmt (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB",
		"SET GLOBAL innodb_default_row_format = 'dynamic'",
		"INSERT INTO d.oldfmt SELECT seq, MD5(seq) FROM d.seq_1_to_1000",
		"CREATE TABLE d.myft (id INT PRIMARY KEY, body TEXT, FULLTEXT KEY ftb (body)) ENGINE=MyISAM",
		"INSERT INTO d.myft SELECT seq, CONCAT('word', seq % 50, ' other ', MD5(seq)) FROM d.seq_1_to_1000",
		"CREATE TABLE d.ft (id INT PRIMARY KEY, body TEXT, FULLTEXT KEY ftb (body)) ENGINE=InnoDB",
		"INSERT INTO d.ft SELECT seq, CONCAT('word', seq % 50, ' other text ', MD5(seq)) FROM d.seq_1_to_2000",
		"CREATE TABLE d.geo (id INT PRIMARY KEY, g POINT NOT NULL, SPATIAL KEY (g)) ENGINE=InnoDB",
		"INSERT INTO d.geo SELECT seq, POINT(seq % 100, seq / 100) FROM d.seq_1_to_2000",
		"CREATE TABLE d.gen (id INT PRIMARY KEY, a INT, b INT AS (a * 2) VIRTUAL, c INT AS (a + 1) STORED, KEY (b), KEY (c)) ENGINE=InnoDB",
		"INSERT INTO d.gen (id, a) SELECT seq, seq % 31 FROM d.seq_1_to_2000",
		"CREATE TABLE d.ver (id INT PRIMARY KEY, v INT) ENGINE=InnoDB WITH SYSTEM VERSIONING",
		"INSERT INTO d.ver SELECT seq, seq FROM d.seq_1_to_500",
		"UPDATE d.ver SET v = v + 1 WHERE id % 2 = 0",
		"CREATE TABLE d.inv (id INT PRIMARY KEY, v INT, h INT INVISIBLE DEFAULT 5) ENGINE=InnoDB",
		"INSERT INTO d.inv (id, v, h) SELECT seq, seq % 7, seq % 11 FROM d.seq_1_to_4500",
		"CREATE TABLE d.cmp (id INT PRIMARY KEY, v VARCHAR(200), KEY (v)) ENGINE=InnoDB ROW_FORMAT=COMPRESSED",
		"INSERT INTO d.cmp SELECT seq, REPEAT(MD5(seq), 3) FROM d.seq_1_to_2000",
		"CREATE TABLE d.pc (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB PAGE_COMPRESSED=1",
		"INSERT INTO d.pc SELECT seq, REPEAT(MD5(seq), 3) FROM d.seq_1_to_2000",
	} {
		srv.Exec(t, q)
	}
	want := mariadbtest.Checksums(t, srv.DB(), "d", "busy")

	// d.busy is written while mariabackup copies it (Aria tables are copied
	// online, with Aria's log).
	stop, wrote := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			if i == 1 {
				close(wrote)
			}
			select {
			case <-stop:
				return
			default:
			}
			if _, err := srv.DB().Exec("INSERT INTO d.busy (k, v) SELECT seq, REPEAT('w', 150) FROM d.seq_1_to_500"); err != nil {
				t.Errorf("writer: %v", err)
				return
			}
			if _, err := srv.DB().Exec("UPDATE d.busy SET k = k + 1 WHERE id % 97 = ?", i%97); err != nil {
				t.Errorf("writer: %v", err)
				return
			}
		}
	}()
	// The backup starts after a first round of writes, so the rows past
	// the 50,000 asserted below exist whatever the scheduling.
	select {
	case <-wrote:
	case <-time.After(time.Minute):
		t.Fatal("the writer wrote nothing in a minute")
	}
	dir := filepath.Join(srv.Dir, "restore")
	stream := mariadbtest.Backup(t, srv)
	mariadbtest.MbstreamExtract(t, dir, stream)
	require.NoError(t, stream.Close())
	close(stop)
	wg.Wait()
	out, err := exec.Command(mariabackup, "--prepare", "--export", "--target-dir="+dir).CombinedOutput()
	require.NoError(t, err, "%s", out)

	ctx := context.Background()
	tables := []string{"inno", "aria", "busy", "my", "csv", "ft", "geo", "gen", "ver", "cmp", "pc", "inv", "myft", "oldfmt"}
	names := make([][2]string, len(tables))
	for i, tb := range tables {
		names[i] = [2]string{"d", tb}
	}
	defs, _, err := testrestore.Definitions(ctx, dir, names, testrestore.Options{Logger: logutil.NewMemoryLogger()})
	require.NoError(t, err)
	files := func(table string) []string {
		var out []string
		for _, ext := range []string{".ibd", ".cfg", ".frm", ".MAD", ".MAI", ".MYD", ".MYI", ".CSV", ".CSM"} {
			if _, err := os.Stat(filepath.Join(dir, "d", table+ext)); err == nil {
				out = append(out, "d/"+table+ext)
			}
		}
		return out
	}
	for _, tb := range tables {
		require.NoError(t, Movable(ctx, ariaChk, dir, files(tb)), tb)
	}
	importAs := func(table, as string) Result {
		t.Helper()
		res, err := Import(ctx, srv.DB(), Source{DB: "d", Table: table, Dir: dir, Files: files(table), Create: defs["d."+table]}, Target{"d", as},
			Options{}, logutil.NewMemoryLogger())
		require.NoError(t, err, "%s as %s", table, as)
		assert.Equal(t, "OK", res.Check)
		return res
	}
	for _, tb := range tables {
		if tb != "ft" {
			importAs(tb, tb+"_restored")
		}
	}
	// Under its own name, in the server whose log wrote the dropped table.
	srv.Exec(t, "DROP TABLE d.aria")
	srv.Exec(t, "DROP TABLE d.my")
	importAs("aria", "aria")
	importAs("my", "my")
	got := mariadbtest.Checksums(t, srv.DB(), "d")
	for _, tb := range []string{"inno", "aria", "my", "csv", "myft", "oldfmt"} {
		assert.Equal(t, want[tb], got[tb+"_restored"], tb)
	}
	assert.Equal(t, "20", srv.Query(t, "SELECT COUNT(*) FROM d.myft_restored WHERE MATCH(body) AGAINST ('word7')"),
		"a MyISAM table's FULLTEXT index comes with its files")
	assert.Equal(t, want["aria"], got["aria"])
	assert.Equal(t, want["my"], got["my"])
	// The table written during the backup is whole at the backup's end:
	// Aria's recovery ran on the restored files.
	var rows, maxID int64
	require.NoError(t, srv.DB().QueryRow("SELECT COUNT(*), MAX(id) FROM d.busy_restored").Scan(&rows, &maxID))
	assert.Equal(t, maxID, rows, "ids without gaps")
	assert.Greater(t, rows, int64(50000))
	// Written after the import, and still right after a restart (the Aria
	// table has log sequence numbers of this server now).
	srv.Exec(t, "INSERT INTO d.aria_restored VALUES (999999, 1, 'after')")
	srv.Restart()
	var n int64
	require.NoError(t, srv.DB().QueryRow("SELECT COUNT(*) FROM d.aria_restored").Scan(&n))
	assert.Equal(t, int64(20001), n)

	t.Run("kinds of tables come back whole and writable", func(t *testing.T) {
		for _, tb := range []string{"inno", "geo", "ver", "cmp", "pc"} {
			assert.Equal(t, want[tb], got[tb+"_restored"], tb)
		}
		// CHECKSUM TABLE of a table with virtual columns differs between a
		// table and its import in MariaDB 10.11; its contents are compared.
		contents := "SELECT CONCAT(COUNT(*), ' ', SUM(id * 7 + a * 3 + b * 5 + c)) FROM d."
		assert.Equal(t, srv.Query(t, contents+"gen"), srv.Query(t, contents+"gen_restored"))
		for _, q := range []string{
			"INSERT INTO d.geo_restored VALUES (999999, POINT(1, 2))",
			"INSERT INTO d.gen_restored (id, a) VALUES (999999, 5)",
			"UPDATE d.ver_restored SET v = v + 1 WHERE id < 10",
			"INSERT INTO d.cmp_restored VALUES (999999, 'after')",
			"INSERT INTO d.pc_restored VALUES (999999, 'after')",
			"INSERT INTO d.inno_restored VALUES (999999, 1, 'after')",
		} {
			srv.Exec(t, q)
		}
		assert.Equal(t, "1", srv.Query(t, "SELECT COUNT(*) FROM d.gen_restored FORCE INDEX (b) WHERE b = 10 AND id = 999999"))
		assert.Equal(t, "1", srv.Query(t, "SELECT COUNT(*) FROM d.geo_restored WHERE MBRContains(ST_GeomFromText('POLYGON((0 0,0 3,3 3,3 0,0 0))'), g) "+
			"AND id = 999999"))
		srv.Restart()
		assert.Equal(t, "2001", srv.Query(t, "SELECT COUNT(*) FROM d.pc_restored"), "the server came back with every write")
	})

	t.Run("a FULLTEXT table is refused before anything is imported", func(t *testing.T) {
		_, err := Import(ctx, srv.DB(), Source{DB: "d", Table: "ft", Dir: dir, Files: files("ft"), Create: defs["d.ft"]}, Target{"d", "ft_restored"},
			Options{}, logutil.NewMemoryLogger())
		require.ErrorContains(t, err, "d.ft has FULLTEXT indexes (ftb)")
		require.NoError(t, Absent(ctx, srv.DB(), Target{"d", "ft_restored"}))
		left, _ := filepath.Glob(filepath.Join(srv.DataDir, "d", "ft_restored*"))
		assert.Empty(t, left)
	})

	t.Run("a replicated server", func(t *testing.T) {
		// A primary and a replica of plain MariaDB replication, row-based.
		primary := mariadbtest.Start(t, mariadbtest.WithArgs("--server-id=11", "--log-bin=primary-bin", "--binlog-format=ROW"))
		replica := mariadbtest.Start(t, mariadbtest.WithArgs("--server-id=12", "--log-bin=replica-bin", "--binlog-format=ROW"))
		primary.Exec(t, "CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'r'")
		primary.Exec(t, "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'")
		replica.Exec(t, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='repl', MASTER_PASSWORD='r', "+
			"MASTER_USE_GTID=slave_pos", primary.Port))
		replica.Exec(t, "START SLAVE")
		primary.Exec(t, "CREATE DATABASE d")
		waitReplica := func(query, want string) {
			t.Helper()
			require.Eventually(t, func() bool {
				var v sql.NullString
				_ = replica.DB().QueryRow(query).Scan(&v)
				return v.String == want
			}, time.Minute, 100*time.Millisecond, "replica: %s", query)
		}
		waitReplica("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'd'", "1")

		src := Source{DB: "d", Table: "inno", Dir: dir, Files: files("inno"), Create: defs["d.inno"]}
		_, err := Import(ctx, primary.DB(), src, Target{"d", "inno_restored"}, Options{}, logutil.NewMemoryLogger())
		require.ErrorIs(t, err, ErrReplicated)
		require.NoError(t, Absent(ctx, primary.DB(), Target{"d", "inno_restored"}))

		// Through the binary log: imported under a local name without
		// logging, then copied into its target as rows (Replicate), with a
		// replica stopped throughout: it catches up when started again.
		replica.Exec(t, "STOP SLAVE")
		for _, tb := range []string{"inno", "ver", "inv", "aria"} {
			src := Source{DB: "d", Table: tb, Dir: dir, Files: files(tb), Create: defs["d."+tb]}
			to := Target{"d", tb + "_final"}
			_, err := Import(ctx, primary.DB(), src, LocalName(to), Options{Unreplicated: true}, logutil.NewMemoryLogger())
			require.NoError(t, err, tb)
			res, err := Replicate(ctx, primary.DB(), src, LocalName(to), to, logutil.NewMemoryLogger())
			require.NoError(t, err, tb)
			assert.Equal(t, "OK", res.Check, tb)
			require.NoError(t, Absent(ctx, primary.DB(), LocalName(to)), "the local table is dropped")
		}
		assert.Equal(t, want["inno"], mariadbtest.Checksums(t, primary.DB(), "d")["inno_final"])
		primary.Exec(t, "INSERT INTO d.inno_final VALUES (999999, 1, 'after')")
		primary.Exec(t, "UPDATE d.ver_final SET v = v + 100 WHERE id = 1")
		assert.Equal(t, "1", primary.Query(t, "SELECT @@session.sql_log_bin"), "the pool's connections log again after an import")
		replica.Exec(t, "START SLAVE")
		waitReplica("SELECT COUNT(*) FROM d.inno_final", "3001")
		waitReplica("SELECT v FROM d.ver_final WHERE id = 1", "101")
		assert.Empty(t, replicaStatus(t, replica, "Last_SQL_Error"))
		assert.Equal(t, "Yes", replicaStatus(t, replica, "Slave_SQL_Running"))
		for _, q := range []string{
			"SELECT COUNT(*) FROM d.ver_final FOR SYSTEM_TIME ALL",
			"SELECT CONCAT(COUNT(*), ' ', SUM(h), ' ', SUM(v)) FROM d.inv_final",
			"SELECT COUNT(*) FROM d.aria_final",
		} {
			assert.Equal(t, primary.Query(t, q), replica.Query(t, q), q)
		}
		assert.Equal(t, srv.Query(t, "SELECT COUNT(*) FROM d.ver FOR SYSTEM_TIME ALL")+"+1",
			primary.Query(t, "SELECT CONCAT(COUNT(*) - 1, '+1') FROM d.ver_final FOR SYSTEM_TIME ALL"), "every history row, and the update's")
		assert.Equal(t, srv.Query(t, "SELECT SUM(h) FROM d.inv"), primary.Query(t, "SELECT SUM(h) FROM d.inv_final"), "INVISIBLE columns copied")
		for _, tb := range []string{"inno_final", "inv_final", "aria_final"} {
			assert.Equal(t, mariadbtest.Checksums(t, primary.DB(), "d")[tb], mariadbtest.Checksums(t, replica.DB(), "d")[tb], tb)
		}
	})

	t.Run("into another server", func(t *testing.T) {
		// Which refuses an Aria table from another server's log until it
		// is zero-filled.
		other := mariadbtest.Start(t)
		other.Exec(t, "CREATE DATABASE d")
		for _, tb := range []string{"aria", "busy", "csv"} {
			_, err := Import(ctx, other.DB(), Source{DB: "d", Table: tb, Dir: dir, Files: files(tb), Create: defs["d."+tb]}, Target{"d", tb}, Options{},
				logutil.NewMemoryLogger())
			require.NoError(t, err, tb)
		}
		got := mariadbtest.Checksums(t, other.DB(), "d")
		assert.Equal(t, want["aria"], got["aria"])
		assert.Equal(t, want["csv"], got["csv"])
	})

	t.Run("a table in the way", func(t *testing.T) {
		before, err := os.ReadFile(filepath.Join(srv.DataDir, "d", "my.MYD"))
		require.NoError(t, err)
		for _, tb := range []string{"my", "inno"} {
			_, err := Import(ctx, srv.DB(), Source{DB: "d", Table: tb, Dir: dir, Files: files(tb), Create: defs["d."+tb]}, Target{"d", tb}, Options{},
				logutil.NewMemoryLogger())
			require.ErrorIs(t, err, ErrExists)
		}
		after, err := os.ReadFile(filepath.Join(srv.DataDir, "d", "my.MYD"))
		require.NoError(t, err)
		assert.Equal(t, before, after)
		// A stray data file of the target's name stays as it was.
		stray := filepath.Join(srv.DataDir, "d", "stray.MYD")
		require.NoError(t, os.WriteFile(stray, []byte("someone's"), 0o660))
		_, err = Import(ctx, srv.DB(), Source{DB: "d", Table: "my", Dir: dir, Files: files("my"), Create: defs["d.my"]}, Target{"d", "stray"}, Options{},
			logutil.NewMemoryLogger())
		require.ErrorContains(t, err, "exists")
		b, err := os.ReadFile(stray)
		require.NoError(t, err)
		assert.Equal(t, "someone's", string(b))
		left, _ := filepath.Glob(filepath.Join(srv.DataDir, "d", "stray.*"))
		assert.Equal(t, []string{stray}, left, "nothing else left behind")
	})

	t.Run("a schema mismatch", func(t *testing.T) {
		// A definition the exported tablespace does not match: IMPORT
		// TABLESPACE refuses it, and what the import created is gone.
		create := strings.Replace(defs["d.inno"], "`b` varchar(40)", "`b` varchar(41)", 1)
		require.NotEqual(t, defs["d.inno"], create)
		_, err := Import(ctx, srv.DB(), Source{DB: "d", Table: "inno", Dir: dir, Files: files("inno"), Create: create}, Target{"d", "inno_mismatch"},
			Options{}, logutil.NewMemoryLogger())
		require.ErrorContains(t, err, "IMPORT TABLESPACE")
		require.ErrorContains(t, err, "chema mismatch")
		require.NoError(t, Absent(ctx, srv.DB(), Target{"d", "inno_mismatch"}))
		left, _ := filepath.Glob(filepath.Join(srv.DataDir, "d", "inno_mismatch*"))
		assert.Empty(t, left)
	})

	t.Run("an Aria table not closed", func(t *testing.T) {
		// A copy taken while the server holds the table changed.
		open := filepath.Join(t.TempDir(), "open")
		require.NoError(t, os.MkdirAll(filepath.Join(open, "d"), 0o755))
		conn, err := srv.DB().Conn(ctx)
		require.NoError(t, err)
		defer conn.Close()
		for _, q := range []string{"LOCK TABLES d.aria WRITE", "INSERT INTO d.aria VALUES (1000000, 1, 'open')"} {
			_, err := conn.ExecContext(ctx, q)
			require.NoError(t, err)
		}
		for _, ext := range []string{".MAI", ".MAD", ".frm"} {
			b, err := os.ReadFile(filepath.Join(srv.DataDir, "d", "aria"+ext))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(open, "d", "aria"+ext), b, 0o640))
		}
		_, err = conn.ExecContext(ctx, "UNLOCK TABLES")
		require.NoError(t, err)
		mai := filepath.Join(open, "d", "aria.MAI")
		before, err := os.ReadFile(mai)
		require.NoError(t, err)
		err = Movable(ctx, ariaChk, open, []string{"d/aria.frm", "d/aria.MAD", "d/aria.MAI"})
		require.ErrorContains(t, err, "d/aria.MAI: the Aria table was not closed cleanly")
		after, err := os.ReadFile(mai)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(before, after), "the table is not touched")
	})
}

// replicaStatus reads one column of SHOW SLAVE STATUS.
func replicaStatus(t *testing.T, srv *mariadbtest.Server, column string) string {
	rows, err := srv.DB().Query("SHOW SLAVE STATUS")
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.True(t, rows.Next(), "the server is a replica")
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	require.NoError(t, rows.Scan(ptrs...))
	for i, c := range cols {
		if c == column {
			return vals[i].String
		}
	}
	t.Fatalf("no column %s in SHOW SLAVE STATUS", column)
	return ""
}
