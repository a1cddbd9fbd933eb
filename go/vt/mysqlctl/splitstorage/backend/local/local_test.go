package local_test

import (
	"context"
	"fmt"
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

// TestALinkIsListedAsItIsRead: List follows a symbolic link as Get and
// Stat do: a shard's directory moved to another disk and linked in place
// is a directory holding its objects, a linked object has its target's
// size, and a link that leads nowhere is no object. Before, the linked
// directory was an object of the link's own size, and the fleet view, which
// lists directories, never saw the shard.
func TestALinkIsListedAsItIsRead(t *testing.T) {
	ctx := context.Background()
	root, elsewhere := t.TempDir(), t.TempDir()
	b, err := local.New(root)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(elsewhere, "0", "b1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "0", "b1", "lane-000.part-00000001"), []byte("twelve bytes"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "part"), []byte("five!"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "ks"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "0"), filepath.Join(root, "ks", "0")))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "part"), filepath.Join(elsewhere, "0", "b1", "lane-001.part-00000001")))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "nowhere"), filepath.Join(elsewhere, "0", "b1", "lane-002.part-00000001")))

	shards, err := b.List(ctx, "ks/", true)
	require.NoError(t, err)
	assert.Equal(t, []backend.ObjectInfo{{Key: "ks/0/", Dir: true}}, shards)
	for _, prefix := range []string{"ks/", "ks/0/", "ks/0/b1/"} {
		objs, err := b.List(ctx, prefix, false)
		require.NoError(t, err, prefix)
		var got []string
		for _, o := range objs {
			got = append(got, fmt.Sprintf("%s %d", o.Key, o.Size))
		}
		assert.Equal(t, []string{"ks/0/b1/lane-000.part-00000001 12", "ks/0/b1/lane-001.part-00000001 5"}, got, prefix)
	}
	info, err := b.Stat(ctx, "ks/0/b1/lane-001.part-00000001")
	require.NoError(t, err)
	assert.EqualValues(t, 5, info.Size, "Stat and List agree")
}
