package tableimport

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// childEnv runs the test binary as the import a test kills (TestMain): its
// value is the JSON of a childRun.
const childEnv = "TABLEIMPORT_CHILD"

// scratchEnv runs the test binary as a process that opens a throwaway
// server on the prepared directory its value names, and waits to be killed
// (TestMain).
const scratchEnv = "TABLEIMPORT_SCRATCH"

// childRun is one import run in a child process, which SIGKILLs itself
// before its statement StopAt (1-based).
type childRun struct {
	Socket string
	Src    Source
	To     Target
	StopAt int
	Copy   bool // ImportReplicated rather than Import
}

// sqlOpen reaches a server by its socket as root.
func sqlOpen(socket string) (*sql.DB, error) {
	db, err := sql.Open("mysql", "root@unix("+socket+")/")
	if err == nil {
		err = db.Ping()
	}
	return db, err
}

func importOne(ctx context.Context, copy bool, db *sql.DB, src Source, to Target) (Result, error) {
	if copy {
		return ImportReplicated(ctx, db, src, to, Options{}, logutil.NewMemoryLogger())
	}
	return Import(ctx, db, src, to, Options{}, logutil.NewMemoryLogger())
}

// TestInterrupted*: an import stopped before any one of its statements, by
// each way a run stops (its context cancelled: Ctrl-C, SIGTERM, --timeout;
// the live server killed and restarted; the importing process killed),
// leaves the live server with either the whole table under its name or
// nothing under it, only reserved tables (which the next run's Settle
// drops, saying so), and the server's innodb_max_dirty_pages_pct as it
// was; the next run then imports it whole. One test per kind of import, so
// that they run side by side (scripts/gotest.sh).

// TestInterruptedPartitionedImport: a partitioned InnoDB table imported
// from its files, partition by partition (MariaDB).
func TestInterruptedPartitionedImport(t *testing.T) { interruptedAnywhere(t, "pp") }

// TestInterruptedAriaWithTrigger: an Aria table with a trigger, into
// another database.
func TestInterruptedAriaWithTrigger(t *testing.T) { interruptedAnywhere(t, "ar") }

// TestInterruptedCopyThroughTheLog: an InnoDB table imported as a local
// copy and copied in batches through the binary log (ImportReplicated).
func TestInterruptedCopyThroughTheLog(t *testing.T) { interruptedAnywhere(t, "big") }

func interruptedAnywhere(t *testing.T, only string) {
	ariaChk := mariadbtest.LookPath(t, "aria_chk")
	srv := mariadbtest.Start(t, mariadbtest.WithArgs("--innodb-max-dirty-pages-pct=85"))
	srv.Exec(t, "CREATE DATABASE d")
	srv.Exec(t, "CREATE DATABASE d2")
	for _, q := range []string{
		"CREATE TABLE d.pp (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB PARTITION BY HASH (id) PARTITIONS 2",
		"INSERT INTO d.pp SELECT seq, MD5(seq) FROM d.seq_1_to_600",
		"CREATE TABLE d.ar (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=Aria",
		"INSERT INTO d.ar SELECT seq, SHA1(seq) FROM d.seq_1_to_400",
		"CREATE TABLE d.audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(64)) ENGINE=InnoDB",
		"CREATE TRIGGER d.ar_ins AFTER INSERT ON d.ar FOR EACH ROW INSERT INTO d.audit (what) VALUES (CONCAT('ar ', NEW.id))",
		"CREATE TABLE d.big (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"INSERT INTO d.big SELECT seq, seq % 7 FROM d.seq_1_to_2500",
	} {
		srv.Exec(t, q)
	}
	dir := filepath.Join(srv.Dir, "restore")
	preparedBackup(t, srv, dir)
	ctx := context.Background()
	sc, err := testrestore.Open(ctx, dir, "the definitions", testrestore.Options{Logger: logutil.NewMemoryLogger()})
	require.NoError(t, err)
	sources := map[string]Source{}
	for _, tb := range []string{"pp", "ar", "big"} {
		defs, err := sc.Definitions(ctx, [][2]string{{"d", tb}})
		require.NoError(t, err)
		triggers, err := ReadTriggers(ctx, sc.DB, "d", tb)
		require.NoError(t, err)
		var files []string
		m, _ := filepath.Glob(filepath.Join(dir, "d", tb+"[.#]*"))
		for _, f := range m {
			files = append(files, "d/"+filepath.Base(f))
		}
		sources[tb] = Source{DB: "d", Table: tb, Dir: dir, Files: files, Create: defs["d."+tb], Triggers: triggers}
	}
	sc.Close()
	require.Len(t, sources["ar"].Triggers, 1)
	require.NoError(t, Movable(ctx, ariaChk, dir, sources["ar"].Files))
	original := mariadbtest.Checksums(t, srv.DB(), "d")
	tables := func() string {
		return srv.Query(t, "SELECT GROUP_CONCAT(TABLE_NAME ORDER BY TABLE_NAME) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND "+
			"TABLE_NAME NOT LIKE 'seq%'") + srv.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd2'")
	}
	before := tables()
	self, err := os.Executable()
	require.NoError(t, err)

	ways := []struct {
		name string
		stop func(t *testing.T, run childRun) (Result, error)
	}{
		{"cancelled", func(t *testing.T, run childRun) (Result, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			n := 0
			execHook = func(string) error {
				if n++; n == run.StopAt {
					cancel()
				}
				return nil
			}
			defer func() { execHook = nil }()
			return importOne(ctx, run.Copy, srv.DB(), run.Src, run.To)
		}},
		{"server killed", func(t *testing.T, run childRun) (Result, error) {
			n := 0
			execHook = func(string) error {
				if n++; n == run.StopAt {
					srv.Crash()
				}
				return nil
			}
			defer func() { execHook = nil }()
			return importOne(ctx, run.Copy, srv.DB(), run.Src, run.To)
		}},
		{"importer killed", func(t *testing.T, run childRun) (Result, error) {
			doc, err := json.Marshal(run)
			require.NoError(t, err)
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), childEnv+"="+string(doc))
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "%v: %s", err, out)
			require.Equal(t, "signal: killed", ee.ProcessState.String(), "%s", out)
			return Result{}, errors.New("killed")
		}},
	}
	for _, c := range []struct {
		table string
		copy  bool
		to    Target
	}{{"pp", false, Target{"d", "pp_r"}}, {"ar", false, Target{"d2", "ar"}}, {"big", true, Target{"d", "big_r"}}} {
		if c.table != only {
			continue
		}
		src, to := sources[c.table], c.to
		// The statements of a whole run, counted.
		count := 0
		execHook = func(string) error { count++; return nil }
		_, err := importOne(ctx, c.copy, srv.DB(), src, to)
		execHook = nil
		require.NoError(t, err, c.table)
		require.NoError(t, Drop(ctx, srv.DB(), to, c.copy))
		for _, w := range ways {
			for i := 1; i <= count; i++ {
				run := childRun{Socket: srv.Socket, Src: src, To: to, StopAt: i, Copy: c.copy}
				what := fmt.Sprintf("%s as %s, %s before statement %d of %d", c.table, to, w.name, i, count)
				_, err := w.stop(t, run)
				// The target is whole, or not there.
				if Absent(ctx, srv.DB(), to) != nil {
					if w.name != "importer killed" {
						require.NoError(t, err, what)
					}
					assert.Equal(t, original[c.table], mariadbtest.Checksums(t, srv.DB(), to.DB)[to.Table], what)
				} else {
					require.Error(t, err, what)
				}
				if w.name == "cancelled" {
					left, err := Leftovers(ctx, srv.DB(), to)
					require.NoError(t, err)
					assert.Empty(t, left, "%s: undone by the run itself", what)
				}
				// The next run settles what is left and imports it whole.
				require.NoError(t, RestoreSettings(ctx, srv.DB(), logutil.NewMemoryLogger()))
				assert.Equal(t, "1", srv.Query(t, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct = 85"), what)
				_, said, err := Settle(ctx, srv.DB(), to, false)
				require.NoError(t, err, what)
				if os.Getenv("TABLEIMPORT_DEBUG") != "" {
					t.Logf("%s: %s", what, said)
				}
				left, _ := filepath.Glob(filepath.Join(srv.DataDir, to.DB, ReservedPrefix+"*"))
				assert.Empty(t, left, "%s: %s", what, said)
				if Absent(ctx, srv.DB(), to) == nil {
					_, err := importOne(ctx, c.copy, srv.DB(), src, to)
					require.NoError(t, err, what)
				}
				got := mariadbtest.Checksums(t, srv.DB(), to.DB)
				assert.Equal(t, original[c.table], got[to.Table], what)
				if len(src.Triggers) > 0 {
					assert.Equal(t, "1", srv.Query(t, "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND "+
						"EVENT_OBJECT_TABLE = ?", to.DB, to.Table), what)
				}
				require.NoError(t, Drop(ctx, srv.DB(), to, c.copy))
				require.Equal(t, before, tables(), what)
			}
		}
	}
}

// TestProbeSaysWhatTheUserLacks: the live server's user is tried, before
// any download, on what an import runs (Probe): each refusal names the
// statement; a user allowed everything passes, and the probe leaves no
// table behind.
func TestProbeSaysWhatTheUserLacks(t *testing.T) {
	srv := mariadbtest.Start(t)
	srv.Exec(t, "CREATE DATABASE d")
	srv.Exec(t, "CREATE USER 'weak'@'127.0.0.1' IDENTIFIED BY 'w'")
	srv.Exec(t, "GRANT SELECT, INSERT ON d.* TO 'weak'@'127.0.0.1'")
	// Global privileges are a connection's from its login: a new pool each
	// time.
	probe := func() error {
		weak, err := sql.Open("mysql", "weak:w@tcp("+srv.TCPAddr()+")/")
		require.NoError(t, err)
		defer weak.Close()
		return Probe(context.Background(), weak, "d")
	}
	for _, c := range []struct{ grant, want string }{
		{"", "SET SESSION sql_log_bin = 0"},
		{"GRANT BINLOG ADMIN ON *.* TO 'weak'@'127.0.0.1'", "SET GLOBAL innodb_max_dirty_pages_pct"},
		{"GRANT SUPER ON *.* TO 'weak'@'127.0.0.1'", "CREATE TABLE `d`.`_vtfifo_probe_"},
		{"GRANT CREATE, DROP ON d.* TO 'weak'@'127.0.0.1'", "ALTER TABLE `d`.`_vtfifo_probe_"},
	} {
		if c.grant != "" {
			srv.Exec(t, c.grant)
		}
		err := probe()
		require.ErrorIs(t, err, ErrNotAllowed, c.want)
		assert.ErrorContains(t, err, c.want)
		assert.ErrorContains(t, err, "denied")
	}
	srv.Exec(t, "GRANT ALTER ON d.* TO 'weak'@'127.0.0.1'")
	require.NoError(t, probe())
	assert.Equal(t, "0", srv.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME LIKE '\\_vtfifo\\_%'"))
}

// TestThrowawayServerDiesWithItsParent: the throwaway server a table
// restore starts on the restored files (to read rows or definitions) goes
// when the process that started it is killed with SIGKILL, which runs no
// cleanup: no mysqld is left running on the restore's directory.
func TestThrowawayServerDiesWithItsParent(t *testing.T) {
	srv := mariadbtest.Start(t)
	dir := filepath.Join(srv.Dir, "restore")
	preparedBackup(t, srv, dir)
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), scratchEnv+"="+dir)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "open\n", line)
	servers := func() []string {
		var pids []string
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			b, err := os.ReadFile(p)
			if err == nil && bytes.Contains(b, []byte(dir)) && bytes.Contains(b, []byte("mysqld")) || bytes.Contains(b, []byte("mariadbd")) &&
				bytes.Contains(b, []byte(dir)) {
				pids = append(pids, filepath.Base(filepath.Dir(p)))
			}
		}
		return pids
	}
	require.NotEmpty(t, servers(), "the child's throwaway server runs on %s", dir)
	// The killed child cannot remove its scratch directory (named in the
	// server's --socket): the next run sweeps it.
	cmdline, err := os.ReadFile(filepath.Join("/proc", servers()[0], "cmdline"))
	require.NoError(t, err)
	scratch := ""
	for _, arg := range bytes.Split(cmdline, []byte{0}) {
		if sock, ok := bytes.CutPrefix(arg, []byte("--socket=")); ok {
			scratch = filepath.Dir(string(sock))
			t.Cleanup(func() { os.RemoveAll(scratch); os.Remove(scratch + ".owner") })
		}
	}
	require.NotEmpty(t, scratch, "the throwaway server's --socket")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.Eventually(t, func() bool { return len(servers()) == 0 }, 30*time.Second, 100*time.Millisecond,
		"a throwaway server outlived the process that started it")

	// What the killed run left, its owner record beside it, is removed by
	// the next scratch directory made under the same parent, and nothing
	// of the next one's is left once it is released.
	require.DirExists(t, scratch)
	require.FileExists(t, scratch+".owner")
	next, release, err := fifobackupengine.NewWorkDir(filepath.Dir(scratch), "vtfifo-definitions-", logutil.NewMemoryLogger())
	require.NoError(t, err)
	assert.NoDirExists(t, scratch, "the killed run's scratch directory is swept")
	assert.NoFileExists(t, scratch+".owner")
	release()
	assert.NoDirExists(t, next)
	assert.NoFileExists(t, next+".owner")
}
