package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
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

// TestDeletingKeepsALinkedDirectory: a shard's directory, or a backup's,
// moved to another disk and linked in place is the operator's link.
// Deleting a backup's last object removes the directories it leaves empty
// and stops at a link: before, it removed the shard's link (os.Remove
// takes a link whatever its target holds), and every other backup of the
// shard left the storage; a linked backup's link went at its first
// object, and the rest of the backup was left behind, unlisted. A link to
// another object of the storage is refused: deleting through it deleted a
// good backup's completion marker.
func TestDeletingKeepsALinkedDirectory(t *testing.T) {
	ctx := context.Background()
	root, elsewhere := t.TempDir(), t.TempDir()
	b, err := local.New(root)
	require.NoError(t, err)
	for _, dir := range []string{"0/b1", "0/b2", "b3"} {
		require.NoError(t, os.MkdirAll(filepath.Join(elsewhere, dir), 0o755))
		for _, f := range []string{"MANIFEST.index", "MANIFEST.part-00000001"} {
			require.NoError(t, os.WriteFile(filepath.Join(elsewhere, dir, f), []byte("x"), 0o644))
		}
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "ks", "1"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "0"), filepath.Join(root, "ks", "0")))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "b3"), filepath.Join(root, "ks", "1", "b3")))
	keys := func(prefix string) []string {
		objs, err := b.List(ctx, prefix, false)
		require.NoError(t, err)
		var got []string
		for _, o := range objs {
			got = append(got, o.Key)
		}
		return got
	}
	for _, key := range []string{"ks/0/b1/MANIFEST.index", "ks/0/b1/MANIFEST.part-00000001", "ks/1/b3/MANIFEST.index"} {
		require.NoError(t, b.Delete(ctx, key))
	}
	assert.Equal(t, []string{"ks/0/b2/MANIFEST.index", "ks/0/b2/MANIFEST.part-00000001"}, keys("ks/0/"))
	assert.Equal(t, []string{"ks/1/b3/MANIFEST.part-00000001"}, keys("ks/1/b3/"))
	require.NoError(t, b.Delete(ctx, "ks/1/b3/MANIFEST.part-00000001"))
	assert.Empty(t, keys("ks/1/b3/"))
	assert.Equal(t, []string{"ks/0/b2/MANIFEST.index", "ks/0/b2/MANIFEST.part-00000001"}, keys("ks/0/"))
	for _, link := range []string{"ks/0", "ks/1/b3"} {
		fi, err := os.Lstat(filepath.Join(root, link))
		require.NoError(t, err, link)
		assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), link)
	}
	_, err = os.Stat(filepath.Join(elsewhere, "0", "b1"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a backup's own directory left empty goes")

	// A backup's directory linked to another's in the root is an alias:
	// deleting through it would delete the other backup's objects.
	require.NoError(t, os.Symlink("b2", filepath.Join(elsewhere, "0", "alias")))
	err = b.Delete(ctx, "ks/0/alias/MANIFEST.index")
	require.True(t, flagvalue.IsContradiction(err), "%v", err)
	assert.EqualError(t, err, "ks/0/alias/MANIFEST.index is ks/0/b2/MANIFEST.index of this storage, through a symbolic link: deleting it "+
		"would delete that object, which is not this one; the link is the operator's to remove")
	assert.Equal(t, []string{"ks/0/alias/MANIFEST.index", "ks/0/alias/MANIFEST.part-00000001"}, keys("ks/0/alias/"))
}
