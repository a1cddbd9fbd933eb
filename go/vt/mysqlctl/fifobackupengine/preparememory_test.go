package fifobackupengine

import (
	"errors"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrepareMemory: a configured size is the prepare's; auto takes twice
// the redo to apply within 128MiB..4GiB and half of what is available
// (512MiB where the redo is not known), and the tool's default (0) when
// under 256MiB is available or it cannot be read, saying why.
func TestPrepareMemory(t *testing.T) {
	has := func(n int64) func() (int64, string, error) {
		return func() (int64, string, error) { return n, "MemAvailable in /proc/meminfo", nil }
	}
	for _, c := range []struct {
		name      string
		use, redo int64
		available func() (int64, string, error)
		want      int64
		says      string
	}{
		{"configured", 1 << 30, 10 << 30, has(100 << 30), 1 << 30, ""},
		{"tool default", 0, 10 << 30, has(100 << 30), 0, ""},
		{"auto: twice the redo", UseMemoryAuto, 900 << 20, has(22 << 30), 1800 << 20,
			"the prepare takes 1.8 GiB (--fifo-backup-use-memory=auto: twice the 900 MiB of redo to apply, at most 4.0 GiB and half of the 22 GiB available"},
		{"auto: the floor", UseMemoryAuto, 1 << 20, has(22 << 30), 128 << 20, "the prepare takes 128 MiB"},
		{"auto: the cap", UseMemoryAuto, 10 << 30, has(100 << 30), 4 << 30, "the prepare takes 4.0 GiB"},
		{"auto: half of what is available", UseMemoryAuto, 900 << 20, has(1 << 30), 512 << 20, "the prepare takes 512 MiB"},
		{"auto: redo not known", UseMemoryAuto, -1, has(22 << 30), 512 << 20, "the redo to apply is not known"},
		{"auto: too little", UseMemoryAuto, 1 << 20, has(200 << 20), 0, "the prepare takes the tool's default memory: only 200 MiB is available"},
		{"auto: unknown", UseMemoryAuto, 1 << 20, func() (int64, string, error) { return 0, "", errors.New("no /proc") }, 0,
			"what this host has available is not known (no /proc); set --fifo-backup-use-memory"},
	} {
		logger := newMemoryLogger()
		cfg := Config{UseMemory: c.use}
		assert.Equal(t, c.want, prepareMemory(&cfg, c.redo, c.available, logger), c.name)
		if c.says != "" {
			assert.Contains(t, logger.String(), c.says, c.name)
		}
	}
	assert.Equal(t, int64(-1), chainRedo([]member{{m: &Manifest{LSN: LSNs{To: "100", Last: "300"}}}, {m: &Manifest{}}}), "one not known")
	assert.Equal(t, int64(500), chainRedo([]member{{m: &Manifest{LSN: LSNs{To: "100", Last: "300"}}}, {m: &Manifest{LSN: LSNs{To: "300", Last: "800"}}}}))
}

// TestUseMemoryFlag: auto is the default and is said back; a size, 0 and
// a bad value as for any size flag.
func TestUseMemoryFlag(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	RegisterFlags(fs)
	assert.Equal(t, int64(UseMemoryAuto), flagConfig.UseMemory)
	assert.Equal(t, "auto", fs.Lookup("fifo-backup-use-memory").DefValue)
	require.NoError(t, fs.Parse([]string{"--fifo-backup-use-memory=2GiB"}))
	assert.Equal(t, int64(2<<30), flagConfig.UseMemory)
	require.NoError(t, fs.Parse([]string{"--fifo-backup-use-memory=auto"}))
	assert.Equal(t, int64(UseMemoryAuto), flagConfig.UseMemory)
	require.NoError(t, flagConfig.Validate())
	err := fs.Parse([]string{"--fifo-backup-use-memory=-1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "allowed values are auto (twice the redo to apply, 128MiB..4GiB, at most half of what this host or its cgroup has available), 0 (tool default) or a size")
}
