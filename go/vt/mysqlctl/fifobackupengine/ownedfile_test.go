package fifobackupengine

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/procident"
)

// TestAnOwnedFileOfAGoneProcessIsSwept: CreateOwnedFile names its file for
// the process making it, and first removes the files of its prefix named
// for a process provably gone (an export killed with SIGKILL leaves its
// partial file), saying so. Its own process's, another prefix's, another
// host's, and a name this code did not make (an operator's) are kept.
func TestAnOwnedFileOfAGoneProcessIsSwept(t *testing.T) {
	dir := t.TempDir()
	const prefix = ".e.xb.partial-"
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	self := procident.Self()
	gone, otherHost := self, self
	gone.PID, gone.ProcStart = dead.Process.Pid, "12345"
	otherHost.Host, otherHost.PID = "dr-host", dead.Process.Pid
	left := filepath.Join(dir, workDirName(prefix, gone, "0123456789abcdef"))
	kept := []string{
		filepath.Join(dir, workDirName(prefix, self, "0123456789abcdef")),
		filepath.Join(dir, workDirName(".other.xb.partial-", gone, "0123456789abcdef")),
		filepath.Join(dir, workDirName(prefix, otherHost, "0123456789abcdef")),
		filepath.Join(dir, prefix+"12345-1-operators-copy"),
	}
	for _, p := range append([]string{left}, kept...) {
		require.NoError(t, os.WriteFile(p, []byte("partial"), 0o600))
	}
	logger := logutil.NewMemoryLogger()
	f, err := CreateOwnedFile(dir, prefix, logger)
	require.NoError(t, err)
	defer f.Close()
	assert.NoFileExists(t, left)
	assert.Contains(t, logger.String(), "removed "+left+", left by a run whose process")
	for _, p := range kept {
		assert.FileExists(t, p)
	}
	owner, ours := nameOwner(prefix, filepath.Base(f.Name()), self)
	assert.True(t, ours, f.Name())
	assert.Equal(t, self.PID, owner.PID)
	st, err := f.Stat()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.True(t, strings.HasPrefix(filepath.Base(f.Name()), prefix))
}
