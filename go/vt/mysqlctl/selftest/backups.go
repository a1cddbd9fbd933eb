package selftest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"vitess.io/vitess/go/sqlescape"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/tableimport"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// store is the split storage the self-test backs up into (on local disk in
// the scratch directory, or one the operator names), registered as Vitess's
// backup storage for this process.
type store struct {
	cfg splitstorage.Config
	// dir holds this run's backups alone: keyspace/shard, the shard made
	// for the run.
	dir      string
	bs       *splitstorage.Storage
	previous string // the process's storage implementation before
}

// storageName registers the self-test's storage apart from the process's
// own "split" (the vtfifo command that runs the self-test may use it).
const storageName = "vtfifo-selftest"

func openStore(cfg splitstorage.Config, shard string) (*store, error) {
	if root := cfg.LocalRoot(); root != "" {
		if err := os.MkdirAll(root, 0o750); err != nil {
			return nil, err
		}
	}
	bs, err := splitstorage.New(cfg)
	if err != nil {
		return nil, err
	}
	st := &store{cfg: cfg, dir: mysqlctl.GetBackupDir(keyspace, shard), bs: bs, previous: backupstorage.BackupStorageImplementation}
	backupstorage.BackupStorageMap[storageName] = bs
	backupstorage.BackupStorageImplementation = storageName
	return st, nil
}

// close closes the storage and puts back what openStore changed.
func (s *store) close() {
	s.bs.Close()
	delete(backupstorage.BackupStorageMap, storageName)
	backupstorage.BackupStorageImplementation = s.previous
}

// handles lists the run's backups, oldest first.
func (s *store) handles(ctx context.Context) ([]backupstorage.BackupHandle, error) {
	return s.bs.ListBackups(ctx, s.dir)
}

// removeAll removes the run's backups, the newest first (an incremental
// before its base), and says how many.
func (s *store) removeAll(ctx context.Context) (int, error) {
	bhs, err := s.handles(ctx)
	if err != nil {
		return 0, err
	}
	for i := len(bhs) - 1; i >= 0; i-- {
		if err := s.bs.RemoveBackup(ctx, s.dir, bhs[i].Name()); err != nil {
			return len(bhs) - 1 - i, fmt.Errorf("removing %s/%s: %w", s.dir, bhs[i].Name(), err)
		}
	}
	return len(bhs), nil
}

// engineConfig is the engine's configuration for one backup.
func (r *runner) engineConfig(source string) fifobackupengine.Config {
	var prepareFlags string
	if r.keyring != nil {
		prepareFlags = r.keyring.prepareFlags
	}
	return fifobackupengine.Config{
		PrepareFlags: prepareFlags,
		ToolPath:     r.tool.Path, Lanes: r.opts.Lanes, Source: source, Parallel: 4,
		FIFOTimeout: time.Minute, UseMemory: 256 << 20,
		FullInterval: time.Hour, IncrementalBase: fifobackupengine.BaseLatest, MaxChainLength: 6,
		Compression: fifobackupengine.CompressionConfig{Enabled: true, Engine: mysqlctl.ZstdCompressor, Level: 1, BlockSize: 250000, Blocks: 2},
	}
}

// backups takes a full backup and two incremental ones: the first two
// while the writer commits rows and runs DDL, the last with the data set
// quiet, so the source's tables are what the chain must restore.
func (r *runner) backups() {
	fifo := fifobackupengine.SourceStdout
	if r.tool.FIFOStreams {
		fifo = fifobackupengine.SourceFIFO
	}
	var w *writer
	if !r.failed {
		w = startWriter(r.ctx, r.srv.db)
	}
	r.step("full backup while writing (source "+fifo+")", func() (string, error) { return r.backup(fifo, false) })
	r.step("incremental backup while writing (source stdout)", func() (string, error) { return r.backup(fifobackupengine.SourceStdout, true) })
	if w != nil {
		r.step("stop the writer, record every table", func() (string, error) {
			rows, ddl, err := w.finish()
			if err != nil {
				return "", err
			}
			if r.sums, err = tableSums(r.ctx, r.srv.db); err != nil {
				return "", err
			}
			return fmt.Sprintf("%d rows committed and %d DDL rounds during the backups; %d tables", rows, ddl, len(r.sums)), nil
		})
	}
	r.step("incremental backup at rest (source "+fifo+")", func() (string, error) { return r.backup(fifo, true) })
	if !r.tool.FIFOStreams {
		r.skip("backup through FIFO streams", fmt.Sprintf("%s has no --fifo-streams (Percona XtraBackup 8.0.33-28 and later has): every backup "+
			"read its stdout", r.tool.Version))
	}
}

// backup takes one backup through Vitess's mysqlctl.Backup, as a tablet
// does, and checks it is the kind asked for.
func (r *runner) backup(source string, delta bool) (string, error) {
	previous, had := mysqlctl.BackupRestoreEngineMap["fifo"]
	mysqlctl.BackupRestoreEngineMap["fifo"] = fifobackupengine.New(r.engineConfig(source))
	defer func() {
		if had {
			mysqlctl.BackupRestoreEngineMap["fifo"] = previous
		} else {
			delete(mysqlctl.BackupRestoreEngineMap, "fifo")
		}
	}()
	// Backup names have a one-second resolution.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	err := mysqlctl.Backup(r.ctx, mysqlctl.BackupParams{
		Cnf: r.srv.cnf, Mysqld: r.srv.mysqld, Logger: r.opts.Logger, Concurrency: 4,
		Keyspace: keyspace, Shard: r.shard, TabletAlias: fmt.Sprintf("selftest-%010d", r.srv.uid),
		BackupTime: time.Now(), Stats: backupstats.NoStats(), BackupEngine: "fifo", UpgradeSafe: true,
	})
	if err != nil {
		return "", err
	}
	m, err := r.latest()
	if err != nil {
		return "", err
	}
	if m.BaseBackup != "" != delta {
		return "", fmt.Errorf("backup %s: incremental %t, wanted %t", m.BackupName, m.BaseBackup != "", delta)
	}
	return fmt.Sprintf("%s: %d lanes, %d bytes from the tool, %d stored, source %s, position %s", m.BackupName, len(m.Lanes), m.RawBytes, m.StoredBytes,
		m.Source, m.Position), nil
}

func (r *runner) latest() (*fifobackupengine.Manifest, error) {
	bh, err := r.latestHandle()
	if err != nil {
		return nil, err
	}
	return fifobackupengine.ReadManifest(r.ctx, bh)
}

func (r *runner) latestHandle() (backupstorage.BackupHandle, error) {
	bhs, err := r.store.handles(r.ctx)
	if err != nil {
		return nil, err
	}
	if len(bhs) == 0 {
		return nil, fmt.Errorf("no backup in %s under %s", r.store.dir, r.store.cfg.Location())
	}
	return bhs[len(bhs)-1], nil
}

func (r *runner) verify() (string, error) {
	bhs, err := r.store.handles(r.ctx)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, bh := range bhs {
		rep, err := fifobackupengine.Verify(r.ctx, bh, fifobackupengine.VerifyOptions{Compression: r.engineConfig("").Compression, Logger: r.opts.Logger})
		if err != nil {
			return "", fmt.Errorf("backup %s: %w", bh.Name(), err)
		}
		parts = append(parts, fmt.Sprintf("%s: %d files, %d bytes", bh.Name(), rep.Files, rep.Bytes))
	}
	return strings.Join(parts, "; "), nil
}

func (r *runner) restoreAndCompare() (string, error) {
	bh, err := r.latestHandle()
	if err != nil {
		return "", err
	}
	var compared int
	var flags []string
	if r.keyring != nil {
		flags = r.keyring.testServerFlags
	}
	rec, err := testrestore.Run(r.ctx, bh, testrestore.Options{
		// The scratch server's my.cnf, as a tablet's restore reads its own.
		Restore:       fifobackupengine.RestoreDirOptions{Config: r.engineConfig(""), DefaultsFile: r.srv.cnf.Path, Logger: r.opts.Logger},
		ScratchParent: r.scratch, MysqldPath: r.mysqld, MysqldFlags: flags, Logger: r.opts.Logger,
		Inspect: func(ctx context.Context, db *sql.DB) error {
			got, err := tableSums(ctx, db)
			if err != nil {
				return err
			}
			compared = len(got)
			return diffSums(r.sums, got)
		},
	})
	if err != nil {
		return "", err
	}
	if rec.Outcome != testrestore.Passed {
		return "", fmt.Errorf("%s", rec.Error)
	}
	return fmt.Sprintf("%s: %d tables checked, %d rows; %d tables equal to the source (row count and CHECKSUM TABLE); %s", rec.Backup, rec.Tables,
		rec.Rows, compared, rec.Server), nil
}

// restoreTable restores one small table of the chain into a directory,
// then imports it into the scratch server under another name.
func (r *runner) restoreTable() (string, error) {
	bh, err := r.latestHandle()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(r.scratch, "table-restore")
	table := fifobackupengine.TablePattern{DB: dataDB, Table: "t0001"}
	rep, err := fifobackupengine.RestoreToDir(r.ctx, bh, dir, fifobackupengine.RestoreDirOptions{
		Config: r.engineConfig(""), Prepare: true, Tables: []fifobackupengine.TablePattern{table}, DefaultsFile: r.srv.cnf.Path, Logger: r.opts.Logger,
	})
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	defs, _, err := testrestore.Definitions(r.ctx, dir, [][2]string{{table.DB, table.Table}}, testrestore.Options{MysqldPath: r.mysqld,
		ScratchParent: r.scratch, Logger: r.opts.Logger, Plugins: rep.Manifest.ServerPlugins, Restore: fifobackupengine.RestoreDirOptions{DefaultsFile: r.srv.cnf.Path}})
	if err != nil {
		return "", err
	}
	t := rep.Tables[0]
	to := tableimport.Target{DB: dataDB, Table: "t0001_restored"}
	res, err := tableimport.Import(r.ctx, r.srv.db, tableimport.Source{DB: t.DB, Table: t.Table, Dir: dir, Files: t.Exported, Create: defs[t.Name()]},
		// The scratch server logs (Vitess's my.cnf) and nothing replicates from it.
		to, tableimport.Options{Unreplicated: true}, r.opts.Logger)
	if err != nil {
		return "", err
	}
	got := fmt.Sprintf("rows=%d checksum=%s", res.Rows, res.Checksum)
	if want := r.sums[sqlescape.EscapeID(dataDB)+".`t0001`"]; got != want {
		return "", fmt.Errorf("%s imported as %s holds %s, the source %s", table, to, got, want)
	}
	return fmt.Sprintf("%s imported as %s: %s, %d of %d stored bytes read", table, to, got, rep.ReadBytes, rep.StoredBytes), nil
}

// exportAndExtract writes the full backup as one stock xbstream into the
// tool's own extractor (xbstream -x / mbstream -x).
func (r *runner) exportAndExtract() (string, error) {
	bhs, err := r.store.handles(r.ctx)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(r.scratch, "extracted")
	if err := os.Mkdir(dir, 0o750); err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(r.ctx, r.tool.Extractor, "-x", "-C", dir)
	pipe, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	n, exportErr := fifobackupengine.Export(r.ctx, bhs[0], pipe, fifobackupengine.ExportOptions{Compression: r.engineConfig("").Compression,
		Logger: r.opts.Logger})
	pipe.Close()
	waitErr := cmd.Wait()
	if exportErr != nil {
		return "", exportErr
	}
	if waitErr != nil {
		return "", fmt.Errorf("%s -x: %v: %s", r.tool.Extractor, waitErr, strings.TrimSpace(out.String()))
	}
	files := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files++
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(dir, "backup-my.cnf")); err != nil {
		return "", fmt.Errorf("%s -x extracted %d files but no backup-my.cnf", r.tool.Extractor, files)
	}
	return fmt.Sprintf("%s: %d bytes into %s -x, %d files", bhs[0].Name(), n, filepath.Base(r.tool.Extractor), files), nil
}
