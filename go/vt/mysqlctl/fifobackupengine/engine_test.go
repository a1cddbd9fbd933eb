package fifobackupengine

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/testutil/tabletdb"
	"github.com/vtfifo/vtfifo/go/testutil/testbin"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// standinPath is the xtrabackup stand-in (go/testutil/xtrabackupstandin),
// built once for the package's tests.
var standinPath string

func TestMain(m *testing.M) { testbin.Main(m, testbin.Standin(&standinPath)) }

const (
	testKeyspace = "ks"
	testShard    = "0"
	sampleDB     = "sample"
)

// fixture is one tablet mysqld with sample data, and the backup storage.
type fixture struct {
	t        testing.TB // the test that owns the tablet
	tb       *tabletdb.Tablet
	srv      *mariadbtest.Server
	storage  string              // storage implementation name for backupstorage
	root     string              // storage root directory
	split    splitstorage.Config // the split storage's, when it is used
	engine   string              // backup engine for backup(); "" is fifo
	static   map[string]string
	baseline map[int64]bool // rows of sample.writes restored by the last restore
}

func newFixture(t testing.TB, data mariadbtest.Options) *fixture {
	return newFixtureWith(t, data, "")
}

// newFixtureWith is newFixture with more [mysqld] lines in the tablet's
// my.cnf (tabletdb.StartWith).
func newFixtureWith(t testing.TB, data mariadbtest.Options, mysqldLines string) *fixture {
	tb := tabletdb.StartWith(t, "", mysqldLines)
	f := &fixture{t: t, tb: tb, baseline: map[int64]bool{}}
	f.srv = mariadbtest.Attach(t, tb.Cnf.SocketFile, tb.Cnf.DataDir, "vt_dba", "")
	data.Database = sampleDB
	mariadbtest.LoadSampleData(t, f.srv, data)
	f.srv.Exec(t, "CREATE TABLE sample.writes (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload VARCHAR(64) NOT NULL) ENGINE=InnoDB")
	f.static = mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes")
	require.Greater(t, len(f.static), 200, "want at least 200 tables")
	f.useSplitStorage(t)
	return f
}

// useSplitStorage stores backups in the split storage on local disk.
func (f *fixture) useSplitStorage(t testing.TB) {
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	cfg.PartSize = 32 << 20
	cfg.UploadConcurrency = 4
	f.useSplitConfig(t, cfg, cfg.File.Root)
}

// useSplitConfig stores backups in the split storage cfg describes, whose
// objects are files under root (the local backend's root, or a test
// server's data directory).
func (f *fixture) useSplitConfig(t testing.TB, cfg splitstorage.Config, root string) {
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { bs.Close() })
	backupstorage.BackupStorageMap["split-test"] = bs
	f.storage, f.root, f.split = "split-test", root, cfg
}

// useFileStorage stores backups in Vitess's own file storage, which has no
// checksums of its own: corruption must be caught by the engine.
func (f *fixture) useFileStorage(t testing.TB) {
	f.storage, f.root = "file", t.TempDir()
	filebackupstorage.FileBackupStorageRoot = f.root
}

func (f *fixture) activate(t testing.TB) {
	old := backupstorage.BackupStorageImplementation
	backupstorage.BackupStorageImplementation = f.storage
	t.Cleanup(func() { backupstorage.BackupStorageImplementation = old })
}

func testConfig(lanes int, source string, comp CompressionConfig) Config {
	return Config{
		Lanes:       lanes,
		Source:      source,
		Parallel:    4,
		FIFOTimeout: 30 * time.Second,
		UseMemory:   128 << 20,
		Progress:    2 * time.Second,
		Compression: comp,

		IncrementalBase: BaseLatest,
		MaxChainLength:  6,
	}
}

func zstdConfig() CompressionConfig {
	return CompressionConfig{Enabled: true, Engine: mysqlctl.ZstdCompressor, Level: 1, BlockSize: 250000, Blocks: 2}
}

// useEngine registers an engine with cfg under the name "fifo" for one test.
func useEngine(t testing.TB, cfg Config) {
	old := mysqlctl.BackupRestoreEngineMap[engineName]
	mysqlctl.BackupRestoreEngineMap[engineName] = New(cfg)
	t.Cleanup(func() { mysqlctl.BackupRestoreEngineMap[engineName] = old })
}

func (f *fixture) backup(t testing.TB, stats backupstats.Stats) error {
	f.activate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if stats == nil {
		stats = backupstats.NoStats()
	}
	return mysqlctl.Backup(ctx, mysqlctl.BackupParams{
		Cnf:          f.tb.Cnf,
		Mysqld:       f.tb.Mysqld,
		Logger:       logutil.NewConsoleLogger(),
		Concurrency:  4,
		Keyspace:     testKeyspace,
		Shard:        testShard,
		TabletAlias:  fmt.Sprintf("zone1-%010d", f.tb.UID),
		BackupTime:   f.tb.BackupTime(),
		Stats:        stats,
		BackupEngine: cmp.Or(f.engine, engineName),
		UpgradeSafe:  true,
	})
}

func (f *fixture) restore(t testing.TB, stats backupstats.Stats) (*mysqlctl.BackupManifest, error) {
	f.activate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if stats == nil {
		stats = backupstats.NoStats()
	}
	params := restoreParams(f, time.Now())
	params.Stats = stats
	m, err := mysqlctl.Restore(ctx, params)
	if err == nil {
		// The pool's connections died with the old mysqld.
		f.srv = mariadbtest.Attach(f.t, f.tb.Cnf.SocketFile, f.tb.Cnf.DataDir, "vt_dba", "")
	}
	return m, err
}

// restoreParams restores the newest backup at or before at.
func restoreParams(f *fixture, at time.Time) mysqlctl.RestoreParams {
	return mysqlctl.RestoreParams{
		Cnf:                  f.tb.Cnf,
		Mysqld:               f.tb.Mysqld,
		Logger:               logutil.NewConsoleLogger(),
		Concurrency:          4,
		DeleteBeforeRestore:  true,
		DbName:               sampleDB,
		Keyspace:             testKeyspace,
		Shard:                testShard,
		StartTime:            at,
		Stats:                backupstats.NoStats(),
		MysqlShutdownTimeout: time.Minute,
		AllowedBackupEngines: []string{cmp.Or(f.engine, engineName)},
	}
}

// backupHandles lists the shard's backups in the fixture's storage, oldest first.
func (f *fixture) backupHandles(t testing.TB) []backupstorage.BackupHandle {
	f.activate(t)
	bs, err := backupstorage.GetBackupStorage()
	require.NoError(t, err)
	defer bs.Close()
	bhs, err := bs.ListBackups(context.Background(), mysqlctl.GetBackupDir(testKeyspace, testShard))
	require.NoError(t, err)
	return bhs
}

func (f *fixture) listBackups(t testing.TB) []string {
	bhs := f.backupHandles(t)
	var names []string
	for _, bh := range bhs {
		names = append(names, bh.Name())
	}
	return names
}

// gtidWriter commits one row per transaction into sample.writes while a
// backup runs and records the GTID sequence number MariaDB gave each row,
// so the rows expected at the backup's position are known exactly.
type gtidWriter struct {
	mu     sync.Mutex
	seq    map[int64]uint64 // row id -> GTID sequence number
	stop   chan struct{}
	done   chan error
	domain string
}

func startWriter(t testing.TB, db *sql.DB) *gtidWriter {
	w := &gtidWriter{seq: map[int64]uint64{}, stop: make(chan struct{}), done: make(chan error, 1)}
	conn, err := db.Conn(context.Background())
	require.NoError(t, err)
	go func() {
		defer conn.Close()
		ctx := context.Background()
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				w.done <- nil
				return
			default:
			}
			res, err := conn.ExecContext(ctx, "INSERT INTO sample.writes (payload) VALUES (?)", fmt.Sprintf("row %d at %s", i, time.Now().Format(time.RFC3339Nano)))
			if err != nil {
				w.done <- err
				return
			}
			id, _ := res.LastInsertId()
			var gtid string
			if err := conn.QueryRowContext(ctx, "SELECT @@last_gtid").Scan(&gtid); err != nil {
				w.done <- err
				return
			}
			parts := strings.Split(gtid, "-")
			if len(parts) != 3 {
				w.done <- fmt.Errorf("unexpected @@last_gtid %q", gtid)
				return
			}
			seq, _ := strconv.ParseUint(parts[2], 10, 64)
			w.mu.Lock()
			w.seq[id] = seq
			w.domain = parts[0] + "-" + parts[1]
			w.mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	return w
}

func (w *gtidWriter) finish(t testing.TB) {
	close(w.stop)
	require.NoError(t, <-w.done, "the writer failed")
}

// expectedAt returns the rows committed at or before the position.
func (w *gtidWriter) expectedAt(t testing.TB, position string) map[int64]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last uint64
	found := false
	for _, g := range strings.Split(position, ",") {
		if strings.HasPrefix(g, w.domain+"-") {
			last, _ = strconv.ParseUint(strings.TrimPrefix(g, w.domain+"-"), 10, 64)
			found = true
		}
	}
	require.True(t, found, "position %q has no GTID of the writer's domain-server %s", position, w.domain)
	out := map[int64]bool{}
	for id, seq := range w.seq {
		if seq <= last {
			out[id] = true
		}
	}
	return out
}

func writtenRows(t testing.TB, db *sql.DB) map[int64]bool {
	rows, err := db.Query("SELECT id FROM sample.writes")
	require.NoError(t, err)
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		out[id] = true
	}
	require.NoError(t, rows.Err())
	return out
}

// roundTrip takes a backup while the writer commits, restores it into the
// same tablet and checks every table against the source at the backup's
// GTID position.
func (f *fixture) roundTrip(t testing.TB, cfg Config) *mysqlctl.BackupManifest {
	useEngine(t, cfg)
	before := len(f.listBackups(t))
	w := startWriter(t, f.srv.DB())
	time.Sleep(200 * time.Millisecond)
	err := f.backup(t, nil)
	w.finish(t)
	require.NoError(t, err)
	require.Len(t, f.listBackups(t), before+1)

	m, err := f.restore(t, nil)
	require.NoError(t, err)
	require.NotNil(t, m)
	require.Equal(t, engineName, m.BackupMethod)

	got := mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes")
	assert.Equal(t, f.static, got, "static tables differ after restore")
	want := w.expectedAt(t, m.Position.String())
	for id := range f.baseline {
		want[id] = true
	}
	rows := writtenRows(t, f.srv.DB())
	assert.Equal(t, len(want), len(rows), "rows in sample.writes at position %v", m.Position)
	assert.Equal(t, want, rows, "sample.writes differs from the source at position %v", m.Position)
	t.Logf("restored %v: %d writer rows at position %v (%d committed during the backup in all)", cfg.Source, len(rows), m.Position, len(w.seq))
	f.baseline = rows
	return m
}
