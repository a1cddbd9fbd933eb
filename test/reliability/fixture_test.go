// Package reliability runs the fifo engine and the split storage through
// faults, crashes, corruption and bad input, end to end: a real MariaDB
// tablet (go/testutil/tabletdb), real mariabackup, Vitess's own
// mysqlctl.Backup and mysqlctl.Restore, the split storage on local disk or
// on real S3/GCS servers (versitygw, fake-gcs-server) behind a fault proxy.
// docs/reliability.md lists every scenario, its trial count and outcome.
package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/testutil/tabletdb"
	"github.com/vtfifo/vtfifo/go/testutil/testbin"
	"github.com/vtfifo/vtfifo/go/testutil/tier"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

const (
	keyspace = "ks"
	shard    = "0"
	sampleDB = "sample"
	// storageName is where each test registers its split storage instance.
	storageName = "split-reliability"
)

var backupDir = mysqlctl.GetBackupDir(keyspace, shard)

// Binaries built once for the package: fifoverify, vtfifo and the backup/restore
// process that the SIGKILL scenarios kill.
var (
	fifoverifyBin string
	vtfifoBin     string
	backupprocBin string
	standinBin    string // the xtrabackup stand-in (go/testutil/xtrabackupstandin)
)

func TestMain(m *testing.M) {
	testbin.Main(m,
		testbin.Program{Package: "github.com/vtfifo/vtfifo/go/cmd/fifoverify", Name: "fifoverify", Path: &fifoverifyBin},
		testbin.Program{Package: "github.com/vtfifo/vtfifo/go/cmd/vtfifo", Name: "vtfifo", Path: &vtfifoBin},
		testbin.Program{Package: "github.com/vtfifo/vtfifo/test/reliability/internal/backupproc", Name: "backupproc", Path: &backupprocBin},
		testbin.Standin(&standinBin))
}

// trials returns def, or the count in env var name (the full counts of the
// issue where the default is smaller; docs/reliability.md says which).
func trials(t testing.TB, name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "%s=%q", name, v)
		return n
	}
	return def
}

// fixture is one tablet mysqld with small sample data, the engine and a
// split storage.
type fixture struct {
	t      testing.TB
	tb     *tabletdb.Tablet
	srv    *mariadbtest.Server
	source map[string]string // CHECKSUM TABLE + row count of every table at load
	cfg    splitstorage.Config
	st     *splitstorage.Storage
}

// smallData: a few MB (50 tables, a 4 MB table, Aria/MyISAM/partitioned).
var smallData = mariadbtest.Options{Database: sampleDB, Tables: 50, RowsPerTable: 10, BigTableBytes: 4 << 20}

func engineConfig() fifobackupengine.Config {
	return fifobackupengine.Config{
		Lanes:           3,
		Source:          fifobackupengine.SourceStdout,
		Parallel:        2,
		FIFOTimeout:     30 * time.Second,
		UseMemory:       64 << 20,
		IncrementalBase: fifobackupengine.BaseLatest,
		MaxChainLength:  6,
		Compression:     fifobackupengine.CompressionConfig{Enabled: true, Engine: mysqlctl.ZstdCompressor, Level: 1, BlockSize: 250000, Blocks: 2},
	}
}

func newFixture(t *testing.T) *fixture {
	return newFixtureIn(t, "")
}

// newFixtureIn is newFixture with the tablet's VTDATAROOT created under
// parent ("" = the system's temp dir).
func newFixtureIn(t *testing.T, parent string) *fixture {
	tier.Integration(t, "real MariaDB and storage servers")
	tb := tabletdb.StartIn(t, parent)
	f := &fixture{t: t, tb: tb}
	f.srv = mariadbtest.Attach(t, tb.Cnf.SocketFile, tb.Cnf.DataDir, "vt_dba", "")
	mariadbtest.LoadSampleData(t, f.srv, smallData)
	f.source = mariadbtest.Checksums(t, f.srv.DB(), sampleDB)
	require.GreaterOrEqual(t, len(f.source), 50)

	old := mysqlctl.BackupRestoreEngineMap["fifo"]
	mysqlctl.BackupRestoreEngineMap["fifo"] = fifobackupengine.New(engineConfig())
	t.Cleanup(func() { mysqlctl.BackupRestoreEngineMap["fifo"] = old })
	oldImpl := backupstorage.BackupStorageImplementation
	backupstorage.BackupStorageImplementation = storageName
	t.Cleanup(func() {
		backupstorage.BackupStorageImplementation = oldImpl
		delete(backupstorage.BackupStorageMap, storageName)
	})
	return f
}

// useStorage makes the tests' storage the one with cfg.
func (f *fixture) useStorage(t testing.TB, cfg splitstorage.Config) *splitstorage.Storage {
	s, err := splitstorage.New(cfg)
	require.NoError(t, err)
	backupstorage.BackupStorageMap[storageName] = s
	f.cfg, f.st = cfg, s
	return s
}

// useEngine makes the fixture's backups and restores run the engine with
// ec (newFixture puts Vitess's map back at the test's end).
func (f *fixture) useEngine(ec fifobackupengine.Config) {
	mysqlctl.BackupRestoreEngineMap["fifo"] = fifobackupengine.New(ec)
}

func (f *fixture) backup(ctx context.Context, logger logutil.Logger) error {
	if logger == nil {
		logger = logutil.NewMemoryLogger()
	}
	return mysqlctl.Backup(ctx, mysqlctl.BackupParams{
		Cnf:          f.tb.Cnf,
		Mysqld:       f.tb.Mysqld,
		Logger:       logger,
		Concurrency:  2,
		Keyspace:     keyspace,
		Shard:        shard,
		TabletAlias:  fmt.Sprintf("zone1-%010d", f.tb.UID),
		BackupTime:   f.tb.BackupTime(),
		Stats:        backupstats.NoStats(),
		BackupEngine: "fifo",
		UpgradeSafe:  true,
	})
}

func (f *fixture) restore(ctx context.Context, logger logutil.Logger) (*mysqlctl.BackupManifest, error) {
	if logger == nil {
		logger = logutil.NewMemoryLogger()
	}
	m, err := mysqlctl.Restore(ctx, restoreParams(f.tb, logger))
	if err == nil {
		f.srv = mariadbtest.Attach(f.t, f.tb.Cnf.SocketFile, f.tb.Cnf.DataDir, "vt_dba", "")
	}
	return m, err
}

func restoreParams(tb *tabletdb.Tablet, logger logutil.Logger) mysqlctl.RestoreParams {
	return mysqlctl.RestoreParams{
		Cnf:                  tb.Cnf,
		Mysqld:               tb.Mysqld,
		Logger:               logger,
		Concurrency:          2,
		DeleteBeforeRestore:  true,
		DbName:               sampleDB,
		Keyspace:             keyspace,
		Shard:                shard,
		StartTime:            time.Now(),
		Stats:                backupstats.NoStats(),
		MysqlShutdownTimeout: time.Minute,
		AllowedBackupEngines: []string{"fifo"},
	}
}

func (f *fixture) list(t testing.TB) []string {
	bhs, err := f.st.ListBackups(context.Background(), backupDir)
	require.NoError(t, err)
	var names []string
	for _, bh := range bhs {
		names = append(names, bh.Name())
	}
	return names
}

// requireSourceData checks every table against the source.
func (f *fixture) requireSourceData(t testing.TB, what string) {
	got := mariadbtest.Checksums(t, f.srv.DB(), sampleDB)
	require.Equal(t, f.source, got, "%s: restored data differs from the source", what)
}

// mysqldRunning says whether the tablet's mysqld answers.
func (f *fixture) mysqldRunning() bool {
	_, err := os.Stat(f.tb.Cnf.SocketFile)
	return err == nil
}

// stagingDirs lists the tablet's restore staging directories: those there
// and those whose owner record (DIR.owner) is.
func stagingDirs(t testing.TB, cnf *mysqlctl.Mycnf) []string {
	m, err := filepath.Glob(filepath.Join(filepath.Dir(filepath.Clean(cnf.DataDir)), "fifo-restore-*"))
	require.NoError(t, err)
	for i := range m {
		m[i] = strings.TrimSuffix(m[i], ".owner")
	}
	slices.Sort(m)
	return slices.Compact(m)
}
