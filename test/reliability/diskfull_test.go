//go:build linux

package reliability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/vterrors"

	"github.com/vtfifo/vtfifo/go/testutil/tier"
	"github.com/vtfifo/vtfifo/go/testutil/tmpfs"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestDiskFullDuringRestore: the tablet (VTDATAROOT, so the data directory
// and the engine's staging directory <parent of DataDir>/fifo-restore-*) lives
// on a tmpfs. When the restore opens its lanes (mysqld stopped, the old data
// deleted, staging created) the tmpfs is shrunk to what it holds plus a
// random 10-90% of the backup's stream, so extraction runs out of space
// part-way. The restore must fail with an error that says "no space left on
// device" (ENOSPC) and names the file being written, and leave nothing
// visible: no staging directory, no half tree in the data directories,
// the space given back, restore_in_progress in place and mysqld not
// started. With the tmpfs grown again, the restore run again succeeds with
// the source data (Vitess's restore_in_progress contract).
// RELIABILITY_DISKFULL_TRIALS sets the number of trials (default 3).
func TestDiskFullDuringRestore(t *testing.T) {
	tier.Integration(t, "real MariaDB and storage servers")
	n := trials(t, "RELIABILITY_DISKFULL_TRIALS", 3)
	// Big enough for the tablet and a restore of the small data set
	// (~230 MB with mysqld's redo log); tmpfs takes memory only as written.
	const roomy = 1 << 30
	// The tmpfs is registered first, so it is unmounted last, after the
	// tablet's cleanups stopped mysqld and removed VTDATAROOT.
	mnt := tmpfs.Mount(t, roomy)
	f := newFixtureIn(t, mnt)
	cfg := splitstoragetest.Local(t).Config // the backup itself is on the ordinary disk
	cfg.PartSize = 1 << 20
	f.useStorage(t, cfg)
	hook := &laneOpenHook{BackupStorage: f.st}
	backupstorage.BackupStorageMap[storageName] = hook
	ctx := context.Background()
	require.NoError(t, f.backup(ctx, nil))
	m := latestManifest(t, f)
	cnf := f.tb.Cnf
	stateFile := filepath.Join(cnf.TabletDir(), mysqlctl.RestoreState)
	t.Logf("backup: %d lanes, %d bytes of stream (%d stored); tmpfs %s: %d bytes used with mysqld running", len(m.Lanes), m.RawBytes, m.StoredBytes, mnt,
		fsUsed(t, mnt))

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	for i := range n {
		budget := m.RawBytes / 10 * int64(1+rng.IntN(9)) // 10..90% of the stream
		var atOpen struct {
			used, size  int64
			dataDirGone bool
			staging     []string
			err         error
		}
		hook.arm(func() {
			// The restore stopped mysqld, deleted the old data and created
			// its staging directory: shrink the file system to what it holds
			// now plus budget (tmpfs refuses a size below its use).
			_, err := os.Stat(cnf.DataDir)
			atOpen.dataDirGone = os.IsNotExist(err)
			// The old files, moved aside, are removed while the restore
			// runs: the space they give back is counted once they are gone.
			atOpen.err = waitOldFilesRemoved(filepath.Dir(cnf.DataDir), time.Minute)
			atOpen.staging = stagingDirs(t, cnf)
			if atOpen.err != nil {
				return
			}
			if atOpen.used, atOpen.err = statUsed(mnt); atOpen.err == nil {
				atOpen.size = atOpen.used + budget
				atOpen.err = tmpfs.Resize(mnt, atOpen.size)
			}
		})
		logger := logutil.NewMemoryLogger()
		start := time.Now()
		_, err := f.restore(ctx, logger)
		took := time.Since(start)
		require.NoError(t, atOpen.err, "trial %d: shrinking the tmpfs", i+1)
		require.NotZero(t, atOpen.size, "trial %d: the restore never opened a lane", i+1)
		require.Len(t, atOpen.staging, 1, "trial %d: one staging directory while the lanes are read", i+1)
		staging := atOpen.staging[0]
		require.Error(t, err, "trial %d: a restore with %d bytes free for a %d-byte stream must fail; log:\n%s", i+1, budget, m.RawBytes, logger.String())
		f.srv = nil
		t.Logf("trial %d/%d: %d bytes free for %d bytes of stream (%d%%): restore failed after %v: %v", i+1, n, budget, m.RawBytes, budget*100/m.RawBytes,
			took.Round(time.Millisecond), err)

		// A clear error: ENOSPC, said in words, with the path being written
		// (in the staging directory) and the backup's name.
		msg := err.Error()
		assert.True(t, errors.Is(vterrors.UnwrapAll(err), syscall.ENOSPC), "trial %d: the error must wrap ENOSPC: %v", i+1, err)
		assert.Contains(t, msg, "no space left on device", "trial %d", i+1)
		assert.Contains(t, msg, staging+string(filepath.Separator), "trial %d: the error names the file being written", i+1)
		assert.Contains(t, msg, f.list(t)[0], "trial %d: the error names the backup", i+1)
		assert.Regexp(t, regexp.QuoteMeta("the file system of "+staging+" is full: the backup needs about ")+sizeText+" there", msg, "trial %d: the "+
			"error says how much room the restore needs", i+1)
		assert.True(t, atOpen.dataDirGone, "trial %d: the old data was deleted before the lanes were read", i+1)

		// Nothing visible left behind.
		assert.Empty(t, stagingDirs(t, cnf), "trial %d: the staging directory must be removed", i+1)
		for _, dir := range []string{cnf.DataDir, cnf.InnodbDataHomeDir, cnf.InnodbLogGroupHomeDir} {
			assert.Empty(t, dirEntries(t, dir), "trial %d: %s must hold no half-restored files", i+1, dir)
		}
		used := fsUsed(t, mnt)
		assert.LessOrEqual(t, used, atOpen.used+1<<20, "trial %d: the space taken by the partial extraction must be given back (%d bytes used when the "+
			"lanes opened, %d after the failure)", i+1, atOpen.used, used)
		assert.FileExists(t, stateFile, "trial %d: restore_in_progress must stay after a failed restore", i+1)
		assert.False(t, f.mysqldRunning(), "trial %d: mysqld must not be started after a failed restore", i+1)
		t.Logf("trial %d/%d: after the failure: tmpfs %d bytes used (%d when the lanes opened), tablet dir holds %s", i+1, n, used, atOpen.used,
			strings.Join(dirEntries(t, cnf.TabletDir()), " "))

		// Space back: the restore run again succeeds.
		require.NoError(t, tmpfs.Resize(mnt, roomy))
		start = time.Now()
		logger = logutil.NewMemoryLogger()
		_, err = f.restore(ctx, logger)
		require.NoError(t, err, "trial %d: the restore run again with space must succeed; log:\n%s", i+1, logger.String())
		f.requireSourceData(t, fmt.Sprintf("trial %d: restore after the disk was grown", i+1))
		assert.NoFileExists(t, stateFile, "trial %d: restore_in_progress removed after the successful restore", i+1)
		assert.Empty(t, stagingDirs(t, cnf), "trial %d", i+1)
		t.Logf("trial %d/%d: restore run again with space: succeeded in %v, source data back", i+1, n, time.Since(start).Round(time.Millisecond))
	}
}

// TestARestoreThatCannotFitTouchesNothing: a tablet whose disk cannot
// hold the backup even once its own files are deleted (here a tmpfs: the
// backup holds 300 MB that the tablet dropped since) is refused before
// mysqld stops or a file is touched, saying how much the backup needs and
// what there is: mysqld runs with its data as before, no
// restore_in_progress, nothing beside the data directory. Before, the
// restore deleted the tablet's files, then ran out of room: the tablet
// was left empty, mysqld stopped. The same where the 300 MB are in a
// chain's delta, its full small: the check counted the full only. With
// room, the same restore succeeds.
func TestARestoreThatCannotFitTouchesNothing(t *testing.T) {
	for _, c := range []struct{ name, what string }{
		{"full", `the files of its full backup %[1]s`},
		{"chain", `the files of its full backup \S+ and of its first delta %[1]s`},
	} {
		t.Run(c.name, func(t *testing.T) { restoreThatCannotFit(t, c.name == "chain", c.what) })
	}
}

// restoreThatCannotFit is TestARestoreThatCannotFitTouchesNothing's case:
// the 300 MB in a delta on a full taken before them (chain), or in the
// full; what is the refusal's account of what takes the room.
func restoreThatCannotFit(t *testing.T, chain bool, what string) {
	const roomy = 1 << 30
	mnt := tmpfs.Mount(t, roomy)
	f := newFixtureIn(t, mnt)
	cfg := splitstoragetest.Local(t).Config // the backup itself is on the ordinary disk
	f.useStorage(t, cfg)
	ctx := context.Background()
	if chain {
		ec := engineConfig()
		ec.FullInterval = time.Hour
		f.useEngine(ec)
		require.NoError(t, f.backup(ctx, nil))
	}
	db := f.srv.DB()
	for _, q := range []string{"CREATE DATABASE room", "CREATE TABLE room.pad (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB",
		"INSERT INTO room.pad SELECT seq, REPEAT(MD5(seq), 32768) FROM room.seq_1_to_300"} {
		_, err := db.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.NoError(t, f.backup(ctx, nil))
	m := latestManifest(t, f)
	require.Equal(t, chain, m.BaseBackup != "", "the backup is a delta")
	_, err := db.ExecContext(ctx, "DROP DATABASE room")
	require.NoError(t, err)
	used, err := statUsed(mnt)
	require.NoError(t, err)
	require.NoError(t, tmpfs.Resize(mnt, used+16<<20))
	cnf := f.tb.Cnf
	parent := filepath.Dir(filepath.Clean(cnf.DataDir))
	before := dirEntries(t, parent)
	t.Logf("backup: %d bytes of stream; tmpfs %d bytes used, 16 MiB free", m.RawBytes, used)

	logger := logutil.NewMemoryLogger()
	_, err = f.restore(ctx, logger)
	require.Error(t, err, "log:\n%s", logger.String())
	names := f.list(t)
	assert.Regexp(t, fmt.Sprintf(`backup %s does not fit on this tablet: `+what+` take at least their streams' size, `+sizeText+`, and %s has `+
		sizeText+` free, `+sizeText+` with the tablet's files that a restore deletes: nothing was touched, mysqld runs with its data as before; make room `+
		`there or restore onto a larger disk`, names[len(names)-1], parent), err.Error())
	assert.True(t, f.mysqldRunning(), "mysqld runs as before")
	f.requireSourceData(t, "the tablet's data after the refused restore")
	assert.NoFileExists(t, filepath.Join(cnf.TabletDir(), mysqlctl.RestoreState))
	assert.Equal(t, before, dirEntries(t, parent), "nothing made or moved beside the data directory")

	require.NoError(t, tmpfs.Resize(mnt, roomy))
	start := time.Now()
	logger = logutil.NewMemoryLogger()
	_, err = f.restore(ctx, logger)
	require.NoError(t, err, "with room, the restore succeeds; log:\n%s", logger.String())
	f.requireSourceData(t, "restored with room")
	var rows int
	require.NoError(t, f.srv.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM room.pad").Scan(&rows))
	assert.Equal(t, 300, rows)
	t.Logf("with room: restored in %v", time.Since(start).Round(time.Millisecond))
}

// sizeText matches an amount of room as the engine's messages write it
// (go/internal/flagvalue.SizeText, which test/ cannot import).
const sizeText = `(?:\d+(?:\.\d+)? ?(?:[KMGTPE]i)?B(?: \(\d+ bytes\))?|\d+ bytes|-?\d+)`

// fsUsed returns the bytes in use on dir's file system.
func fsUsed(t testing.TB, dir string) int64 {
	used, err := statUsed(dir)
	require.NoError(t, err)
	return used
}

func statUsed(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, nil
}

// dirEntries lists dir's names; nil when dir does not exist.
func dirEntries(t testing.TB, dir string) []string {
	es, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// latestManifest reads the newest backup's MANIFEST from the storage.
func latestManifest(t testing.TB, f *fixture) *fifobackupengine.Manifest {
	bhs, err := f.st.ListBackups(context.Background(), backupDir)
	require.NoError(t, err)
	require.NotEmpty(t, bhs)
	r, err := bhs[len(bhs)-1].ReadFile(context.Background(), "MANIFEST")
	require.NoError(t, err)
	defer r.Close()
	doc, err := io.ReadAll(r)
	require.NoError(t, err)
	m, err := fifobackupengine.ParseManifest(doc)
	require.NoError(t, err)
	return m
}

// laneOpenHook is a backup storage that runs a function, once per arm,
// when a restore opens its first lane: the moment the engine has stopped
// mysqld, deleted the old data and created its staging directory, and is
// about to extract. The other lanes wait until it returns.
type laneOpenHook struct {
	backupstorage.BackupStorage
	mu   sync.Mutex
	once *sync.Once
	fn   func()
}

func (h *laneOpenHook) arm(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.once, h.fn = &sync.Once{}, fn
}

func (h *laneOpenHook) laneOpened() {
	h.mu.Lock()
	once, fn := h.once, h.fn
	h.mu.Unlock()
	if once != nil {
		once.Do(fn)
	}
}

func (h *laneOpenHook) WithParams(p backupstorage.Params) backupstorage.BackupStorage {
	return &hookedStorage{BackupStorage: h.BackupStorage.WithParams(p), h: h}
}

func (h *laneOpenHook) ListBackups(ctx context.Context, dir string) ([]backupstorage.BackupHandle, error) {
	return (&hookedStorage{BackupStorage: h.BackupStorage, h: h}).ListBackups(ctx, dir)
}

type hookedStorage struct {
	backupstorage.BackupStorage
	h *laneOpenHook
}

func (s *hookedStorage) ListBackups(ctx context.Context, dir string) ([]backupstorage.BackupHandle, error) {
	bhs, err := s.BackupStorage.ListBackups(ctx, dir)
	for i, bh := range bhs {
		bhs[i] = &hookedHandle{BackupHandle: bh, h: s.h}
	}
	return bhs, err
}

type hookedHandle struct {
	backupstorage.BackupHandle
	h *laneOpenHook
}

func (b *hookedHandle) ReadFile(ctx context.Context, name string) (io.ReadCloser, error) {
	if strings.HasPrefix(name, "lane-") {
		b.h.laneOpened()
	}
	return b.BackupHandle.ReadFile(ctx, name)
}

// waitOldFilesRemoved waits until no directory of old files a restore set
// aside is left under parent (the engine's .fifo-old-files-*).
func waitOldFilesRemoved(parent string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		left, err := filepath.Glob(filepath.Join(parent, ".fifo-old-files-*"))
		if err != nil || len(left) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the old files set aside are still there after %v: %v", wait, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
