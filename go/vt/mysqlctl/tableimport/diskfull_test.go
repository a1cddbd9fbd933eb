package tableimport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/testutil/tmpfs"
)

// TestImportOnAFullDisk: the live server's data directory is on a tmpfs
// with less room than the table's tablespace: the import is refused
// before anything is created, saying what it writes and what is free (it
// copied until the disk was full, where a live server stops when it
// cannot write its binary log). Where the disk fills up after that check
// (another writer: here the tmpfs shrunk just before the copy), the copy
// fails with ENOSPC and the import is undone (nothing under the target's
// name, no reserved table or file, the space given back). With room again
// the same import succeeds.
func TestImportOnAFullDisk(t *testing.T) {
	w := wideOnTmpfs(t)
	mnt, srv, src, ibd, to, used := w.mnt, w.srv, w.src, w.ibd, w.to, w.used
	ctx := context.Background()
	resize := func(size int64) {
		require.NoError(t, tmpfs.Resize(mnt, size))
	}
	requireNothingLeft := func(what string, before int64) {
		require.NoError(t, Absent(ctx, srv.DB(), to), what)
		left, err := Leftovers(ctx, srv.DB(), to)
		require.NoError(t, err)
		assert.Empty(t, left, what)
		files, _ := filepath.Glob(filepath.Join(srv.DataDir, "d", ReservedPrefix+"*"))
		assert.Empty(t, files, "%s: no reserved file left", what)
		assert.LessOrEqual(t, used(), before+ibd.Size()/10, "%s: the space is given back", what)
	}

	before := used()
	resize(before + ibd.Size()/3)
	_, err := Import(ctx, srv.DB(), src, to, Options{}, logutil.NewMemoryLogger())
	require.Error(t, err)
	assert.Regexp(t, `^d\.wide: the live server's file system of the data directory \(`+srv.DataDir+`\) has [0-9]+ bytes free, and the import `+
		`writes about [0-9]+ there: it would leave less than [0-9]+ \(a tenth of that, or 1% of the file system\) for the server's own writes, `+
		`and a server that cannot write its binary log stops: nothing was created in the live server; make room there$`, err.Error())
	assert.ErrorIs(t, err, ErrNoRoom)
	requireNothingLeft("refused", before)
	assert.Equal(t, before, used(), "nothing written")

	resize(1 << 30)
	execHook = func(q string) error {
		if strings.HasSuffix(q, " DISCARD TABLESPACE") {
			resize(used() + ibd.Size()/3) // another writer took the room
		}
		return nil
	}
	_, err = Import(ctx, srv.DB(), src, to, Options{}, logutil.NewMemoryLogger())
	execHook = nil
	require.ErrorContains(t, err, "no space left on device")
	assert.ErrorContains(t, err, "undone: nothing of it is left in the live server")
	requireNothingLeft("filled after the check", before)

	resize(1 << 30)
	res, err := Import(ctx, srv.DB(), src, to, Options{}, logutil.NewMemoryLogger())
	require.NoError(t, err)
	assert.Equal(t, int64(60000), res.Rows)
	assert.Equal(t, w.want, mariadbtest.Checksums(t, srv.DB(), "d")["wide_r"])
}

// TestAReplicatedImportOnADiskThatHoldsOneCopy: an import through the
// binary log writes the table's bytes three times on a server whose data
// directory and binary log share a file system (its local copy, the copy
// through the log, the log's events). With room for one and a half, it is
// refused before anything is created, naming both; before, the local copy
// took the room and the copy through the log filled the disk under a live
// server writing its binary log. With room, the same import succeeds.
func TestAReplicatedImportOnADiskThatHoldsOneCopy(t *testing.T) {
	w := wideOnTmpfs(t, "--server-id=11", "--log-bin=primary-bin", "--binlog-format=ROW")
	srv, src, to := w.srv, w.src, w.to
	ctx := context.Background()
	require.NoError(t, tmpfs.Resize(w.mnt, w.used()+w.ibd.Size()*3/2))

	_, err := ImportReplicated(ctx, srv.DB(), src, to, Options{}, logutil.NewMemoryLogger())
	require.Error(t, err)
	assert.Regexp(t, `^d\.wide: the live server's file system of the data directory and the binary log \(\S+\) has [0-9]+ bytes free, and the `+
		`import writes about [0-9]+ there: .*: nothing was created in the live server; make room there$`, err.Error())
	for _, t2 := range []Target{to, LocalName(to), CopyName(to)} {
		require.NoError(t, Absent(ctx, srv.DB(), t2))
	}
	left, err := Leftovers(ctx, srv.DB(), to)
	require.NoError(t, err)
	assert.Empty(t, left)

	require.NoError(t, tmpfs.Resize(w.mnt, 1<<30))
	_, err = ImportReplicated(ctx, srv.DB(), src, to, Options{}, logutil.NewMemoryLogger())
	require.NoError(t, err)
	assert.Equal(t, w.want, mariadbtest.Checksums(t, srv.DB(), "d")["wide_r"])
}

// wideTable is a live server on a tmpfs of its own (its data directory
// included) holding d.wide, 60000 rows, and that table restored from a
// prepared backup of it.
type wideTable struct {
	t    *testing.T
	mnt  string
	srv  *mariadbtest.Server
	src  Source
	ibd  os.FileInfo // the restored tablespace
	to   Target      // where the tests import it
	want string      // its checksum
}

// used is the bytes in use on the tmpfs.
func (w wideTable) used() int64 {
	var st syscall.Statfs_t
	require.NoError(w.t, syscall.Statfs(w.mnt, &st))
	return int64(st.Blocks-st.Bfree) * int64(st.Bsize)
}

func wideOnTmpfs(t *testing.T, serverArgs ...string) wideTable {
	w := wideTable{t: t, mnt: tmpfs.Mount(t, 1<<30), to: Target{"d", "wide_r"}}
	w.srv = mariadbtest.Start(t, mariadbtest.WithParentDir(w.mnt), mariadbtest.WithArgs(serverArgs...))
	w.srv.Exec(t, "CREATE DATABASE d")
	w.srv.Exec(t, "CREATE TABLE d.wide (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB")
	w.srv.Exec(t, "INSERT INTO d.wide SELECT seq, REPEAT(MD5(seq), 6) FROM d.seq_1_to_60000")
	w.want = mariadbtest.Checksums(t, w.srv.DB(), "d")["wide"]
	w.src = restoredTable(t, w.srv, "wide")
	var err error
	w.ibd, err = os.Stat(filepath.Join(w.src.Dir, "d", "wide.ibd"))
	require.NoError(t, err)
	return w
}
