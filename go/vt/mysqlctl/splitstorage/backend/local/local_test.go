package local_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/backendtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
)

func TestConformance(t *testing.T) {
	b, err := local.New(t.TempDir())
	require.NoError(t, err)
	backendtest.Run(t, b)
}

// TestADirectoryIsNoObject: a directory where an object's file would be is
// no object to Get, as to Stat and List: not found at once, never a read
// failing on and on (it was retried for a minute, then called broken).
func TestADirectoryIsNoObject(t *testing.T) {
	root := t.TempDir()
	b, err := local.New(root)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "ks", "0", "b1", "MANIFEST.part-00000001"), 0o755))
	_, err = b.Get(context.Background(), "ks/0/b1/MANIFEST.part-00000001", 0, -1)
	require.ErrorIs(t, err, backend.ErrNotExist)
	assert.EqualError(t, err, "object does not exist: ks/0/b1/MANIFEST.part-00000001 is a directory")
	_, err = b.Stat(context.Background(), "ks/0/b1/MANIFEST.part-00000001")
	require.ErrorIs(t, err, backend.ErrNotExist)
}
