package diskspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The room is what statfs gives an unprivileged writer, and a path that is
// not there is an error, never room.
func TestOf(t *testing.T) {
	dir := t.TempDir()
	free, size, err := Of(dir)
	require.NoError(t, err)
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	assert.Equal(t, int64(st.Blocks)*int64(st.Bsize), size)
	assert.Positive(t, free)
	assert.LessOrEqual(t, free, size)
	assert.LessOrEqual(t, free, int64(st.Bfree)*int64(st.Bsize), "root's reserve is not room")

	_, _, err = Of(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
