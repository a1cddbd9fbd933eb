package fifobackupengine

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/procident"
	"github.com/vtfifo/vtfifo/go/testutil/testbin"
)

// claimedEnv makes the test binary a process that makes a claimed
// directory and is killed between the record and the directory of a
// second (TestAClaimedDirectoryIsSweptWhateverItsRunWasKilledIn).
const claimedEnv = "FIFO_TEST_CLAIMED_PARENT"

// TestAClaimedDirectoryIsSweptWhateverItsRunWasKilledIn: MkdirClaimed
// writes the owner record before the directory, so a run killed between
// them leaves a record, never a directory nothing claims. While its owner
// lives, a sweep keeps both (the directory may be about to be made); once
// it is killed (SIGKILL), the next sweep removes the claimed directory and
// both records. The name is short (a server's socket goes in it) and
// unclaim removes the record only.
func TestAClaimedDirectoryIsSweptWhateverItsRunWasKilledIn(t *testing.T) {
	const prefix = "vtfifo-selftest-"
	if parent := os.Getenv(claimedEnv); parent != "" {
		dir, _, err := MkdirClaimed(parent, prefix)
		require.NoError(t, err)
		_, err = claimWorkDir(filepath.Join(parent, prefix+"42")) // cut before its directory
		require.NoError(t, err)
		os.Stdout.WriteString(dir + "\n")
		select {}
	}
	parent := t.TempDir()
	child, lines := startChild(t, claimedEnv+"="+parent)
	require.True(t, lines.Scan(), "the child never made its directory")
	claimed, cut := lines.Text(), filepath.Join(parent, prefix+"42")
	assert.LessOrEqual(t, len(filepath.Base(claimed)), len(prefix)+10)
	var owner procident.Owner
	require.NoError(t, json.Unmarshal(must(os.ReadFile(claimed+ownerSuffix)), &owner))
	assert.Equal(t, child.Process.Pid, owner.PID)

	logger := logutil.NewMemoryLogger()
	SweepStale(parent, prefix, os.RemoveAll, logger)
	assert.DirExists(t, claimed, "its owner lives")
	assert.FileExists(t, claimed+ownerSuffix)
	assert.FileExists(t, cut+ownerSuffix, "a live owner's record, its directory about to be made")

	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	SweepStale(parent, prefix, os.RemoveAll, logger)
	assert.NoDirExists(t, claimed)
	assert.NoFileExists(t, claimed+ownerSuffix)
	assert.NoFileExists(t, cut+ownerSuffix)
	left, err := os.ReadDir(parent)
	require.NoError(t, err)
	assert.Empty(t, left, logger.String())

	// unclaim removes the record, never the directory.
	dir, unclaim, err := MkdirClaimed(parent, prefix)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(filepath.Base(dir), prefix))
	unclaim()
	assert.DirExists(t, dir)
	assert.NoFileExists(t, dir+ownerSuffix)
}

// startChild runs this test again as a child process with env added (the
// test's own branch for it), and returns it and its stdout's lines; it is
// killed at the test's end. As a helper it builds no program (killed, it
// would leave their directory behind).
func startChild(t *testing.T, env string) (*exec.Cmd, *bufio.Scanner) {
	child := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	child.Env = append(os.Environ(), env, testbin.HelperEnv)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill() })
	return child, bufio.NewScanner(out)
}
