package s3

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrivateFileWhereNoMemoryFile: the fallback where the kernel has no
// memfd_create: a file only this user can read, in a private directory,
// both gone once removed.
func TestPrivateFileWhereNoMemoryFile(t *testing.T) {
	parent := t.TempDir()
	path, remove, err := privateFile(parent, "[default]\naws_access_key_id = A\n")
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "[default]\naws_access_key_id = A\n", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	remove()
	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	assert.Empty(t, entries)
}
