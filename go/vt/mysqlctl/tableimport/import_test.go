package tableimport

import (
	"bytes"
	"context"
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
	tables := []string{"inno", "aria", "busy", "my", "csv"}
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
		res, err := Import(ctx, srv.DB(), Source{DB: "d", Table: table, Dir: dir, Files: files(table), Create: defs["d."+table]}, Target{"d", as}, logutil.NewMemoryLogger())
		require.NoError(t, err, "%s as %s", table, as)
		assert.Equal(t, "OK", res.Check)
		return res
	}
	for _, tb := range tables {
		importAs(tb, tb+"_restored")
	}
	// Under its own name, in the server whose log wrote the dropped table.
	srv.Exec(t, "DROP TABLE d.aria")
	srv.Exec(t, "DROP TABLE d.my")
	importAs("aria", "aria")
	importAs("my", "my")
	got := mariadbtest.Checksums(t, srv.DB(), "d")
	for _, tb := range []string{"inno", "aria", "my", "csv"} {
		assert.Equal(t, want[tb], got[tb+"_restored"], tb)
	}
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

	t.Run("into another server", func(t *testing.T) {
		// Which refuses an Aria table from another server's log until it
		// is zero-filled.
		other := mariadbtest.Start(t)
		other.Exec(t, "CREATE DATABASE d")
		for _, tb := range []string{"aria", "busy", "csv"} {
			_, err := Import(ctx, other.DB(), Source{DB: "d", Table: tb, Dir: dir, Files: files(tb), Create: defs["d."+tb]}, Target{"d", tb}, logutil.NewMemoryLogger())
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
			_, err := Import(ctx, srv.DB(), Source{DB: "d", Table: tb, Dir: dir, Files: files(tb), Create: defs["d."+tb]}, Target{"d", tb}, logutil.NewMemoryLogger())
			require.ErrorIs(t, err, ErrExists)
		}
		after, err := os.ReadFile(filepath.Join(srv.DataDir, "d", "my.MYD"))
		require.NoError(t, err)
		assert.Equal(t, before, after)
		// A stray data file of the target's name stays as it was.
		stray := filepath.Join(srv.DataDir, "d", "stray.MYD")
		require.NoError(t, os.WriteFile(stray, []byte("someone's"), 0o660))
		_, err = Import(ctx, srv.DB(), Source{DB: "d", Table: "my", Dir: dir, Files: files("my"), Create: defs["d.my"]}, Target{"d", "stray"}, logutil.NewMemoryLogger())
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
		_, err := Import(ctx, srv.DB(), Source{DB: "d", Table: "inno", Dir: dir, Files: files("inno"), Create: create}, Target{"d", "inno_mismatch"}, logutil.NewMemoryLogger())
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
