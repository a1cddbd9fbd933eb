package reliability

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testBackupRoot is the engine's committed test backup, in Vitess's file
// storage (ks/0).
const testBackupRoot = "../../go/vt/mysqlctl/fifobackupengine/testdata/backup-3baf113-fifo"

// TestAClosedOutputIsAnInterrupt: the vtfifo binary whose output's reader
// goes away stops as on Ctrl-C: export to a pipe closed after its first
// bytes exits 3 saying its output was closed, and restore whose stderr is
// a pipe closed from the start exits 3 and leaves no target directory.
// Before, Go's default killed vtfifo by SIGPIPE at its next write, as under
// kill -9, and the restore left its directory and work files behind.
func TestAClosedOutputIsAnInterrupt(t *testing.T) {
	args := []string{"--backup-storage-implementation=file", "--file-backup-storage-root=" + testBackupRoot, "--keyspace=ks", "--shard=0",
		"--progress=never"}

	export := exec.Command(vtfifoBin, append([]string{"export", "-o", "-"}, args...)...)
	var stderr strings.Builder
	export.Stderr = &stderr
	out, err := export.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, export.Start())
	_, err = io.ReadFull(out, make([]byte, 1000))
	require.NoError(t, err)
	require.NoError(t, out.Close())
	assert.Equal(t, 3, exitCode(t, export.Wait()), "%s", stderr.String())
	// Whether the broken write or the interrupt is seen first, the line
	// names both.
	assert.Contains(t, stderr.String(), "vtfifo export: interrupted (its output was closed (SIGPIPE: the command reading it exited)): ")
	assert.True(t, strings.HasSuffix(stderr.String(), "nothing says the backup is damaged\n"), stderr.String())

	target := filepath.Join(t.TempDir(), "restored")
	restore := exec.Command(vtfifoBin, append([]string{"restore", "--target-dir=" + target, "--progress=always"}, args...)...)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, r.Close())
	var stdout strings.Builder
	restore.Stdout, restore.Stderr = &stdout, w
	require.NoError(t, restore.Start())
	require.NoError(t, w.Close())
	assert.Equal(t, 3, exitCode(t, restore.Wait()), "%s", stdout.String())
	assert.Empty(t, stdout.String())
	assert.NoDirExists(t, target)
}

// exitCode is the status of a finished command (-1 where a signal ended it).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	ee, ok := err.(*exec.ExitError)
	require.True(t, ok, "%v", err)
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Logf("ended by %v", ws.Signal())
	}
	return ee.ExitCode()
}
