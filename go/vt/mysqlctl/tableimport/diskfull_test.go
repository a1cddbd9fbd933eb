package tableimport

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/testutil/tmpfs"
)

// TestImportOnAFullDisk: the live server's data directory is on a tmpfs,
// shrunk before an import to less than the table's tablespace: the copy
// into the database directory fails with ENOSPC, the import is undone
// (nothing under the target's name, no reserved table or file, the space
// given back), and with room again the same import succeeds.
func TestImportOnAFullDisk(t *testing.T) {
	mnt := tmpfs.Mount(t, 1<<30)
	srv := mariadbtest.Start(t, mariadbtest.WithParentDir(mnt)) // its data directory included
	srv.Exec(t, "CREATE DATABASE d")
	srv.Exec(t, "CREATE TABLE d.wide (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB")
	srv.Exec(t, "INSERT INTO d.wide SELECT seq, REPEAT(MD5(seq), 6) FROM d.seq_1_to_60000")
	want := mariadbtest.Checksums(t, srv.DB(), "d")["wide"]
	src := restoredTable(t, srv, "wide")
	ctx := context.Background()
	ibd, err := os.Stat(filepath.Join(src.Dir, "d", "wide.ibd"))
	require.NoError(t, err)
	to := Target{"d", "wide_r"}

	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(mnt, &st))
	used := int64(st.Blocks-st.Bfree) * int64(st.Bsize)
	resize := func(size int64) {
		require.NoError(t, tmpfs.Resize(mnt, size))
	}
	resize(used + ibd.Size()/3)
	_, err = Import(ctx, srv.DB(), src, to, Options{}, logutil.NewMemoryLogger())
	require.ErrorContains(t, err, "no space left on device")
	assert.ErrorContains(t, err, "undone: nothing of it is left in the live server")
	require.NoError(t, Absent(ctx, srv.DB(), to))
	left, err := Leftovers(ctx, srv.DB(), to)
	require.NoError(t, err)
	assert.Empty(t, left)
	files, _ := filepath.Glob(filepath.Join(srv.DataDir, "d", ReservedPrefix+"*"))
	assert.Empty(t, files, "no reserved file left")
	require.NoError(t, syscall.Statfs(mnt, &st))
	assert.LessOrEqual(t, int64(st.Blocks-st.Bfree)*int64(st.Bsize), used+ibd.Size()/10, "the space is given back")

	resize(1 << 30)
	res, err := Import(ctx, srv.DB(), src, to, Options{}, logutil.NewMemoryLogger())
	require.NoError(t, err)
	assert.Equal(t, int64(60000), res.Rows)
	assert.Equal(t, want, mariadbtest.Checksums(t, srv.DB(), "d")["wide_r"])
}
