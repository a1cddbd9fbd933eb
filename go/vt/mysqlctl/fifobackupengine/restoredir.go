package fifobackupengine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// RestoreDirOptions configures RestoreToDir.
type RestoreDirOptions struct {
	// Config gives the tool (for Prepare) and the local decompressor
	// settings, as a tablet's restore uses them.
	Config Config
	// Prepare runs the tool's --prepare after the extraction, so the
	// directory is a data directory mysqld starts on.
	Prepare bool
	// DefaultsFile is the tool's --defaults-file for --prepare; empty reads
	// no option file (the tool reads the backup's backup-my.cnf itself).
	DefaultsFile string
	// Tables, if set, restores only these tables (TablePattern: db.table,
	// db.*) and the files the tool needs to prepare them, read from only the
	// frames that hold them where the backup has a lane index; the tool
	// prepares with --export (Prepare must be set), leaving each table's
	// .ibd (one per partition) with its .cfg, and its .frm on MariaDB, for
	// ALTER TABLE ... IMPORT TABLESPACE. The directory is then a data
	// directory with only those tables.
	Tables []TablePattern
	// CheckTables has the tool validate every index's B-tree during the last
	// prepare where it can (Percona XtraBackup 8.4.0-6 and 9.7.1:
	// --check-tables): the structure, not the contents. A test restore's
	// first, cheap tier.
	CheckTables bool
	// OnTables, if set, is called with the tables a table restore (Tables)
	// restores once they are known: before any of their frames is read
	// where the backup has a lane index, after its lanes are read where it
	// has none. Its error stops the restore.
	OnTables func([]TableFiles) error
	// ManifestDoc, if set, is the backup's MANIFEST as already read
	// (ReadAnyManifest, ReadManifestDoc), so that a caller that looked at
	// it first does not have it read again; nil reads it.
	ManifestDoc []byte
	// OnManifest, if set, is called once the MANIFEST is read and checked.
	OnManifest func(*Manifest)
	// OnRead is called with the stored bytes read from a lane (progress).
	OnRead func(lane int, n int)
	// LeaveStaged leaves the restored files in the target directory's own
	// subdirectory (the report's Target.Files()) for the caller, which works
	// on them there and ends the restore with Target.Done (the files move up
	// into the directory) or Target.RemoveRestored: so that what the
	// caller's own steps write beside them (a throwaway server's files) is
	// the restore's too, and goes with it.
	LeaveStaged bool
	// OnPhase, if set, is called as each phase begins: PhaseDownload (a
	// backup's lanes read and extracted), PhasePrepare (the tool's prepare);
	// once per backup of an incremental chain.
	OnPhase func(phase string)
	Stats   backupstats.Stats
	Logger  logutil.Logger
}

// RestoreDirReport is what RestoreToDir did.
type RestoreDirReport struct {
	Manifest *Manifest
	Files    int
	Bytes    int64
	// Tool is the tool that prepared the files ("" without Prepare).
	Tool string
	// Chain is what was restored, full first (one backup unless it is
	// incremental).
	Chain []string
	// Tables is what a table restore restored (Options.Tables), with
	// Exported the files it left for each (relative to the directory).
	Tables []RestoredTable
	// Work is what restoring the chain takes (its streams, redo and
	// prepares), which a timed restore teaches the predictions.
	Work RestoreWork
	// ReadBytes is the stored bytes read, every backup of the chain;
	// StoredBytes what the chain holds; ReadStreamBytes and StreamBytes the
	// same before compression.
	ReadBytes, StoredBytes       int64
	ReadStreamBytes, StreamBytes int64
	// Target is the directory restored into.
	Target TargetDir
}

// restorable is the backup's MANIFEST, from ManifestDoc or read.
func (o RestoreDirOptions) restorable(ctx context.Context, bh backupstorage.BackupHandle) (*Manifest, *vitessStream, error) {
	if o.ManifestDoc != nil {
		return parseRestorable(bh.Name(), o.ManifestDoc)
	}
	return readRestorable(ctx, bh)
}

// RestoredTable is one table of a table restore.
type RestoredTable struct {
	TableFiles
	Exported []string
}

// RestoreToDir restores a backup into dir with no Vitess process, topology
// or tablet: the lanes read in parallel and extracted as a tablet's restore
// extracts them (every chunk's CRC32, every lane's length against the
// MANIFEST), then, with Prepare, the tool's --prepare, which leaves a data
// directory mysqld starts on (--datadir=dir; the tool's own metadata files,
// xtrabackup_* / mariadb_backup_* and backup-my.cnf, stay beside the data).
// dir must not exist or be empty: nothing in it is ever overwritten. On any
// error what RestoreToDir wrote is removed (dir too if it created it).
func RestoreToDir(ctx context.Context, bh backupstorage.BackupHandle, dir string, opts RestoreDirOptions) (RestoreDirReport, error) {
	var rep RestoreDirReport
	if opts.Logger == nil {
		opts.Logger = logutil.NewConsoleLogger()
	}
	m, stream, err := opts.restorable(ctx, bh)
	if err != nil {
		return rep, err
	}
	if stream != nil {
		return restoreVitessStream(ctx, bh, m, stream, dir, opts)
	}
	rep.Manifest = m
	if opts.OnManifest != nil {
		opts.OnManifest(m)
	}
	run := &restoreRun{cfg: opts.Config, bh: bh, m: m, stats: newPhaseStats(opts.Stats), logger: opts.Logger, onRead: opts.OnRead, onPhase: opts.OnPhase,
		checkTables: opts.CheckTables, scope: wholeBackup{}}
	var tables *tableRestore
	if opts.Tables != nil {
		if !opts.Prepare {
			return rep, errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "a table restore prepares the files (with --export): set Prepare")
		}
		tables = &tableRestore{subset: tableSubset{patterns: opts.Tables}, logger: opts.Logger, onTables: opts.OnTables, dir: dir}
		run.scope = tables
	}
	// The tool is checked before anything is downloaded.
	var tool *backupTool
	if opts.Prepare {
		if tool, err = detectTool(ctx, &run.cfg); err != nil {
			return rep, err
		}
		if err := run.checkTool(tool); err != nil {
			return rep, err
		}
	}
	if err := run.findChain(ctx); err != nil {
		return rep, err
	}
	if opts.Prepare {
		if err := checkRestoreKeys(run.chain, opts.DefaultsFile, opts.Logger); err != nil {
			return rep, err
		}
	}
	if len(run.chain) > 1 && !opts.Prepare {
		return rep, flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s is incremental (on %s): its files are only a "+
			"data directory once the tool has applied its chain %v; restore it with --prepare", m.BackupName, m.BaseBackup,
			chainNames(run.chain)))
	}
	if tables == nil { // a table restore checks each backup's frames (roomFor)
		if err := checkTargetRoom(dir, run.chain, opts.Prepare); err != nil {
			return rep, err
		}
	}
	if rep.Target, err = claimEmptyDir(dir); err != nil {
		return rep, err
	}
	start := time.Now()
	err = run.restoreChain(ctx, tool, opts.DefaultsFile, rep.Target.Files())
	if err == nil && opts.Prepare {
		rep.Tool = tool.Flavor + " " + tool.Version
	}
	if err == nil && !opts.LeaveStaged {
		err = rep.Target.Done(opts.Prepare, opts.Logger)
	}
	opts.Logger.Infof("%s", run.stats.Table(fmt.Sprintf("fifo restore %s into %s: per-phase stats", bh.Name(), dir), time.Since(start)))
	if err != nil {
		_ = rep.Target.RemoveRestored()
		return rep, errtext.Wrapf(err, "fifo restore of backup %s into %s failed", bh.Name(), dir)
	}
	rep.Files, rep.Bytes = countFiles(rep.Target.FilesNow())
	rep.Chain = chainNames(run.chain)
	rep.ReadBytes = run.readBytes.Load()
	manifests := make([]*Manifest, len(run.chain))
	for i, c := range run.chain {
		rep.StoredBytes += c.m.StoredBytes
		manifests[i] = c.m
	}
	rep.Work = WorkOf(manifests)
	rep.StreamBytes = rep.Work.StreamBytes
	if tables != nil {
		rep.ReadStreamBytes = tables.readStreamBytes
		for _, t := range tables.tables {
			rep.Tables = append(rep.Tables, RestoredTable{TableFiles: *t, Exported: exportedFiles(t)})
		}
	}
	return rep, nil
}

// countFiles returns the regular files under dir and their bytes.
func countFiles(dir string) (files int, bytes int64) {
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				files++
				bytes += fi.Size()
			}
		}
		return nil
	})
	return files, bytes
}
