package fifobackupengine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

func incrementalConfig() Config {
	cfg := testConfig(3, SourceStdout, zstdConfig())
	cfg.FullInterval = time.Hour
	return cfg
}

// changeStatic changes a few rows of an InnoDB, an Aria and a partitioned
// table (what a delta must carry) and returns every static table's checksum.
func (f *fixture) changeStatic(t *testing.T, round int) map[string]string {
	f.srv.Exec(t, "UPDATE sample.t0001 SET n = n + ? WHERE id % 7 = 0", round)
	f.srv.Exec(t, "INSERT INTO sample.t0002 (id, v, n) VALUES (?, 'added', ?)", 1000000+round, round)
	f.srv.Exec(t, "UPDATE sample.aria_t SET v = CONCAT(v, ?) WHERE id % 3 = 0", round)
	f.srv.Exec(t, "UPDATE sample.part_t SET v = CONCAT(v, ?) WHERE id % 5 = 0", round)
	return mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes")
}

// TestIncrementalChainRealMariaDB: with --fifo-backup-full-interval set, the
// second and third backups are deltas on the one before (page changes only);
// restoring the latest restores the chain to the exact data at its
// position; a restore-to-time picks the middle one; after a restore the
// next backup is a delta on the restored chain. A base removed or damaged by
// hand fails the restore before mysqld is touched, naming the base.
func TestIncrementalChainRealMariaDB(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 20, BigTableBytes: 32 << 20})
	useEngine(t, incrementalConfig())
	w, static, ms := threeBackupsUnderWriter(t, f)

	full, d1, d2 := ms[0], ms[1], ms[2]
	assert.Empty(t, full.BaseBackup, "the first backup is full")
	assert.Equal(t, "full-backuped", full.LSN.BackupType)
	assert.Equal(t, full.BackupName, d1.BaseBackup)
	assert.Equal(t, full.BackupName, d1.FullBackup)
	assert.Equal(t, 1, d1.ChainLength)
	assert.Equal(t, "incremental", d1.LSN.BackupType)
	assert.Equal(t, full.LSN.To, d1.LSN.From)
	assert.Equal(t, d1.BackupName, d2.BaseBackup)
	assert.Equal(t, full.BackupName, d2.FullBackup)
	assert.Equal(t, 2, d2.ChainLength)
	assert.Equal(t, d1.LSN.To, d2.LSN.From)
	assert.Equal(t, full.Lineage, d2.Lineage)
	assert.False(t, d2.Incremental, "every fifo backup is full in Vitess's sense")
	assert.Less(t, d1.RawBytes*3, full.RawBytes, "a delta holds the changed pages, not the data set (%d vs %d bytes)", d1.RawBytes, full.RawBytes)
	t.Logf("full %d bytes, deltas %d and %d bytes", full.RawBytes, d1.RawBytes, d2.RawBytes)

	// Into a directory without the tool's prepare, a delta is refused as a
	// request its chain contradicts (the CLI's usage error), before any
	// directory is made.
	bh, _ := f.latestBackup(t)
	dir := filepath.Join(t.TempDir(), "delta")
	_, err := RestoreToDir(context.Background(), bh, dir, RestoreDirOptions{Config: incrementalConfig(), Logger: newMemoryLogger()})
	require.Error(t, err)
	assert.True(t, flagvalue.IsContradiction(err), "%v", err)
	assert.Contains(t, err.Error(), "backup "+d2.BackupName+" is incremental (on "+d1.BackupName+"): its files are only a data directory once "+
		"the tool has applied its chain")
	assert.NoDirExists(t, dir)

	// The latest restores through its chain to its exact position.
	m, err := f.restore(t, nil)
	require.NoError(t, err)
	checkRestored(t, f, w, m, d2, static[2])

	// After the restore, the next backup is a delta on the restored chain.
	require.NoError(t, f.backup(t, nil))
	d3 := f.latestManifest(t)
	assert.Equal(t, d2.BackupName, d3.BaseBackup)
	assert.Equal(t, 3, d3.ChainLength)
	assert.NotEqual(t, d2.Lineage, d3.Lineage, "a restore starts a new lineage")

	// A restore to a time before the last delta picks the middle one
	// (BackupTime is the consistent point; StartTime the name's time).
	consistent, err := mysqlctl.ParseRFC3339(d1.BackupTime)
	require.NoError(t, err)
	m, err = f.restoreAt(t, consistent)
	require.NoError(t, err)
	checkRestored(t, f, w, m, d1, static[1])

	// The last delta damaged: it fails while it is extracted ahead, as
	// the delta before it is prepared; the error names it, and neither
	// delta's work directory is left.
	restoreDamagedDelta(t, f, d2)

	// The base removed by hand: the restore fails naming it, before mysqld
	// is stopped.
	f.srv.Exec(t, "CREATE TABLE sample.after_restore (id INT PRIMARY KEY)")
	lane := filepath.Join(f.root, testKeyspace, testShard, d1.BackupName, full.Lanes[0].File+".index")
	require.FileExists(t, lane)
	require.NoError(t, os.Rename(lane, lane+".moved"))
	_, err = f.restore(t, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "backup "+d1.BackupName+" is damaged: lane "+full.Lanes[0].File)
	assertUntouched(t, f)
	require.NoError(t, os.Rename(lane+".moved", lane))

	require.NoError(t, os.Rename(filepath.Join(f.root, testKeyspace, testShard, full.BackupName), filepath.Join(f.root, "gone")))
	_, err = f.restore(t, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "its base "+full.BackupName+" is missing")
	assertUntouched(t, f)
}

// threeBackupsUnderWriter takes three backups with the engine in use while
// a writer commits, changing the static tables before each: the checksums
// of those tables at each backup, and the backups' manifests.
func threeBackupsUnderWriter(t *testing.T, f *fixture) (*gtidWriter, [3]map[string]string, [3]*Manifest) {
	w := startWriter(t, f.srv.DB())
	var (
		static [3]map[string]string
		ms     [3]*Manifest
	)
	defer func() {
		select {
		case <-w.stop:
		default:
			w.finish(t) // a backup failed: the writer stops with the test
		}
	}()
	for i := range 3 {
		static[i] = f.changeStatic(t, i+1)
		// The tool's to_lsn is the last checkpoint: flush, so that it is
		// recent, as on a server that has run a while.
		mariadbtest.Checkpoint(t, f.srv.DB())
		require.NoError(t, f.backup(t, nil))
		ms[i] = f.latestManifest(t)
	}
	w.finish(t)
	return w, static, ms
}

// checkRestored checks that the server holds backup want's data after a
// restore returned m: the static tables as they were at the backup and the
// writer's rows exactly up to its position.
func checkRestored(t *testing.T, f *fixture, w *gtidWriter, m *mysqlctl.BackupManifest, want *Manifest, static map[string]string) {
	t.Helper()
	require.Equal(t, want.BackupName, m.BackupName)
	assert.Equal(t, static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"), "static tables at %s", want.BackupName)
	assert.Equal(t, w.expectedAt(t, m.Position.String()), writtenRows(t, f.srv.DB()), "sample.writes at %s's position %v", want.BackupName, m.Position)
}

// assertUntouched checks that a failed restore left mysqld running on its
// data, and no restore_in_progress.
func assertUntouched(t *testing.T, f *fixture) {
	t.Helper()
	var n int
	require.NoError(t, f.srv.DB().QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'sample' AND table_name = "+
		"'after_restore'").Scan(&n))
	assert.Equal(t, 1, n, "mysqld still serves its data")
	assert.NoFileExists(t, filepath.Join(f.tb.Cnf.TabletDir(), mysqlctl.RestoreState))
}

// TestIncrementalNeedsLineage: a data directory that does not descend from
// the newest backup (its lineage file gone: another engine restored it, or
// another replica took the backup) takes a full backup and says why.
func TestIncrementalNeedsLineage(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 5, BigTableBytes: 4 << 20})
	useEngine(t, incrementalConfig())
	require.NoError(t, f.backup(t, nil))
	require.NoError(t, os.Remove(filepath.Join(f.tb.Cnf.TabletDir(), lineageFileName)))
	require.NoError(t, f.backup(t, nil))
	m := f.latestManifest(t)
	assert.Empty(t, m.BaseBackup, "not a descendant: a full backup")

	// Its own next backup is a delta on it.
	require.NoError(t, f.backup(t, nil))
	d := f.latestManifest(t)
	assert.Equal(t, m.BackupName, d.BaseBackup)

	// Incrementals off: every backup is full.
	useEngine(t, testConfig(3, SourceStdout, zstdConfig()))
	require.NoError(t, f.backup(t, nil))
	assert.Empty(t, f.latestManifest(t).BaseBackup)
}

// restoreAt is restore with a restore-from-backup-ts.
func (f *fixture) restoreAt(t testing.TB, at time.Time) (*mysqlctl.BackupManifest, error) {
	f.activate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	m, err := mysqlctl.Restore(ctx, restoreParams(f, at))
	if err == nil {
		f.srv = mariadbtest.Attach(f.t, f.tb.Cnf.SocketFile, f.tb.Cnf.DataDir, "vt_dba", "")
	}
	return m, err
}

// restoreDamagedDelta flips a byte of the biggest stored file of delta d,
// the last of its chain, restores the chain into a directory and puts the
// byte back.
func restoreDamagedDelta(t *testing.T, f *fixture, d *Manifest) {
	t.Helper()
	err := restoreDamaged(t, f, d, d)
	assert.Contains(t, err.Error(), fmt.Sprintf("incremental backup %s (%d of %d)", d.BackupName, d.ChainLength, d.ChainLength))
}

// restoreDamaged restores backup restored of f's storage with damaged's
// largest object damaged, and returns the error once it has checked that
// neither the target nor any delta's work directory is left.
func restoreDamaged(t *testing.T, f *fixture, damaged, restored *Manifest) error {
	t.Helper()
	var biggest string
	var size int64
	require.NoError(t, filepath.WalkDir(filepath.Join(f.root, testKeyspace, testShard, damaged.BackupName), func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil && info.Size() > size {
				biggest, size = p, info.Size()
			}
		}
		return err
	}))
	data, err := os.ReadFile(biggest)
	require.NoError(t, err)
	data[len(data)/2] ^= 0x5a
	require.NoError(t, os.WriteFile(biggest, data, 0o640))
	defer func() {
		data[len(data)/2] ^= 0x5a
		require.NoError(t, os.WriteFile(biggest, data, 0o640))
	}()
	var bh backupstorage.BackupHandle
	for _, h := range f.backupHandles(t) {
		if h.Name() == restored.BackupName {
			bh = h
		}
	}
	require.NotNil(t, bh)
	parent := t.TempDir()
	_, restoreErr := RestoreToDir(context.Background(), bh, filepath.Join(parent, "data"), RestoreDirOptions{Config: incrementalConfig(), Prepare: true,
		Logger: newMemoryLogger()})
	require.Error(t, restoreErr)
	left, err := filepath.Glob(filepath.Join(parent, deltaDirPrefix+"*"))
	require.NoError(t, err)
	assert.Empty(t, left, "the deltas' work directories")
	assert.NoDirExists(t, filepath.Join(parent, "data"))
	return restoreErr
}

// TestDifferentialRealMariaDB: with --fifo-backup-incremental-base=full (the
// default) every delta is on the full, under a writer: each restores as the
// full + that one delta to the exact data at its position, the newest and
// an older one by time; after a restore the next backup is again a
// differential on the full, and past --fifo-backup-max-chain-length of them
// the next backup is full.
func TestDifferentialRealMariaDB(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 20, BigTableBytes: 32 << 20})
	cfg := incrementalConfig()
	cfg.IncrementalBase, cfg.MaxChainLength = BaseFull, 3
	useEngine(t, cfg)
	w, static, ms := threeBackupsUnderWriter(t, f)

	full := ms[0]
	require.Empty(t, full.BaseBackup, "the first backup is full")
	for _, x := range ms[1:] {
		assert.Equal(t, full.BackupName, x.BaseBackup, "%s: on the full", x.BackupName)
		assert.Equal(t, full.BackupName, x.FullBackup)
		assert.Equal(t, 1, x.ChainLength)
		assert.Equal(t, full.LSN.To, x.LSN.From, "%s: every change since the full", x.BackupName)
	}
	m, err := f.restore(t, nil)
	require.NoError(t, err)
	checkRestored(t, f, w, m, ms[2], static[2])
	consistent, err := mysqlctl.ParseRFC3339(ms[1].BackupTime)
	require.NoError(t, err)
	m, err = f.restoreAt(t, consistent)
	require.NoError(t, err)
	checkRestored(t, f, w, m, ms[1], static[1])

	// A differential is extracted while its full is: damaged, it fails the
	// restore naming it; the full damaged, the differential's work is
	// removed too.
	restoreDamagedDelta(t, f, ms[2])
	err = restoreDamaged(t, f, full, ms[2])
	assert.Contains(t, err.Error(), "extracting lanes")

	// Restored from the full + its first differential: the next is a
	// differential on the full (the third), then a full.
	require.NoError(t, f.backup(t, nil))
	x3 := f.latestManifest(t)
	assert.Equal(t, full.BackupName, x3.BaseBackup)
	assert.Equal(t, 1, x3.ChainLength)
	require.NoError(t, f.backup(t, nil))
	assert.Empty(t, f.latestManifest(t).BaseBackup, "a fourth differential is past --fifo-backup-max-chain-length=3")
}
