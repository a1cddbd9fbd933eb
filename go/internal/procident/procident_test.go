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

// TestOutlived: a record's process is judged gone only where its PID means
// something here: on this host and in this boot, in this PID namespace; an
// earlier boot of this host is gone whatever the PID. Another host's,
// another container's (its PID namespace), or a record that leaves out who
// it is, is never judged.
func TestOutlived(t *testing.T) {
	self := Self()
	require.NotEmpty(t, self.PIDNamespace, "/proc/self/ns/pid")
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	gone := self
	gone.PID, gone.ProcStart = dead.Process.Pid, "12345"
	with := func(change func(*Owner)) Owner {
		o := gone
		change(&o)
		return o
	}
	for name, c := range map[string]struct {
		o    Owner
		want bool
	}{
		"this process":                 {self, false},
		"a process that exited":        {gone, true},
		"its PID given to another":     {with(func(o *Owner) { o.PID, o.ProcStart = self.PID, "1" }), true},
		"an earlier boot":              {with(func(o *Owner) { o.Boot = "another-boot"; o.PIDNamespace = "" }), true},
		"another container's":          {with(func(o *Owner) { o.PIDNamespace = "pid:[1]" }), false},
		"another host's":               {with(func(o *Owner) { o.Host = "dr-host" }), false},
		"no PID namespace (before it)": {with(func(o *Owner) { o.PIDNamespace = "" }), false},
		"no start time":                {with(func(o *Owner) { o.ProcStart = "" }), false},
		"no boot":                      {with(func(o *Owner) { o.Boot = "" }), false},
		"nothing":                      {Owner{}, false},
	} {
		assert.Equal(t, c.want, self.Outlived(c.o), name)
	}
}
