package reliability

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/testutil/tmpfs"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/tableimport"
)

// TestKillDuringTableCopy: vtfifo restore-table into the tablet's mysqld,
// which writes a binary log, copies a table through it in batches into a
// copy under a reserved name; SIGKILLed in the middle of that copy, it
// leaves the target absent, and the copy with whole batches beside its
// whole local copy. Run again without --resume, it says it drops them and
// imports the table from the start; killed again and run with --resume, it
// says it goes on with the copy and finishes it. Each time the table equals
// the source, and nothing reserved is left. Interrupted with SIGINT (Ctrl-C)
// in the middle of the copy, it undoes itself: exit 3, nothing left.
func TestKillDuringTableCopy(t *testing.T) {
	f := newFixture(t)
	f.useStorage(t, splitstoragetest.Local(t).Config)
	require.Equal(t, "1", f.srv.Query(t, "SELECT @@GLOBAL.log_bin"), "the tablet's mysqld writes a binary log")
	f.srv.Exec(t, "CREATE TABLE "+sampleDB+".copyme (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	f.srv.Exec(t, "INSERT INTO "+sampleDB+".copyme SELECT seq, seq % 1000 FROM "+sampleDB+".seq_1_to_600000")
	want := mariadbtest.Checksums(t, f.srv.DB(), sampleDB)["copyme"]
	require.NoError(t, f.backup(context.Background(), nil))

	// The throwaway server runs as the mysql user (we are root here): it
	// must reach the restore's directory.
	scratch, err := os.MkdirTemp("", "tablecopy-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scratch) })
	require.NoError(t, os.Chmod(scratch, 0o755))
	to := tableimport.Target{DB: sampleDB, Table: "copyme_restored"}
	target, copied, local := to.String(), tableimport.CopyName(to), tableimport.LocalName(to)
	args := func(dir string, more ...string) []string {
		return append([]string{"--table=" + sampleDB + ".copyme", "--as=" + target, "--into-mysql=" + f.tb.Cnf.SocketFile, "--mysqld=" + mariadbtest.LookPath(t,
			"mariadbd"), "--target-dir=" + filepath.Join(scratch, dir), "--progress=never"}, more...)
	}
	count := func(table string) int64 {
		var n int64
		if err := f.srv.DB().QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	reserved := func() string {
		return f.srv.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE '\\_vtfifo\\_%'", sampleDB)
	}
	stopDuringCopy := func(dir string, sig syscall.Signal) (int, string) {
		t.Helper()
		argv := append([]string{"restore-table", "--backup-storage-implementation=split", "--keyspace=" + keyspace, "--shard=" + shard},
			f.cfg.Args()...)
		cmd := exec.Command(vtfifoBin, append(argv, args(dir)...)...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		code := 0
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		for killed := false; !killed; {
			select {
			case err := <-done:
				t.Fatalf("restore-table ended before its copy could be killed (%v):\n%s", err, out.String())
			case <-time.After(10 * time.Millisecond):
			}
			if n := count(copied.String()); n > 0 && n < 600000 {
				require.NoError(t, cmd.Process.Signal(sig))
				var ee *exec.ExitError
				require.True(t, errors.As(<-done, &ee), "%s", out.String())
				killed = true
				code = ee.ExitCode()
			}
		}
		if sig != syscall.SIGKILL {
			return code, out.String()
		}
		// The server finishes the statement the killed client left running.
		require.Eventually(t, func() bool {
			return f.srv.Query(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%"+copied.Table+"%' AND ID <> CONNECTION_ID()") == "0"
		}, time.Minute, 50*time.Millisecond)
		n := count(copied.String())
		t.Logf("killed with %d of 600000 rows copied", n)
		assert.Zero(t, n%2000, "whole batches only")
		assert.Equal(t, int64(-1), count(target), "the target does not exist before the copy is whole")
		require.Equal(t, int64(600000), count(local.String()), "the local copy is left whole")
		return code, out.String()
	}
	killDuringCopy := func(dir string) { stopDuringCopy(dir, syscall.SIGKILL) }
	check := func(stdout string) {
		t.Helper()
		assert.Contains(t, stdout, "OK: "+sampleDB+".copyme imported as "+target+" through the binary log: 600000 rows")
		assert.Equal(t, want, mariadbtest.Checksums(t, f.srv.DB(), sampleDB)["copyme_restored"])
		assert.Equal(t, "0", reserved(), "nothing reserved is left")
	}

	killDuringCopy("first")
	code, stdout, stderr := runVtfifo(t, f.cfg, "restore-table", args("again")...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stderr, "restore-table: "+target+": a stopped run left "+local.String()+", "+copied.String()+": dropped (--resume would "+
		"have gone on with its copy); importing from the start")
	check(stdout)

	f.srv.Exec(t, "DROP TABLE "+target)
	killDuringCopy("second")
	code, stdout, stderr = runVtfifo(t, f.cfg, "restore-table", args("resumed", "--resume")...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stderr, "restore-table: "+target+": resuming the copy through the binary log a stopped run left ("+copied.String()+
		", beside its local copy "+local.String()+")")
	assert.Contains(t, stderr, "rows of a stopped copy: copying the rest")
	check(stdout)

	// Ctrl-C in the middle of the copy: the run undoes itself (the copy
	// through the log, the local copy without), exit 3, nothing left.
	f.srv.Exec(t, "DROP TABLE "+target)
	code, out := stopDuringCopy("interrupted", syscall.SIGINT)
	assert.Equal(t, 3, code, "%s", out)
	assert.Contains(t, out, "FAIL: importing "+sampleDB+".copyme as "+target+": ")
	assert.Equal(t, int64(-1), count(target), "no target")
	assert.Equal(t, "0", reserved(), "nothing reserved is left:\n%s", out)
}

// TestTableRestoreNeedsRoom: restore-table with --target-dir on a file
// system too small for the frames holding the table's files is refused
// before anything is read (exit 2), naming the free space and what it
// needs; the live server is not touched, and nothing is written there.
func TestTableRestoreNeedsRoom(t *testing.T) {
	f := newFixture(t)
	f.useStorage(t, splitstoragetest.Local(t).Config)
	require.NoError(t, f.backup(context.Background(), nil))
	mnt := tmpfs.Mount(t, 4<<20)
	tables := f.srv.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES")
	target := filepath.Join(mnt, "t")
	code, stdout, stderr := runVtfifo(t, f.cfg, "restore-table", "--table="+sampleDB+".t0001", "--as="+sampleDB+".t0001_r", "--into-mysql="+f.tb.Cnf.SocketFile,
		"--target-dir="+target, "--progress=never")
	assert.Equal(t, 2, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Regexp(t, regexp.QuoteMeta(target)+` has `+sizeText+` free, and the table restore needs about `+sizeText+
		` there \(the frames holding its files: `+sizeText+` of stream; a tenth more for the prepare; and 1% of the file system `+
		`left to whatever else writes there\): nothing was downloaded; `+
		`choose a --target-dir with more room`, stderr)
	assert.Empty(t, stdout)
	entries, err := os.ReadDir(mnt)
	require.NoError(t, err)
	for _, e := range entries {
		sub, _ := os.ReadDir(filepath.Join(mnt, e.Name()))
		assert.Empty(t, sub, "nothing written under %s", e.Name())
	}
	assert.Equal(t, tables, f.srv.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES"), "the live server is not touched")
}

// TestAnAriaTableWithoutAriaChk: restore-table of an Aria table on a host
// where aria_chk is nowhere it looks (no $VT_MYSQL_ROOT, a PATH without
// it, none in the usual sbin directories) stops once the table's files are
// read, before the live server is touched: exit 2, naming the program and
// where it looked (a usage error on this host, never damage); the files
// it restored stay in --target-dir, moved up from its own subdirectory.
func TestAnAriaTableWithoutAriaChk(t *testing.T) {
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin"} {
		require.NoFileExists(t, filepath.Join(d, "aria_chk"), "this test needs a host whose aria_chk is only in PATH")
	}
	f, target := backedUpWithTarget(t)
	tool, mysqld := mariadbtest.LookPath(t, "mariabackup"), mariadbtest.LookPath(t, "mariadbd")
	tables := f.srv.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES")
	t.Setenv("PATH", t.TempDir())
	t.Setenv("VT_MYSQL_ROOT", "")
	code, stdout, stderr := runVtfifo(t, f.cfg, "restore-table", "--table="+sampleDB+".aria_t", "--as="+sampleDB+".aria_r",
		"--into-mysql="+f.tb.Cnf.SocketFile, "--target-dir="+target, "--progress=never", "--quiet", "--mysqld="+mysqld,
		"--fifo-backup-tool-path="+tool, "--fifo-backup-tool-flavor=mariabackup")
	assert.Equal(t, 2, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Regexp(t, `^backup ks/0/\S+: read .* prepared with mariabackup .* --export into `+regexp.QuoteMeta(target)+"\n$", stdout)
	assert.Equal(t, "table "+sampleDB+".aria_t: an Aria table needs aria_chk (MariaDB's), found neither under $VT_MYSQL_ROOT, in PATH nor in "+
		"/usr/sbin, /usr/local/sbin or /usr/local/mysql/bin\n", stderr)
	assert.FileExists(t, filepath.Join(target, sampleDB, "aria_t.MAD"))
	assert.NoDirExists(t, filepath.Join(target, ".vtfifo-restoring.d"))
	assert.NoFileExists(t, filepath.Join(target, ".vtfifo-restoring"))
	assert.Equal(t, tables, f.srv.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES"), "the live server is not touched")
}

// TestATableRestoresFilesStayWholeWhenTheirNameIsTaken: restore-table
// without --into-* keeps its files for the operator, moved up into
// --target-dir at the end. A name among them that someone took in the
// directory meanwhile (here during the prepare, by a wrapper around
// mariabackup) is never written over: the run says where the whole files
// stay and what to remove once they are moved, exit 2 (the files were the
// request), every file in one place (none left half moved up) and the
// other entry untouched.
func TestATableRestoresFilesStayWholeWhenTheirNameIsTaken(t *testing.T) {
	f, target := backedUpWithTarget(t)
	require.NoError(t, os.Mkdir(target, 0o755))
	theirs := filepath.Join(target, sampleDB)
	wrapper := filepath.Join(t.TempDir(), "mariabackup")
	require.NoError(t, os.WriteFile(wrapper, []byte("#!/bin/sh\n"+mariadbtest.LookPath(t, "mariabackup")+` "$@"; rc=$?
case "$*" in *--prepare*) mkdir -p `+theirs+` && echo theirs > `+theirs+`/notes;; esac
exit $rc
`), 0o755))
	code, stdout, stderr := runVtfifo(t, f.cfg, "restore-table", "--table="+sampleDB+".t0001", "--target-dir="+target, "--progress=never",
		"--quiet", "--fifo-backup-tool-path="+wrapper, "--fifo-backup-tool-flavor=mariabackup")
	assert.Equal(t, 2, code, "stdout: %s\nstderr: %s", stdout, stderr)
	files := filepath.Join(target, ".vtfifo-restoring.d", "files")
	assert.Equal(t, "FAIL: the restored files stay in "+files+", not in "+target+": cannot move the restored "+sampleDB+" into "+target+
		": something was put there by that name during the restore, and a restore never writes over it: move it away and restore again; they "+
		"are whole (prepared, exported): move them where you want them, then remove "+filepath.Join(target, ".vtfifo-restoring.d")+" and "+
		filepath.Join(target, ".vtfifo-restoring")+"\n", stderr)
	entries, err := os.ReadDir(target)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{".vtfifo-restoring", ".vtfifo-restoring.d", sampleDB}, names, "nothing left half moved up")
	assert.FileExists(t, filepath.Join(files, sampleDB, "t0001.ibd"))
	assert.FileExists(t, filepath.Join(files, sampleDB, "t0001.cfg"))
	b, err := os.ReadFile(filepath.Join(theirs, "notes"))
	require.NoError(t, err)
	assert.Equal(t, "theirs\n", string(b))
}

// backedUpWithTarget is a fixture with one backup on local disk, and a
// table restore's --target-dir (not made) whose parent the throwaway
// server, run as mysql, can go through.
func backedUpWithTarget(t *testing.T) (*fixture, string) {
	f := newFixture(t)
	f.useStorage(t, splitstoragetest.Local(t).Config)
	require.NoError(t, f.backup(context.Background(), nil))
	scratch, err := os.MkdirTemp("", "table-restore-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scratch) })
	require.NoError(t, os.Chmod(scratch, 0o755))
	return f, filepath.Join(scratch, "t")
}

// TestATableIntoAServerOfAnotherPageSizeIsNoVerdict: restore-table of an
// InnoDB table of the backup (16k pages, recorded in its MANIFEST) into a
// live server made with 4k pages, which InnoDB would refuse at IMPORT
// TABLESPACE (1808, "Schema mismatch ... different page size"): refused
// before anything is downloaded, exit 2, the live server's setting against
// the backup's, never damage. It was exit 1, "FAIL", a backup damaged or
// failing a check, after the whole download. (A backup that did not record
// its page size meets 1808 at the import: exit 2 too,
// TestAnImportsFailureIsClassedByWhatSaysIt.)
func TestATableIntoAServerOfAnotherPageSizeIsNoVerdict(t *testing.T) {
	f, target := backedUpWithTarget(t)
	live := mariadbtest.Start(t, mariadbtest.WithPageSize("4k"))
	live.Exec(t, "CREATE DATABASE "+sampleDB)
	code, stdout, stderr := runVtfifo(t, f.cfg, "restore-table", "--table="+sampleDB+".t0001", "--into-mysql="+live.Socket, "--mysql-user=root",
		"--unreplicated", "--target-dir="+target, "--progress=never", "--quiet", "--fifo-backup-tool-path="+mariadbtest.LookPath(t, "mariabackup"),
		"--fifo-backup-tool-flavor=mariabackup")
	assert.Equal(t, 2, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Empty(t, stdout)
	assert.Equal(t, "the live server's innodb_page_size is 4096, the backup's server's 16384: InnoDB imports a tablespace only into a server of "+
		"its page size: nothing was downloaded; import into such a server, or restore the table's files only (leave out --into-*)\n", stderr)
	assert.NoDirExists(t, target)
	assert.Equal(t, "0", live.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", sampleDB), "nothing in the live server")
}

// TestATableIntoAReadOnlyInnoDBSaysWhatRefusesIt: restore-table into a live
// server whose InnoDB runs read-only (innodb_read_only) is refused by the
// probe before anything is downloaded, exit 3, and the advice is about
// the server, not a privilege to grant (a user with every privilege).
func TestATableIntoAReadOnlyInnoDBSaysWhatRefusesIt(t *testing.T) {
	f, target := backedUpWithTarget(t)
	live := mariadbtest.Start(t, mariadbtest.WithArgs("--innodb-read-only=1"))
	live.Exec(t, "CREATE DATABASE "+sampleDB)
	code, stdout, stderr := runVtfifo(t, f.cfg, "restore-table", "--table="+sampleDB+".t0001", "--into-mysql="+live.Socket, "--mysql-user=root",
		"--target-dir="+target, "--progress=never", "--quiet", "--fifo-backup-tool-path="+mariadbtest.LookPath(t, "mariabackup"),
		"--fifo-backup-tool-flavor=mariabackup")
	assert.Equal(t, 3, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "as root, in database "+sampleDB+": the live server refuses what a restore needs: CREATE TABLE ")
	assert.Contains(t, stderr, "nothing was downloaded; the server refuses it whatever its user may do (its state or settings: innodb_read_only, ")
	assert.NotContains(t, stderr, "grant its user")
	assert.NoDirExists(t, target)
}

// TestATableIntoALiveServerWithoutRoomTouchesNothing: restore-table into a
// live server whose data directory's file system the import would leave
// with less than 1 % of it free (a tmpfs) is refused before anything is
// created there: exit 3 (this host, no verdict on the backup), saying
// what the import writes and what is free; no table, no file of it in the
// server's data directory. Before, the copy filled the disk under the
// live server.
func TestATableIntoALiveServerWithoutRoomTouchesNothing(t *testing.T) {
	f, target := backedUpWithTarget(t)
	mnt := tmpfs.Mount(t, 1<<30)
	live := mariadbtest.Start(t, mariadbtest.WithParentDir(mnt))
	live.Exec(t, "CREATE DATABASE "+sampleDB)
	require.NoError(t, tmpfs.Resize(mnt, fsUsed(t, mnt)+512<<10))
	code, stdout, stderr := runVtfifo(t, f.cfg, "restore-table", "--table="+sampleDB+".t0001", "--into-mysql="+live.Socket, "--mysql-user=root",
		"--target-dir="+target, "--progress=never", "--quiet", "--fifo-backup-tool-path="+mariadbtest.LookPath(t, "mariabackup"),
		"--fifo-backup-tool-flavor=mariabackup")
	assert.Equal(t, 3, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout, "table "+sampleDB+".t0001 (InnoDB): ", "restored into --target-dir")
	assert.Regexp(t, `^FAIL: importing `+sampleDB+`\.t0001 as `+sampleDB+`\.t0001: `+sampleDB+`\.t0001: the live server's file system of the data `+
		`directory \(`+regexp.QuoteMeta(filepath.Clean(live.DataDir))+`\) has [0-9]+ bytes free, and the import writes about [0-9]+ there: it `+
		`would leave less than [0-9]+ \(a tenth of that, or 1% of the file system\) for the server's own writes, and a server that cannot write `+
		`its binary log stops: nothing was created in the live server; make room there\n$`, stderr)
	assert.Equal(t, "0", live.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", sampleDB), "nothing in the live server")
	files, err := os.ReadDir(filepath.Join(live.DataDir, sampleDB))
	require.NoError(t, err)
	for _, e := range files {
		assert.Equal(t, "db.opt", e.Name(), "nothing of the table in the live server's data directory")
	}
}
