package tabletdb

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/procident"
)

func TestStartServesQueries(t *testing.T) {
	tb := Start(t)
	db := tb.DB(t, "")
	var version string
	require.NoError(t, db.QueryRow("SELECT VERSION()").Scan(&version))
	require.Contains(t, version, "MariaDB")
	_, err := db.Exec("CREATE DATABASE vt_test; CREATE TABLE vt_test.t (id INT PRIMARY KEY); INSERT INTO vt_test.t VALUES (1),(2)")
	require.NoError(t, err)
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM vt_test.t").Scan(&n))
	require.Equal(t, 2, n)
}

// TestSweepStopsWhatADeadTestLeft: a VTDATAROOT whose owner record names a
// process that is gone (a test binary killed by go test's timeout) has its
// server killed (here a stand-in process in its pid file, its command line
// naming the directory) and is removed by the next start; a pid file whose
// pid now names another process leaves that process alone; a directory
// whose owner lives, or without a record, is left.
func TestSweepStopsWhatADeadTestLeft(t *testing.T) {
	parent := t.TempDir()
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	gone := procident.Self()
	gone.PID, gone.ProcStart = dead.Process.Pid, "12345"
	// A stand-in server whose command line names its directory, as mysqld's
	// names its datadir; in a process group of its own, killed at the end.
	left := filepath.Join(parent, "tabletdb-left")
	server := exec.Command("sh", "-c", "sleep 300; :", "--datadir="+left+"/vt_0000000100/data")
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, server.Start())
	t.Cleanup(func() { _ = syscall.Kill(-server.Process.Pid, syscall.SIGKILL) })
	exited := make(chan struct{})
	go func() { _ = server.Wait(); close(exited) }()
	reused := exec.Command("sh", "-c", "sleep 300; :") // a pid file's pid, reused by an unrelated process
	reused.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, reused.Start())
	t.Cleanup(func() { _ = syscall.Kill(-reused.Process.Pid, syscall.SIGKILL) })

	lay := func(name string, owner *procident.Owner, pid int) string {
		d := filepath.Join(parent, name)
		require.NoError(t, os.MkdirAll(filepath.Join(d, "vt_0000000100"), 0o755))
		if owner != nil {
			b, err := json.Marshal(owner)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(d, ownerFile), b, 0o644))
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, "vt_0000000100", "mysql.pid"), []byte(strconv.Itoa(pid)+"\n"), 0o644))
		return d
	}
	self := procident.Self()
	lay("tabletdb-left", &gone, server.Process.Pid)
	stale := lay("tabletdb-stale", &gone, reused.Process.Pid)
	live := lay("tabletdb-live", &self, os.Getpid())
	bare := lay("tabletdb-bare", nil, os.Getpid())

	sweepLeftovers(parent)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the server a dead test left still runs")
	}
	assert.NoDirExists(t, left)
	assert.NoDirExists(t, stale)
	assert.NoError(t, reused.Process.Signal(syscall.Signal(0)), "a process that is not the directory's was killed")
	assert.DirExists(t, live)
	assert.DirExists(t, bare)
}

// Two backups of one tablet asked for within a second get times in
// different seconds (Vitess names a backup by its second); the wait is no
// longer than to the next second.
func TestBackupTimeGivesEachBackupItsOwnSecond(t *testing.T) {
	tb := &Tablet{}
	first := tb.BackupTime()
	second := tb.BackupTime()
	assert.True(t, second.Truncate(time.Second).After(first.Truncate(time.Second)), "%v then %v", first, second)
	assert.Less(t, second.Sub(first), 2*time.Second)
}
