package reliability

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAStoppedSelfTestLeavesNoServer: vtfifo selftest stopped (Ctrl-C,
// SIGTERM) while its scratch server starts undoes itself: exit 3,
// `interrupted (...)`, no process left on its work directory and nothing
// left in it. Before 2026-12-02 it left the scratch server running on a
// directory it then deleted: Vitess's shutdown returns at once for a mysqld
// that has no socket yet, and one whose accounts are not made yet cannot be
// shut down through the server. A hangup (SIGHUP: the terminal or the ssh
// session closed) does not stop it, as it stops no Vitess binary (Vitess
// reloads its credentials on SIGHUP, nohup or not): the run goes on.
func TestAStoppedSelfTestLeavesNoServer(t *testing.T) {
	for _, c := range []struct {
		name    string
		signals []syscall.Signal
		cause   string
	}{
		{"ctrl-c", []syscall.Signal{syscall.SIGINT}, "interrupt signal received"},
		{"sigterm", []syscall.Signal{syscall.SIGTERM}, "terminated signal received"},
		{"hangup-then-ctrl-c", []syscall.Signal{syscall.SIGHUP, syscall.SIGINT}, "interrupt signal received"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The scratch server runs as the mysql user when this is root:
			// t.TempDir's parent is not traversable by others.
			work, err := os.MkdirTemp("", "vtfifo-signals-")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(work) })
			require.NoError(t, os.Chmod(work, 0o755))
			cmd := exec.Command(vtfifoBin, "selftest", "--work-dir="+work, "--quiet")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-done
				for pid := range processesNaming(work) { // what a failed run left
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})

			for deadline := time.Now().Add(2 * time.Minute); len(processesNaming(work)) == 0; {
				require.True(t, time.Now().Before(deadline), "the scratch server never started:\n%s", stderr.String())
				select {
				case err := <-done:
					done <- err
					t.Fatalf("the self-test ended (%v) before its scratch server started:\n%s", err, stderr.String())
				case <-time.After(20 * time.Millisecond):
				}
			}
			for i, sig := range c.signals {
				require.NoError(t, cmd.Process.Signal(sig))
				if i < len(c.signals)-1 {
					select {
					case err := <-done:
						done <- err
						t.Fatalf("%v stopped the run (%v):\n%s", sig, err, stderr.String())
					case <-time.After(2 * time.Second):
					}
				}
			}
			err = <-done
			done <- err // for the cleanup
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "stderr:\n%s", stderr.String())
			assert.Equal(t, 3, ee.ExitCode(), "stderr:\n%s", stderr.String())
			assert.Contains(t, stderr.String(), "vtfifo selftest: interrupted ("+c.cause+"): nothing says the backup is damaged")
			assert.Empty(t, processesNaming(work), "no process is left on the work directory")
			left, err := os.ReadDir(work)
			require.NoError(t, err)
			assert.Empty(t, left, "nothing is left in the work directory")
		})
	}
}

// processesNaming maps the processes (other than vtfifo) whose command line
// names dir to their command lines.
func processesNaming(dir string) map[int]string {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	out := map[int]string{}
	for _, c := range cmdlines {
		b, err := os.ReadFile(c)
		pid, perr := strconv.Atoi(filepath.Base(filepath.Dir(c)))
		if err == nil && perr == nil && strings.Contains(string(b), dir) && !strings.HasPrefix(string(b), vtfifoBin) {
			out[pid] = strings.ReplaceAll(string(b), "\x00", " ")
		}
	}
	return out
}

// TestAKilledSelfTestsServerIsEndedByTheNext: vtfifo selftest killed with
// SIGKILL once its scratch server runs leaves that server running (Vitess
// starts it through mysqld_safe, out of reach of a parent-death signal) and
// its directory; the next self-test under the same --work-dir ends the
// server and removes the directory (its owner record names a process that
// is gone), then passes, and leaves nothing there.
func TestAKilledSelfTestsServerIsEndedByTheNext(t *testing.T) {
	work, err := os.MkdirTemp("", "vtfifo-signals-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	require.NoError(t, os.Chmod(work, 0o755))
	t.Cleanup(func() {
		for pid := range processesNaming(work) { // what a failed run left
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	killed := exec.Command(vtfifoBin, "selftest", "--work-dir="+work, "--quiet")
	require.NoError(t, killed.Start())
	serving := func() bool { // its socket is there, and a process on it
		sockets, _ := filepath.Glob(filepath.Join(work, "vtfifo-selftest-*", "vt_*", "mysql.sock"))
		return len(sockets) > 0 && len(processesNaming(work)) > 0
	}
	require.Eventually(t, serving, 2*time.Minute, 20*time.Millisecond, "the scratch server never started")
	require.NoError(t, killed.Process.Kill())
	_ = killed.Wait()
	time.Sleep(time.Second)
	require.True(t, serving(), "the killed run's scratch server runs on")

	next := exec.Command(vtfifoBin, "selftest", "--work-dir="+work)
	var stdout, stderr strings.Builder
	next.Stdout, next.Stderr = &stdout, &stderr
	require.NoError(t, next.Run(), "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	assert.Contains(t, stdout.String(), "vtfifo selftest: PASSED")
	assert.Regexp(t, `fifo: removed `+work+`/vtfifo-selftest-\d+ left by a run whose process \(`+strconv.Itoa(killed.Process.Pid)+`\) is gone`,
		stderr.String())
	assert.Empty(t, processesNaming(work), "no process is left on the work directory")
	left, err := os.ReadDir(work)
	require.NoError(t, err)
	assert.Empty(t, left, "nothing is left in the work directory")
}
