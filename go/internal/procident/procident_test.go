package procident

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunning: this process runs, a process that exited does not, and a
// live PID recorded with another start time is another process.
func TestRunning(t *testing.T) {
	self := os.Getpid()
	start := Start(self)
	require.NotEmpty(t, start, "/proc/self/stat")
	assert.True(t, Running(self, start))
	assert.True(t, Running(self, ""), "a record without a start time: the PID alone")
	assert.False(t, Running(self, start+"0"), "the PID given to a later process")
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	assert.False(t, Running(cmd.Process.Pid, ""), "an exited process")
	assert.Len(t, BootID(), 36)
}
