package faultyfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFaultsReachTheReader: through the mount a file reads as it is, fails
// with the errno named while its fault stands, and reads again once healed.
func TestFaultsReachTheReader(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "f"), []byte("data"), 0o644))
	f := Mount(t, dir)
	path := filepath.Join(f.Dir, "a", "f")

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "data", string(b))

	f.Fail("a/f", Read, syscall.EIO)
	_, err = os.ReadFile(path)
	assert.True(t, errors.Is(err, syscall.EIO), "%v", err)
	f.Fail("a/f", Open, syscall.ESTALE)
	_, err = os.Open(path)
	assert.True(t, errors.Is(err, syscall.ESTALE), "%v", err)

	f.Heal("a/f")
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "data", string(b))
	require.NoError(t, os.WriteFile(filepath.Join(f.Dir, "a", "g"), []byte("new"), 0o644))
	b, err = os.ReadFile(filepath.Join(dir, "a", "g"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(b), "writes reach the directory")
}
