package hostmem

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// TestAvailable: the smallest of the host's MemAvailable and the room
// under each limit of the process's cgroup and its ancestors (v2 and v1);
// "max" and missing files are no limit.
func TestAvailable(t *testing.T) {
	dir := t.TempDir()
	meminfo := filepath.Join(dir, "meminfo")
	write(t, meminfo, "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   8388608 kB\n")
	self := filepath.Join(dir, "self-cgroup")
	root := filepath.Join(dir, "cgroup")

	write(t, self, "0::/system.slice/vttablet.service\n")
	n, by, err := available(meminfo, self, root)
	require.NoError(t, err)
	assert.Equal(t, int64(8<<30), n, "no cgroup files: the host's")
	assert.Equal(t, "MemAvailable in "+meminfo, by)

	write(t, filepath.Join(root, "system.slice/vttablet.service/memory.max"), "max\n")
	write(t, filepath.Join(root, "system.slice/vttablet.service/memory.current"), "1000\n")
	write(t, filepath.Join(root, "system.slice/memory.max"), "4294967296\n")
	write(t, filepath.Join(root, "system.slice/memory.current"), "1073741824\n")
	n, by, err = available(meminfo, self, root)
	require.NoError(t, err)
	assert.Equal(t, int64(3<<30), n, "an ancestor's limit")
	assert.Contains(t, by, "memory.max less memory.current in "+filepath.Join(root, "system.slice"))

	write(t, self, "12:cpu,cpuacct:/x\n9:memory:/docker/abc\n")
	write(t, filepath.Join(root, "memory/docker/abc/memory.limit_in_bytes"), "2147483648\n")
	write(t, filepath.Join(root, "memory/docker/abc/memory.usage_in_bytes"), "3221225472\n")
	n, _, err = available(meminfo, self, root)
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "v1, over its limit: nothing")

	write(t, meminfo, "MemTotal: 1 kB\n")
	_, _, err = available(meminfo, self, root)
	assert.ErrorContains(t, err, "has no MemAvailable")
}
