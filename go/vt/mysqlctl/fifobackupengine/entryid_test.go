package fifobackupengine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFileMadeAgainIsAnotherEntry: a file removed and made again by its
// name is not the file it replaced, though the file system gives it the
// freed inode number (ext4 does at once: the test's /tmp), and the same
// birth time (the clock's coarse tick): its file handle (the inode's
// generation) tells them apart. A rename keeps the identity. (With the
// inode alone, a restore removing what it made would remove the operator's
// file: it failed so before the handle.)
func TestAFileMadeAgainIsAnotherEntry(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ibdata1")
	reused := 0
	for range 20 {
		require.NoError(t, os.WriteFile(p, []byte("restored"), 0o640))
		mine, err := idOf(p)
		require.NoError(t, err)
		require.True(t, mine.isStill(p))
		require.NoError(t, os.Remove(p))
		require.NoError(t, os.WriteFile(p, []byte("theirs"), 0o640))
		theirs, err := idOf(p)
		require.NoError(t, err)
		if theirs.Ino == mine.Ino {
			reused++
		}
		assert.False(t, mine.isStill(p), "the file made again is another")
		require.NoError(t, os.Remove(p))
	}
	t.Logf("the inode number was given again %d times of 20", reused)

	require.NoError(t, os.WriteFile(p, nil, 0o640))
	id, err := idOf(p)
	require.NoError(t, err)
	assert.NotEmpty(t, id.Handle, "this file system gives file handles")
	moved := p + ".moved"
	require.NoError(t, os.Rename(p, moved))
	assert.True(t, id.isStill(moved), "a rename keeps it")
	_, err = idOf(p)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
