package pathin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDirAsNamedOrResolved: a path is in a directory when it is the
// directory or below it, named directly (a link there to elsewhere too),
// through a link to it, or through a link that leads into it; a sibling
// whose name starts the same is not.
func TestDirAsNamedOrResolved(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	require.NoError(t, os.MkdirAll(filepath.Join(data, "sub"), 0o755))
	require.NoError(t, os.Symlink(data, filepath.Join(root, "link")))
	require.NoError(t, os.Symlink(filepath.Join(data, "sub"), filepath.Join(root, "elsewhere")))
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(data, "out")))
	for _, c := range []struct {
		p    string
		want bool
	}{
		{data, true},
		{filepath.Join(data, "sub", "not-yet", "there"), true},
		{filepath.Join(root, "link", "backups"), true},
		{filepath.Join(root, "elsewhere"), true},
		{filepath.Join(data, "out"), true}, // named inside, a link to elsewhere: it goes with data
		{filepath.Join(root, "data2"), false},
		{root, false},
		{"relative/../../x", false},
	} {
		assert.Equal(t, c.want, Dir(c.p, data), c.p)
	}
}
