package local_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
)

// TestObjectsTakeTheRootsOwner: a process running as root (sudo vtfifo
// test-restore) writes objects and directories owned as the root directory
// is (the tablet's user), so that user reads and removes them.
func TestObjectsTakeTheRootsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs to run as root: only root writes files another user owns")
	}
	root := filepath.Join(t.TempDir(), "backups")
	require.NoError(t, os.Mkdir(root, 0o750))
	const uid, gid = 65534, 65534 // nobody, nogroup
	require.NoError(t, os.Chown(root, uid, gid))
	b, err := local.New(root)
	require.NoError(t, err)
	doc := []byte(`{"outcome":"passed"}`)
	require.NoError(t, b.Put(context.Background(), "ks/0/backup/.sidecar-verification", bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{}))
	for _, p := range []string{"ks", "ks/0", "ks/0/backup", "ks/0/backup/.sidecar-verification"} {
		st, err := os.Stat(filepath.Join(root, p))
		require.NoError(t, err)
		sys := st.Sys().(*syscall.Stat_t)
		assert.Equal(t, [2]uint32{uid, gid}, [2]uint32{sys.Uid, sys.Gid}, p)
	}
}
