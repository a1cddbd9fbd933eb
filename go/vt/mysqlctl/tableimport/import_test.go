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

	"github.com/vtfifo/vtfifo/go/internal/mysqlfilename"
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
		// Names in other scripts and with punctuation (their files are named
		// in the server's file-name encoding).
		"CREATE DATABASE `données`",
		"CREATE TABLE `données`.`tâble_é_3` (id INT PRIMARY KEY, v VARCHAR(40), KEY (v)) ENGINE=InnoDB",
		"INSERT INTO `données`.`tâble_é_3` SELECT seq, MD5(seq) FROM d.seq_1_to_700",
		"CREATE TABLE `données`.`pärt` (id INT PRIMARY KEY, v INT) ENGINE=InnoDB PARTITION BY RANGE (id) (PARTITION `pé0` VALUES LESS THAN (100), " +
			"PARTITION `p-1` VALUES LESS THAN MAXVALUE)",
		"INSERT INTO `données`.`pärt` SELECT seq, seq FROM d.seq_1_to_300",
		"CREATE TABLE `données`.`ária` (id INT PRIMARY KEY, v VARCHAR(40)) ENGINE=Aria",
		"INSERT INTO `données`.`ária` SELECT seq, SHA1(seq) FROM d.seq_1_to_400",
		// Foreign keys: a parent and a child with 25 orphan rows, a table
		// referencing itself, and a child whose parent is dropped after
		// the backup.
		"CREATE TABLE d.fk_parent (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO d.fk_parent SELECT seq FROM d.seq_1_to_100",
		"CREATE TABLE d.fk_child (id INT PRIMARY KEY, pid INT, CONSTRAINT fk_child_p FOREIGN KEY (pid) REFERENCES fk_parent (id)) ENGINE=InnoDB",
		"INSERT INTO d.fk_child SELECT seq, seq FROM d.seq_1_to_100",
		"SET SESSION foreign_key_checks = 0",
		"INSERT INTO d.fk_child SELECT seq, seq FROM d.seq_501_to_525",
		"SET SESSION foreign_key_checks = 1",
		"CREATE TABLE d.fk_self (id INT PRIMARY KEY, up INT, FOREIGN KEY (up) REFERENCES fk_self (id) ON DELETE CASCADE) ENGINE=InnoDB",
		"INSERT INTO d.fk_self VALUES (1, NULL), (2, 1), (3, 2), (4, NULL)",
		"CREATE TABLE d.fk_gone (id INT PRIMARY KEY) ENGINE=InnoDB",
		// A FULLTEXT table of many column types, loaded as rows: each value
		// must come back as stored.
		"CREATE TABLE d.fttypes (id BIGINT UNSIGNED PRIMARY KEY, f FLOAT, dbl DOUBLE, dec1 DECIMAL(30,10), b BIT(13), e ENUM('a','é','z'), " +
			"st SET('x','y','ß'), dt DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(2), y YEAR, j JSON, g GEOMETRY, bl BLOB, " +
			"l1 VARCHAR(40) CHARACTER SET latin1, u TEXT CHARACTER SET utf8mb4, z DATE, FULLTEXT KEY (u)) ENGINE=InnoDB",
		"INSERT INTO d.fttypes VALUES (18446744073709551615, 3.1415927, 2.718281828459045, -12345678901234567890.0123456789, b'1010101010101', " +
			"'é', 'x,ß', '2024-02-29 23:59:59.123456', '2038-01-19 03:14:07.999', '-838:59:59.99', 2155, '{\"k\": [1, \"v\"]}', " +
			"ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))'), UNHEX('00FF7F80C3'), 'déjà vu', 'emoji 🦭 text', '0000-00-00')",
		"INSERT INTO d.fttypes (id, f, u) SELECT seq, seq / 7, CONCAT('row ', seq) FROM d.seq_1_to_2500",
		// A FULLTEXT index dropped: its hidden FTS_DOC_ID column stays.
		"CREATE TABLE d.ftgone (id INT PRIMARY KEY, body TEXT, FULLTEXT KEY ftb (body)) ENGINE=InnoDB",
		"INSERT INTO d.ftgone SELECT seq, CONCAT('word', seq) FROM d.seq_1_to_300",
		"ALTER TABLE d.ftgone DROP INDEX ftb",
		"CREATE TABLE d.fk_lost (id INT PRIMARY KEY, gid INT, CONSTRAINT fk_lost_g FOREIGN KEY (gid) REFERENCES fk_gone (id)) ENGINE=InnoDB",
		// A FULLTEXT table (loaded as rows) with a row of 3 MiB.
		"CREATE TABLE d.ftbig (id INT PRIMARY KEY, body LONGTEXT, FULLTEXT KEY (body)) ENGINE=InnoDB",
		"INSERT INTO d.ftbig VALUES (1, 'small'), (2, REPEAT('big ', 786432)), (3, 'small too')",
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
	tables := []string{"inno", "aria", "busy", "my", "csv", "ft", "fttypes", "geo", "gen", "ver", "cmp", "pc", "inv", "myft", "oldfmt"}
	names := [][2]string{{"données", "tâble_é_3"}, {"données", "pärt"}, {"données", "ária"}, {"d", "fk_child"}, {"d", "fk_self"}, {"d", "fk_lost"}, {"d", "ftgone"},
		{"d", "ftbig"}}
	for _, tb := range tables {
		names = append(names, [2]string{"d", tb})
	}
	defs, _, err := testrestore.Definitions(ctx, dir, names, testrestore.Options{Logger: logutil.NewMemoryLogger()})
	require.NoError(t, err)
	filesOf := func(db, table string) []string {
		dbFile, err := mysqlfilename.Encode(db)
		require.NoError(t, err)
		tableFile, err := mysqlfilename.Encode(table)
		require.NoError(t, err)
		var out []string
		for _, ext := range []string{".ibd", ".cfg", ".frm", ".MAD", ".MAI", ".MYD", ".MYI", ".CSV", ".CSM"} {
			if _, err := os.Stat(filepath.Join(dir, dbFile, tableFile+ext)); err == nil {
				out = append(out, dbFile+"/"+tableFile+ext)
			}
		}
		parts, _ := filepath.Glob(filepath.Join(dir, dbFile, tableFile+"#P#*"))
		for _, p := range parts {
			out = append(out, dbFile+"/"+filepath.Base(p))
		}
		return out
	}
	files := func(table string) []string { return filesOf("d", table) }
	for _, n := range names {
		require.NoError(t, Movable(ctx, ariaChk, dir, filesOf(n[0], n[1])), n)
	}
	source := func(db, table string) Source {
		return Source{DB: db, Table: table, Dir: dir, Files: filesOf(db, table), Create: defs[db+"."+table]}
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
		if tb != "ft" && tb != "fttypes" {
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

	t.Run("names in other scripts and with punctuation", func(t *testing.T) {
		for _, c := range []struct{ table, as string }{{"tâble_é_3", "t-x€ü"}, {"pärt", "pärt 2"}, {"ária", "ária.b"}} {
			res, err := Import(ctx, srv.DB(), source("données", c.table), Target{"données", c.as}, Options{}, logutil.NewMemoryLogger())
			require.NoError(t, err, c.table)
			assert.Equal(t, "OK", res.Check)
			var name, sum string
			require.NoError(t, srv.DB().QueryRow("CHECKSUM TABLE `données`.`"+c.table+"`").Scan(&name, &sum))
			assert.Equal(t, sum, res.Checksum, c.table)
		}
		assert.Equal(t, "300", srv.Query(t, "SELECT COUNT(*) FROM `données`.`pärt 2` PARTITION (`pé0`, `p-1`)"))
	})

	t.Run("foreign keys point where they pointed", func(t *testing.T) {
		srv.Exec(t, "CREATE DATABASE d2")
		showCreate := func(table string) string {
			var name, create string
			require.NoError(t, srv.DB().QueryRow("SHOW CREATE TABLE "+table).Scan(&name, &create))
			return create
		}
		imp := func(src Source, to Target, opts Options) Result {
			t.Helper()
			res, err := Import(ctx, srv.DB(), src, to, opts, logutil.NewMemoryLogger())
			require.NoError(t, err, "%s as %s", src.Table, to)
			return res
		}
		// Into another database: the parent is named fully, the name is free.
		res := imp(source("d", "fk_child"), Target{"d2", "fk_child_r"}, Options{})
		assert.Empty(t, res.Notes)
		assert.Contains(t, showCreate("d2.fk_child_r"), "CONSTRAINT `fk_child_p` FOREIGN KEY (`pid`) REFERENCES `d`.`fk_parent` (`id`)")
		srv.Exec(t, "INSERT INTO d2.fk_child_r VALUES (1000, 7)")
		_, err := srv.DB().Exec("INSERT INTO d2.fk_child_r VALUES (1001, 7777)")
		assert.ErrorContains(t, err, "1452", "the key is enforced against d.fk_parent")
		// Beside the live child: the constraint name is taken there.
		res = imp(source("d", "fk_child"), Target{"d", "fk_child_r"}, Options{})
		assert.Equal(t, []string{"foreign key fk_child_p is named fk_child_p_2 in d.fk_child_r (fk_child_p is taken in database d)"}, res.Notes)
		orphans, err := Orphans(ctx, srv.DB(), Target{"d", "fk_child_r"})
		require.NoError(t, err)
		assert.Equal(t, []string{"25 rows whose foreign key fk_child_p_2 has no row in d.fk_parent (orphans: the import does not check keys; " +
			"they were orphans in the backup, or their parent rows are gone from the live server since)"}, orphans)
		// A key on the table itself follows its new name and still cascades.
		imp(source("d", "fk_self"), Target{"d", "fk_self_r"}, Options{})
		assert.Contains(t, showCreate("d.fk_self_r"), "CONSTRAINT `fk_self_r_ibfk_1` FOREIGN KEY (`up`) REFERENCES `fk_self_r` (`id`) ON DELETE CASCADE")
		srv.Exec(t, "DELETE FROM d.fk_self_r WHERE id = 1")
		assert.Equal(t, "1", srv.Query(t, "SELECT COUNT(*) FROM d.fk_self_r"), "rows 2 and 3 went with row 1")
		assert.Equal(t, "4", srv.Query(t, "SELECT COUNT(*) FROM d.fk_self"))
		// A parent the live server no longer has: refused, naming the key,
		// nothing created; imported without the key only when asked.
		srv.Exec(t, "DROP TABLE d.fk_lost")
		srv.Exec(t, "DROP TABLE d.fk_gone")
		_, err = Import(ctx, srv.DB(), source("d", "fk_lost"), Target{"d", "fk_lost"}, Options{}, logutil.NewMemoryLogger())
		require.ErrorContains(t, err, "d.fk_lost: foreign keys whose parent the live server does not have: fk_lost_g (references d.fk_gone)")
		require.NoError(t, Absent(ctx, srv.DB(), Target{"d", "fk_lost"}))
		res = imp(source("d", "fk_lost"), Target{"d", "fk_lost"}, Options{DropKeysWithoutParent: true})
		assert.Equal(t, []string{"foreign key fk_lost_g dropped: its parent d.fk_gone is not in the live server"}, res.Notes)
		assert.NotContains(t, showCreate("d.fk_lost"), "FOREIGN KEY")
		// A parent imported in the same run counts as there.
		res = imp(source("d", "fk_lost"), Target{"d", "fk_lost_2"}, Options{Importing: []Target{{"d", "fk_gone"}}})
		assert.Contains(t, showCreate("d.fk_lost_2"), "REFERENCES `fk_gone` (`id`)")
	})

	t.Run("a FULLTEXT table is refused before anything is imported", func(t *testing.T) {
		_, err := Import(ctx, srv.DB(), Source{DB: "d", Table: "ft", Dir: dir, Files: files("ft"), Create: defs["d.ft"]}, Target{"d", "ft_restored"},
			Options{}, logutil.NewMemoryLogger())
		require.ErrorContains(t, err, "d.ft has FULLTEXT indexes (ftb)")
		require.NoError(t, Absent(ctx, srv.DB(), Target{"d", "ft_restored"}))
		left, _ := filepath.Glob(filepath.Join(srv.DataDir, "d", "ft_restored*"))
		assert.Empty(t, left)
		// Its index dropped, the hidden column it added is still in the
		// tablespace: refused for that reason, by its .cfg.
		_, err = Import(ctx, srv.DB(), source("d", "ftgone"), Target{"d", "ftgone_restored"}, Options{}, logutil.NewMemoryLogger())
		require.ErrorContains(t, err, "d.ftgone has a hidden FTS_DOC_ID column (left by a FULLTEXT index dropped since)")
		require.NoError(t, Absent(ctx, srv.DB(), Target{"d", "ftgone_restored"}))
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
			res, err := Replicate(ctx, primary.DB(), src, LocalName(to), to, Options{}, logutil.NewMemoryLogger())
			require.NoError(t, err, tb)
			assert.Equal(t, "OK", res.Check, tb)
			require.NoError(t, Absent(ctx, primary.DB(), LocalName(to)), "the local table is dropped")
		}
		assert.Equal(t, want["inno"], mariadbtest.Checksums(t, primary.DB(), "d")["inno_final"])
		primary.Exec(t, "INSERT INTO d.inno_final VALUES (999999, 1, 'after')")
		primary.Exec(t, "UPDATE d.ver_final SET v = v + 100 WHERE id = 1")
		assert.Equal(t, "1", primary.Query(t, "SELECT @@session.sql_log_bin"), "the pool's connections log again after an import")
		// A key on itself and a name in another script, in one call each.
		primary.Exec(t, "CREATE DATABASE `données`")
		for _, tb := range [][2]string{{"d", "fk_self"}, {"données", "tâble_é_3"}} {
			_, err := ImportReplicated(ctx, primary.DB(), source(tb[0], tb[1]), Target{tb[0], tb[1]}, Options{}, logutil.NewMemoryLogger())
			require.NoError(t, err, tb)
		}
		// Tables whose files cannot be imported come back as rows, read
		// from the restored files by a throwaway server; the inserts build
		// their FULLTEXT index.
		scratch, err := testrestore.Open(ctx, dir, "the rows", testrestore.Options{Logger: logutil.NewMemoryLogger()})
		require.NoError(t, err)
		for _, tb := range []string{"ft", "ftgone", "fttypes"} {
			_, err := ImportReplicated(ctx, primary.DB(), source("d", tb), Target{"d", tb}, Options{Local: FromServer(scratch.DB)}, logutil.NewMemoryLogger())
			require.NoError(t, err, tb)
			require.NoError(t, Absent(ctx, primary.DB(), LocalName(Target{"d", tb})))
		}
		scratch.Close()
		// A copy stopped (its command killed) after its first batch: the
		// copy and the local copy are left, the target is not there;
		// resumed, the rest follows.
		stoppedAt := Target{"d", "inno_resumed"}
		require.NoError(t, fromFiles(ctx, primary.DB(), source("d", "inno"), LocalName(stoppedAt), Options{}, logutil.NewMemoryLogger()))
		def, err := renamed(source("d", "inno"), CopyName(stoppedAt))
		require.NoError(t, err)
		primary.Exec(t, def)
		primary.Exec(t, "INSERT INTO "+quoted(CopyName(stoppedAt))+" SELECT * FROM "+quoted(LocalName(stoppedAt))+" ORDER BY id LIMIT 2000")
		left, err := Leftovers(ctx, primary.DB(), stoppedAt)
		require.NoError(t, err)
		assert.Equal(t, []Target{LocalName(stoppedAt), CopyName(stoppedAt)}, left)
		resumed, said, err := Settle(ctx, primary.DB(), stoppedAt, true)
		require.NoError(t, err)
		require.True(t, resumed, said)
		_, err = ImportReplicated(ctx, primary.DB(), source("d", "inno"), stoppedAt, Options{Resume: true}, logutil.NewMemoryLogger())
		require.NoError(t, err)
		left, err = Leftovers(ctx, primary.DB(), stoppedAt)
		require.NoError(t, err)
		assert.Empty(t, left)
		gotP := mariadbtest.Checksums(t, primary.DB(), "d")
		for _, tb := range []string{"ft", "ftgone", "fttypes", "inno_resumed"} {
			assert.Equal(t, want[strings.TrimSuffix(tb, "_resumed")], gotP[tb], tb)
		}
		row := "SELECT CONCAT_WS('|', id, f, dbl, dec1, BIN(b), e, st, dt, ts, tm, y, j, ST_AsText(g), HEX(bl), l1, u, z) FROM d.fttypes WHERE id > 3000"
		assert.Equal(t, srv.Query(t, row), primary.Query(t, row), "every value as stored")

		replica.Exec(t, "START SLAVE")
		waitReplica("SELECT COUNT(*) FROM d.ft WHERE MATCH(body) AGAINST ('word7')", "40")
		assert.Equal(t, "40", primary.Query(t, "SELECT COUNT(*) FROM d.ft WHERE MATCH(body) AGAINST ('word7')"))
		waitReplica("SELECT COUNT(*) FROM `données`.`tâble_é_3`", "700")
		waitReplica("SELECT COUNT(*) FROM d.fk_self", "4")
		var name, create string
		require.NoError(t, replica.DB().QueryRow("SHOW CREATE TABLE d.fk_self").Scan(&name, &create))
		assert.Contains(t, create, "CONSTRAINT `fk_self_ibfk_1` FOREIGN KEY (`up`) REFERENCES `fk_self` (`id`) ON DELETE CASCADE")
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
		waitReplica("SELECT COUNT(*) FROM d.inno_resumed", "3000")
		for _, tb := range []string{"inno_final", "inv_final", "aria_final", "ft", "ftgone", "fttypes", "inno_resumed"} {
			assert.Equal(t, mariadbtest.Checksums(t, primary.DB(), "d")[tb], mariadbtest.Checksums(t, replica.DB(), "d")[tb], tb)
		}

		// Paced by the replica: after each batch, the replica has it.
		replicaRows := func(table string) string { return replica.Query(t, "SELECT COUNT(*) FROM d."+table) }
		paces := 0
		pace := Replicas(primary.DB(), []Replica{{Name: "the replica", DB: replica.DB()}}, time.Minute, logutil.NewMemoryLogger())
		_, err = ImportReplicated(ctx, primary.DB(), source("d", "inno"), Target{"d", "inno_paced"}, Options{Pace: func(ctx context.Context) error {
			err := pace(ctx)
			paces++
			assert.Equal(t, fmt.Sprint(paces*copyBatchRows), replicaRows(CopyName(Target{"d", "inno_paced"}).Table), "the replica holds every batch copied")
			return err
		}}, logutil.NewMemoryLogger())
		require.NoError(t, err)
		assert.Equal(t, 1, paces)
		// A replica that applies nothing fails the copy, which is undone.
		replica.Exec(t, "STOP SLAVE")
		stall := Replicas(primary.DB(), []Replica{{Name: "the replica", DB: replica.DB()}}, 2*time.Second, logutil.NewMemoryLogger())
		_, err = ImportReplicated(ctx, primary.DB(), source("d", "inno"), Target{"d", "inno_stalled"}, Options{Pace: stall}, logutil.NewMemoryLogger())
		require.ErrorContains(t, err, "replica the replica has not applied the copy's last batch in 2s")
		require.NoError(t, Absent(ctx, primary.DB(), Target{"d", "inno_stalled"}))
		left, err = Leftovers(ctx, primary.DB(), Target{"d", "inno_stalled"})
		require.NoError(t, err)
		assert.Empty(t, left, "nothing of the stalled copy is left")
		replica.Exec(t, "START SLAVE")
		require.NoError(t, pace(ctx), "the replica catches up")
		assert.Equal(t, "0", replica.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME IN ('inno_stalled', '"+CopyName(Target{"d", "inno_stalled"}).Table+"')"))
		assert.Empty(t, replicaStatus(t, replica, "Last_SQL_Error"))
	})

	t.Run("a row larger than the live server's max_allowed_packet", func(t *testing.T) {
		// Refused before it is sent, naming its size and the setting; the
		// run undone. With the setting raised, it comes back whole.
		small := mariadbtest.Start(t, mariadbtest.WithArgs("--max-allowed-packet=1M"))
		small.Exec(t, "CREATE DATABASE d")
		scratch, err := testrestore.Open(ctx, dir, "the rows", testrestore.Options{Logger: logutil.NewMemoryLogger()})
		require.NoError(t, err)
		defer scratch.Close()
		to := Target{"d", "ftbig"}
		_, err = ImportReplicated(ctx, small.DB(), source("d", "ftbig"), to, Options{Local: FromServer(scratch.DB)}, logutil.NewMemoryLogger())
		require.ErrorContains(t, err, "row 2 of d.ftbig is 31457")
		require.ErrorContains(t, err, "bytes, more than the live server's max_allowed_packet (1048576) lets one INSERT carry: raise it (SET GLOBAL "+
			"max_allowed_packet, for new connections) above 32")
		require.NoError(t, Absent(ctx, small.DB(), to))
		left, err := Leftovers(ctx, small.DB(), to)
		require.NoError(t, err)
		assert.Empty(t, left)
		small.Exec(t, "SET GLOBAL max_allowed_packet = 8388608")
		// A connection takes the global value when it connects: a new pool.
		raised, err := sql.Open("mysql", small.DSN(""))
		require.NoError(t, err)
		defer raised.Close()
		_, err = ImportReplicated(ctx, raised, source("d", "ftbig"), to, Options{Local: FromServer(scratch.DB)}, logutil.NewMemoryLogger())
		require.NoError(t, err)
		assert.Equal(t, want["ftbig"], mariadbtest.Checksums(t, small.DB(), "d")["ftbig"])
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
