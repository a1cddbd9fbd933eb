package splitstorage_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/testutil/tmpfs"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// The spool's disk is promised before data moves: a backup reserves its
// uploads at StartBackup, each file one part at AddFile. What does not fit
// is refused there, naming the directory, the space and the flags, and
// stores nothing; closing a file makes room again.
func TestSpoolSpaceIsCheckedBeforeData(t *testing.T) {
	cfg := splitstoragetest.Local(t).Config
	cfg.SpoolDir = t.TempDir()
	cfg.PartSize = 4 << 20
	cfg.UploadConcurrency = 2
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	ctx := context.Background()

	splitstorage.SetFreeSpaceForTest(t, 7<<20) // less than the 2 uploads' 8 MiB
	_, err = bs.StartBackup(ctx, "ks/0", "nospace")
	require.Error(t, err)
	for _, want := range []string{cfg.SpoolDir, "--split-storage-spool-dir", "--split-storage-upload-concurrency=2", "--split-storage-part-size=4MiB",
		"needs 8MiB", "7MiB are free"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Equal(t, "the spool directory's disk lacks room", unreadable.HostFault(err), "this host's disk: no verdict on anything")
	bhs, err := bs.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	assert.Empty(t, bhs, "a refused backup must store nothing")

	splitstorage.SetFreeSpaceForTest(t, 24<<20) // the uploads and 4 files
	bh, err := bs.StartBackup(ctx, "ks/0", "writers")
	require.NoError(t, err)
	writable := bh.(interface{ WritableFilesAtOnce() int })
	assert.Equal(t, 4, writable.WritableFilesAtOnce())
	var open []io.WriteCloser
	for _, name := range []string{"a", "b", "c", "d"} {
		w, err := bh.AddFile(ctx, name, -1)
		require.NoError(t, err)
		open = append(open, w)
	}
	assert.Equal(t, 0, writable.WritableFilesAtOnce())
	_, err = bh.AddFile(ctx, "e", -1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "file e: one part of --split-storage-part-size=4MiB")
	assert.Contains(t, err.Error(), "--fifo-backup-lanes")

	require.NoError(t, open[0].Close())
	assert.Equal(t, 1, writable.WritableFilesAtOnce())
	w, err := bh.AddFile(ctx, "f", -1)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	for _, w := range open[1:] {
		require.NoError(t, w.Close())
	}
	require.NoError(t, bh.AbortBackup(ctx))
	reserved, live := bs.SpoolForTest(ctx)
	assert.Zero(t, reserved)
	assert.Zero(t, live)
}

// Spool files have no name: while parts are being written the spool
// directory stays empty, so a process killed at any moment leaves nothing
// there, and the space comes back when the parts are uploaded.
func TestSpoolFilesHaveNoName(t *testing.T) {
	cfg := splitstoragetest.Local(t).Config
	cfg.SpoolDir = t.TempDir()
	cfg.PartSize = 4 << 20
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	bh, err := bs.StartBackup(ctx, "ks/0", "noname")
	require.NoError(t, err)
	w, err := bh.AddFile(ctx, "a", -1)
	require.NoError(t, err)
	_, err = w.Write(make([]byte, 3<<20)) // most of a part, still in the spool
	require.NoError(t, err)
	_, live := bs.SpoolForTest(ctx)
	assert.Equal(t, int64(3<<20), live)
	entries, err := os.ReadDir(cfg.SpoolDir)
	require.NoError(t, err)
	assert.Empty(t, entries, "a spool file has a name")
	require.NoError(t, w.Close())
	require.NoError(t, bh.EndBackup(ctx))
	_, live = bs.SpoolForTest(ctx)
	assert.Zero(t, live)
}

// Wait (Vitess v25's BackupHandle) returns once no upload is in flight, with
// the errors recorded for the backup's files.
func TestWaitReportsRecordedErrors(t *testing.T) {
	bs, err := splitstorage.New(splitstoragetest.Local(t).Config)
	require.NoError(t, err)
	ctx := context.Background()
	bh, err := bs.StartBackup(ctx, "ks/0", "wait")
	require.NoError(t, err)
	waiter := bh.(interface{ Wait() error })
	w, err := bh.AddFile(ctx, "a", -1)
	require.NoError(t, err)
	_, err = w.Write(make([]byte, 3<<20))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, waiter.Wait())
	bh.RecordError("b", errors.New("lane b failed"))
	require.ErrorContains(t, waiter.Wait(), "lane b failed")
	require.NoError(t, bh.AbortBackup(ctx))
}

// Small writes are gathered before they reach the spool file (a gzip stream
// writes a few hundred bytes at a time); writes of every size, mixed and
// across part boundaries, come back byte for byte, with an abort in the
// middle of a buffered part leaving the spool's account at zero.
func TestWritesOfEverySize(t *testing.T) {
	cfg := splitstoragetest.Local(t).Config
	cfg.SpoolDir = t.TempDir()
	cfg.PartSize = 1 << 20
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	sizes := []int{1, 255, 4096, 64<<10 - 1, 64 << 10, 64<<10 + 1, 300 << 10, 2 << 20, 7}
	var want []byte
	data := make([]byte, 3<<20)
	_, err = io.ReadFull(newGen(7, int64(len(data))), data)
	require.NoError(t, err)

	bh, err := bs.StartBackup(ctx, "ks/0", "sizes")
	require.NoError(t, err)
	w, err := bh.AddFile(ctx, "a", -1)
	require.NoError(t, err)
	for i := 0; len(want) < 9<<20; i++ {
		n := sizes[i%len(sizes)]
		p := data[(i*4099)%(len(data)-n):][:n]
		_, err := w.Write(p)
		require.NoError(t, err)
		want = append(want, p...)
	}
	require.NoError(t, w.Close())
	require.NoError(t, bh.EndBackup(ctx))
	r, err := findBackup(t, bs, "ks/0", "sizes").ReadFile(ctx, "a")
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, len(want), len(got))
	require.True(t, string(want) == string(got), "the file read back differs from what was written")
	reserved, live := bs.SpoolForTest(ctx)
	assert.Zero(t, reserved)
	assert.Zero(t, live)

	bh, err = bs.StartBackup(ctx, "ks/0", "aborted")
	require.NoError(t, err)
	w, err = bh.AddFile(ctx, "a", -1)
	require.NoError(t, err)
	_, err = w.Write(data[:100<<10]) // on disk
	require.NoError(t, err)
	_, err = w.Write(data[:100]) // buffered
	require.NoError(t, err)
	require.NoError(t, bh.AbortBackup(ctx))
	require.Error(t, w.Close(), "closing a file of an aborted backup")
	reserved, live = bs.SpoolForTest(ctx)
	assert.Zero(t, reserved)
	assert.Zero(t, live)
}

// File storage spools its parts in its own root when no spool directory is
// set: each upload then links the part (no copy), and the root shows no
// name for a part being filled. A spool set elsewhere, or an object store,
// keeps the parts in the temporary directory and copies them.
func TestFileStorageSpoolsInItsRoot(t *testing.T) {
	cfg := splitstoragetest.Local(t).Config
	dir, linked := splitstorage.SpoolPlaceForTest(cfg)
	if dir != cfg.File.Root {
		t.Skipf("the test's temporary directory %s takes no O_TMPFILE (spool: %s)", cfg.File.Root, dir)
	}
	require.True(t, linked)

	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	bh, err := bs.StartBackup(ctx, "ks/0", "linked")
	require.NoError(t, err)
	w, err := bh.AddFile(ctx, "a", -1)
	require.NoError(t, err)
	data := make([]byte, cfg.PartSize*5/2)
	for i := range data {
		data[i] = byte(i * 7 / 3)
	}
	_, err = w.Write(data)
	require.NoError(t, err)
	var names []string
	require.NoError(t, filepath.WalkDir(cfg.File.Root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, strings.TrimPrefix(p, cfg.File.Root))
		}
		return err
	}))
	for _, n := range names {
		assert.NotContains(t, n, "spool", "a part being filled has a name in the root")
	}
	require.NoError(t, w.Close())
	require.NoError(t, bh.EndBackup(ctx))
	_, live := bs.SpoolForTest(ctx)
	assert.Zero(t, live)
	bhs, err := bs.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 1)
	r, err := bhs[0].ReadFile(ctx, "a")
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, data, got)

	other := cfg
	other.SpoolDir = os.TempDir()
	dir, linked = splitstorage.SpoolPlaceForTest(other)
	assert.Equal(t, os.TempDir(), dir)
	var a, b unix.Stat_t
	if unix.Stat(os.TempDir(), &a) == nil && unix.Stat(cfg.File.Root, &b) == nil && a.Dev != b.Dev {
		assert.False(t, linked, "a spool on another file system is linked")
	}

	s3 := splitstoragetest.TestConfig()
	s3.Backend, s3.S3.Bucket = splitstorage.BackendS3, "b"
	dir, linked = splitstorage.SpoolPlaceForTest(s3)
	assert.Equal(t, os.TempDir(), dir)
	assert.False(t, linked)
}

// TestTheSpoolLeavesRoomOnItsDisk: the spool never promises the last 1 % of
// its file system, which it may share with a live mysqld (the spool on the
// data disk): on a 100 MiB tmpfs with 8.5 MiB free, a backup whose two
// uploads need 8 MiB is refused before it stores anything, where it was
// taken and could have left the disk 0.5 MiB from full under a server;
// with 10 MiB free it starts. A real file system, not the seam.
func TestTheSpoolLeavesRoomOnItsDisk(t *testing.T) {
	mnt := tmpfs.Mount(t, 100<<20)
	cfg := splitstoragetest.Local(t).Config
	cfg.SpoolDir = mnt
	cfg.PartSize = 4 << 20
	cfg.UploadConcurrency = 2
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	fill := func(free int64) {
		var st syscall.Statfs_t
		require.NoError(t, syscall.Statfs(mnt, &st))
		filler := filepath.Join(mnt, "filler")
		have, _ := os.Stat(filler)
		size := int64(st.Bavail)*st.Bsize - free
		if have != nil {
			size += have.Size()
		}
		require.NoError(t, os.WriteFile(filler, make([]byte, size), 0o600))
	}

	fill(8<<20 + 512<<10)
	_, err = bs.StartBackup(ctx, "ks/0", "2026-12-03.000000.zone1-0000000100")
	require.Error(t, err)
	assert.Equal(t, "split storage: the spool directory "+mnt+" (--split-storage-spool-dir) cannot hold backup ks/0/2026-12-03.000000.zone1-0000000100: "+
		"--split-storage-upload-concurrency=2 uploads of --split-storage-part-size=4MiB: it needs 8MiB, and 7680KiB are free there beyond the 0 bytes "+
		"promised to the files and backups of this process and the 1MiB left to whatever else writes there (1% of its file system): free space "+
		"there, point --split-storage-spool-dir at a larger disk, or lower --split-storage-part-size, --split-storage-upload-concurrency or the "+
		"files written at once (for the fifo engine, --fifo-backup-lanes)", err.Error())
	assert.Equal(t, "the spool directory's disk lacks room", unreadable.HostFault(err))
	bhs, err := bs.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	assert.Empty(t, bhs, "a refused backup stores nothing")

	fill(10 << 20)
	bh, err := bs.StartBackup(ctx, "ks/0", "2026-12-03.000001.zone1-0000000100")
	require.NoError(t, err)
	require.NoError(t, bh.AbortBackup(ctx))
}
