package fifobackupengine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/testbin"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/internal/procident"
)

// The test binary plays the processes these tests need, chosen by
// FIFO_TEST_HELPER (see TestHelperProcess).
func helper(t *testing.T, role string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "FIFO_TEST_HELPER="+role, testbin.HelperEnv)
	return cmd
}

// TestHelperProcess is not a test: it is the process helper starts.
//   - parent: starts `sleep 300` through newCommand, prints its pid, waits.
//   - mysqld: a mysqld starting: after 500ms it "listens" (creates the file
//     named by FIFO_TEST_SOCKET), then exits once FIFO_TEST_SOCKET.shutdown
//     exists, removing the socket first.
//   - deaf: ignores SIGTERM, says "ready", waits.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv("FIFO_TEST_HELPER") {
	case "parent":
		cmd := newCommand(context.Background(), "sleep", "300")
		if err := cmd.Start(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
		select {}
	case "deaf": // a mysqld stuck in its shutdown: SIGTERM does nothing
		signal.Ignore(syscall.SIGTERM)
		os.Stdout.WriteString("ready\n")
		select {}
	case "mysqld":
		socket := os.Getenv("FIFO_TEST_SOCKET")
		time.Sleep(500 * time.Millisecond)
		_ = os.WriteFile(socket, nil, 0o600)
		for {
			if _, err := os.Stat(socket + ".shutdown"); err == nil {
				_ = os.Remove(socket)
				time.Sleep(200 * time.Millisecond) // writes its files a while
				os.Exit(0)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestToolDiesWithParent: a program started through newCommand is killed
// with the process that started it (a SIGKILLed restore leaves no --prepare
// running on its files).
func TestToolDiesWithParent(t *testing.T) {
	parent := helper(t, "parent")
	out, err := parent.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, parent.Start())
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	child, err := strconv.Atoi(line[:len(line)-1])
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	// Just after exec, /proc/pid/cmdline can still be empty for a moment.
	require.Eventually(t, func() bool { _, alive := readProcess(child); return alive }, 5*time.Second, 5*time.Millisecond, "the child runs")

	require.NoError(t, parent.Process.Signal(syscall.SIGKILL))
	_ = parent.Wait()
	require.Eventually(t, func() bool { _, alive := readProcess(child); return !alive }, 5*time.Second, 10*time.Millisecond,
		"the child (pid %d) must die with its parent", child)
}

// TestEndMysqldKillsAServerThatIgnoresSIGTERM: EndMysqld (a throwaway
// server's end) asks with SIGTERM and, once the grace has passed, kills
// what is left of the processes started with the my.cnf with SIGKILL,
// and returns only when they are gone.
func TestEndMysqldKillsAServerThatIgnoresSIGTERM(t *testing.T) {
	dir := t.TempDir()
	cnf := &mysqlctl.Mycnf{Path: filepath.Join(dir, "my.cnf"), PidFile: filepath.Join(dir, "mysql.pid")}
	cmd := helper(t, "deaf", "--defaults-file="+cnf.Path)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	require.Len(t, tabletProcesses(cnf), 1)

	const grace = time.Second
	began := time.Now()
	require.NoError(t, EndMysqld(cnf, grace))
	assert.GreaterOrEqual(t, time.Since(began), grace, "SIGTERM first, then the grace")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("EndMysqld returned with the server running")
	}
	assert.Equal(t, syscall.SIGKILL, cmd.ProcessState.Sys().(syscall.WaitStatus).Signal())
	assert.Empty(t, tabletProcesses(cnf))
}

// TestStopMysqldWaitsForStartingMysqld: a mysqld still starting has neither
// socket nor pid file, so Vitess's shutdown returns at once; stopMysqld
// waits for it, asks again once it listens, and returns only after it is
// gone. One that never stops fails it after the timeout, naming it.
func TestStopMysqldWaitsForStartingMysqld(t *testing.T) {
	dir := t.TempDir()
	cnf := &mysqlctl.Mycnf{Path: filepath.Join(dir, "my.cnf"), SocketFile: filepath.Join(dir, "mysql.sock"), PidFile: filepath.Join(dir, "mysql.pid")}
	// Like Vitess's Mysqld.Shutdown: nothing to do without socket and pid
	// file; otherwise ask, and wait until the socket is gone.
	var calls, asked atomic.Int32
	shutdown := func(ctx context.Context) error {
		calls.Add(1)
		if _, err := os.Stat(cnf.SocketFile); err != nil {
			return nil
		}
		asked.Add(1)
		if err := os.WriteFile(cnf.SocketFile+".shutdown", nil, 0o600); err != nil {
			return err
		}
		for {
			if _, err := os.Stat(cnf.SocketFile); err != nil {
				return nil
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	start := func() *exec.Cmd {
		cmd := helper(t, "mysqld", "--defaults-file="+cnf.Path)
		cmd.Env = append(cmd.Env, "FIFO_TEST_SOCKET="+cnf.SocketFile)
		require.NoError(t, cmd.Start())
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
		// Just after exec, /proc/pid/cmdline can still be empty for a
		// moment (a CI run under load found none, and stopMysqld nothing
		// to wait for): a mysqld that runs is one /proc shows.
		require.Eventually(t, func() bool { return len(tabletProcesses(cnf)) == 1 }, 10*time.Second, 5*time.Millisecond)
		return cmd
	}

	mysqld := start()
	require.NoError(t, stopMysqld(context.Background(), cnf, 30*time.Second, shutdown, logutil.NewMemoryLogger()))
	_, alive := readProcess(mysqld.Process.Pid)
	assert.False(t, alive, "stopMysqld returned while the starting mysqld still ran")
	assert.GreaterOrEqual(t, calls.Load(), int32(2))
	assert.Equal(t, int32(1), asked.Load(), "asked once it listened")

	// One that does not stop: an error after the timeout that names it.
	require.NoError(t, os.Remove(cnf.SocketFile+".shutdown"))
	mysqld = start()
	err := stopMysqld(context.Background(), cnf, time.Second, func(context.Context) error { return nil }, logutil.NewMemoryLogger())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not stop within 1s")
	assert.Contains(t, err.Error(), strconv.Itoa(mysqld.Process.Pid)+" (")
	assert.Contains(t, err.Error(), "--defaults-file="+cnf.Path)
}

// TestRemoveStaleWorkDirs: a work directory is removed only when its owner
// is provably gone: a process of this host and PID namespace that exited,
// a pid given to another process since (same pid, other start time:
// vttablet is pid 1 again in a restarted container), or one of an earlier
// boot. Another container's (its PID namespace: a scratch directory shared
// by two pods), another host's, and a record of an earlier version (a pid
// only) are left alone, saying so.
func TestRemoveStaleWorkDirs(t *testing.T) {
	parent := t.TempDir()
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	self := procident.Self()
	require.NotEmpty(t, self.ProcStart)
	owner := func(change func(*procident.Owner)) string {
		o := self
		change(&o)
		return string(must(json.Marshal(o)))
	}
	exited := func(o *procident.Owner) { o.PID, o.ProcStart = dead.Process.Pid, "12345" }
	owners := map[string]string{
		"fifo-restore-mine":            owner(func(*procident.Owner) {}),
		"fifo-restore-reused":          owner(func(o *procident.Owner) { o.ProcStart = "1" }),
		"fifo-restore-dead":            owner(exited),
		"fifo-restore-earlier-boot":    owner(func(o *procident.Owner) { o.Boot = "another-boot" }),
		"fifo-restore-other-container": owner(func(o *procident.Owner) { exited(o); o.PIDNamespace = "pid:[4026532000]" }),
		"fifo-restore-other-host":      owner(func(o *procident.Owner) { exited(o); o.Host = "dr-host" }),
		"fifo-restore-oldformat":       fmt.Sprintf("%d 1", dead.Process.Pid),
		"fifo-restore-noowner":         "",
		"fifo-restore-emptyrecord":     "{}",
		"fifo-backup-dead":             owner(exited),
	}
	for dir, owner := range owners {
		require.NoError(t, os.MkdirAll(filepath.Join(parent, dir, "sub"), 0o750))
		if owner != "" {
			require.NoError(t, os.WriteFile(filepath.Join(parent, dir+ownerSuffix), []byte(owner), 0o600))
		}
	}
	// Owner records without their directory (a process killed in release,
	// between removing the directory and the record, or in MkdirClaimed,
	// between the record and the directory): removed once their owner is
	// gone; a live one's directory may be about to be made. Another
	// prefix's is not this call's. A file of that name that is no record
	// this code writes (an operator's, an earlier version's pid) is not
	// ours: kept.
	orphans := map[string]string{"fifo-restore-orphan": owners["fifo-restore-dead"], "fifo-restore-liveorphan": owners["fifo-restore-mine"],
		"fifo-backup-orphan": owners["fifo-restore-dead"], "fifo-restore-notes": "the restore of 29 Nov, keep",
		"fifo-restore-oldorphan": owners["fifo-restore-oldformat"], "fifo-restore-empty": "{}"}
	for orphan, record := range orphans {
		require.NoError(t, os.WriteFile(filepath.Join(parent, orphan+ownerSuffix), []byte(record), 0o600))
	}
	logger := logutil.NewMemoryLogger()
	removeStaleWorkDirs(parent, stagingDirPrefix, os.RemoveAll, logger)
	assert.NoFileExists(t, filepath.Join(parent, "fifo-restore-orphan"+ownerSuffix))
	for _, kept := range []string{"fifo-restore-liveorphan", "fifo-backup-orphan", "fifo-restore-notes", "fifo-restore-oldorphan", "fifo-restore-empty"} {
		b, err := os.ReadFile(filepath.Join(parent, kept+ownerSuffix))
		require.NoError(t, err, kept)
		assert.Equal(t, orphans[kept], string(b))
	}
	assert.FileExists(t, filepath.Join(parent, "fifo-restore-mine"+ownerSuffix), "a live owner's record stays")
	for dir, kept := range map[string]bool{"fifo-restore-mine": true, "fifo-restore-reused": false, "fifo-restore-dead": false,
		"fifo-restore-earlier-boot": false, "fifo-restore-other-container": true, "fifo-restore-other-host": true, "fifo-restore-oldformat": true,
		"fifo-restore-noowner": true, "fifo-restore-emptyrecord": true, "fifo-backup-dead": true} {
		_, err := os.Stat(filepath.Join(parent, dir))
		assert.Equal(t, kept, err == nil, "%s kept", dir)
		if !kept {
			assert.NoFileExists(t, filepath.Join(parent, dir+ownerSuffix))
		}
	}
	log := logger.String()
	assert.Contains(t, log, "fifo: left "+filepath.Join(parent, "fifo-restore-other-container")+" alone: its owner, pid "+
		fmt.Sprint(dead.Process.Pid)+" on "+self.Host+" (pid:[4026532000]), cannot be judged from this host and PID namespace")
	assert.Contains(t, log, "fifo: left "+filepath.Join(parent, "fifo-restore-oldformat")+" alone: its owner record (\""+
		fmt.Sprintf("%d 1", dead.Process.Pid)+"\") is not one this version writes (an earlier version's names a pid only, which proves "+
		"nothing of its process now): remove it by hand if no backup or restore uses it")
}
