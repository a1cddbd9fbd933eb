// Package testrestore proves a fifo backup restorable by starting it: the
// backup restored and prepared into a scratch directory, a throwaway mysqld
// started on it (its own socket, no network, no replication, no events),
// CHECK TABLE and a row count on every table, mysqld stopped and the scratch
// directory removed. The outcome is a Record, which the caller stores beside
// the backup's MANIFEST (vtfifo test-restore, vtbackup
// --fifo-backup-test-restore).
package testrestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// Options configures Run.
type Options struct {
	// Restore configures the restore; it always prepares.
	Restore fifobackupengine.RestoreDirOptions
	// ScratchParent holds the scratch directory (default: os.TempDir()). It
	// needs room for the whole restored backup.
	ScratchParent string
	// MysqldPath is the server binary; empty looks for mysqld, then mariadbd,
	// under $VT_MYSQL_ROOT, in PATH and in /usr/sbin.
	MysqldPath string
	// MysqldFlags are added to the throwaway mysqld's command line (e.g.
	// --lower-case-table-names=1, which MySQL 8 needs as it was at initialize).
	MysqldFlags []string
	// BufferPool is the throwaway mysqld's --innodb-buffer-pool-size.
	BufferPool int64
	// StartTimeout bounds mysqld's start (crash recovery included).
	StartTimeout time.Duration
	// Plugins are those the backup's server had loaded (its MANIFEST's
	// ServerPlugins, which Run reads itself): the throwaway server loads
	// their storage engines as well as the backup's mysql.plugin.
	Plugins []fifobackupengine.ServerPlugin
	// CheckConcurrency is how many tables are checked at once.
	CheckConcurrency int
	// Inspect, if set, is called with the throwaway server once its tables
	// are checked (vtfifo selftest compares them with their source); its
	// error fails the test restore.
	Inspect func(ctx context.Context, db *sql.DB) error
	// OnPhase, if set, is called as each phase begins: the restore's
	// (Restore.OnPhase: download, prepare), then PhaseStart (the throwaway
	// mysqld) and PhaseCheck (CHECK TABLE and the row counts).
	OnPhase func(phase string)
	Logger  logutil.Logger
}

// The phases of a test restore after those of the restore.
const (
	PhaseStart = "start"
	PhaseCheck = "check"
)

// Run test-restores bh and returns its record. A failed check, or a
// MANIFEST read whole and found damaged, is a record with Outcome Failed
// (and a nil error); so is a failure under Options.MysqldFlags where the
// backup, restored again, fails without them as well. The error is for a
// run that reached no verdict on the backup, so that nothing is recorded:
// no server binary, one of another flavor than the backup's, no backup
// tool or not the one named, ctx cancelled, no scratch directory, and any
// step that failed because something could not be read, reached or
// accessed, or because this host failed at its part (go/internal/unreadable:
// a part it may not read, a timeout, this host lacking the backup's
// encryption keys, a full disk, a tool or mysqld killed from outside or out
// of memory or open files, a mysqld still starting at the start timeout or
// not accepting a connection, a mysqld that exits at its start on an empty
// data directory as well: control.go). The scratch directory is removed and mysqld
// stopped before Run returns, whatever happened.
func Run(ctx context.Context, bh backupstorage.BackupHandle, opts Options) (Record, error) {
	if opts.Logger == nil {
		opts.Logger = logutil.NewConsoleLogger()
	}
	if opts.BufferPool <= 0 {
		opts.BufferPool = 128 << 20
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 15 * time.Minute
	}
	if opts.CheckConcurrency <= 0 {
		opts.CheckConcurrency = 4
	}
	rec := Record{Version: 1, Backup: bh.Directory() + "/" + bh.Name(), Started: time.Now().UTC()}
	rec.Host, _ = os.Hostname()
	srv, m, err := serverFor(ctx, bh, &opts)
	switch {
	case noVerdictIn(err):
		return rec, fmt.Errorf("test restore of %s could not run, nothing is recorded: %w", rec.Backup, couldNotRun(err))
	case err != nil: // its MANIFEST, read whole, is damaged
		rec.Duration, rec.Outcome, rec.Error = time.Since(rec.Started).Round(time.Second).String(), Failed, err.Error()
		return rec, nil
	}
	opts.Plugins = m.ServerPlugins
	err = runUnlessFlagsMisfit(ctx, bh, opts, srv, &rec)
	rec.Duration = time.Since(rec.Started).Round(time.Second).String()
	if ctx.Err() != nil {
		return rec, fmt.Errorf("test restore of %s interrupted: %w", rec.Backup, ctx.Err())
	}
	if noVerdictIn(err) {
		return rec, fmt.Errorf("test restore of %s could not run, nothing is recorded: %w", rec.Backup, couldNotRun(err))
	}
	rec.Outcome = Passed
	if err != nil {
		rec.Outcome, rec.Error = Failed, err.Error()
		if b := fifobackupengine.DamagedBackup(err); b != bh.Name() {
			rec.DamagedBase = b
		}
	}
	return rec, nil
}

// errCouldNotRun marks a run that reached no verdict on the backup: like
// an access error, never damage (go/internal/unreadable; the CLI's exit 3).
var errCouldNotRun error = noVerdict{}

type noVerdict struct{}

func (noVerdict) Error() string    { return "no verdict on the backup" }
func (noVerdict) Unreadable() bool { return true }

// noVerdictIn reports whether err says nothing about the backup: this
// host's access, keys, tool, disk, memory or patience (unreadable), or a
// request the data or the host contradicts.
func noVerdictIn(err error) bool { return unreadable.Is(err) || flagvalue.IsContradiction(err) }

// couldNotRun marks err as a run that reached no verdict (once); its
// message is err's own (a Vitess error formats itself under %w as its
// cause, a line break and its message).
func couldNotRun(err error) error {
	if errors.Is(err, errCouldNotRun) {
		return err
	}
	return noVerdictFor{err}
}

type noVerdictFor struct{ err error }

func (e noVerdictFor) Error() string   { return e.err.Error() + " (" + errCouldNotRun.Error() + ")" }
func (e noVerdictFor) Unwrap() []error { return []error{e.err, errCouldNotRun} }

// serverFor finds the server binary that can start bh: of the backup's
// flavor (MariaDB or MySQL), with the backup's MANIFEST: read once, here
// (unless opts.Restore has it already), and kept in opts.Restore for the
// restore. A MANIFEST read whole and found damaged is its error as read (a
// verdict); this host's server, or one that does not fit, is no verdict.
func serverFor(ctx context.Context, bh backupstorage.BackupHandle, opts *Options) (*server, *fifobackupengine.Manifest, error) {
	mysqld, err := mysqlinstall.FindMysqld(opts.MysqldPath)
	if err != nil {
		return nil, nil, couldNotRun(unreadable.Host(err, "it has no server to start the backup with"))
	}
	version, mariadb, err := mysqlinstall.ServerVersion(ctx, mysqld)
	if err != nil {
		return nil, nil, couldNotRun(unreadable.Host(err, "its server binary does not run here as a server"))
	}
	if opts.Restore.ManifestDoc == nil {
		if opts.Restore.ManifestDoc, err = fifobackupengine.ReadManifestBytes(ctx, bh); err != nil {
			return nil, nil, err
		}
	}
	m, err := fifobackupengine.ParseRestorable(bh.Name(), opts.Restore.ManifestDoc)
	if err != nil {
		return nil, nil, err
	}
	// The data's flavor: the server it was taken from (a stand-in presents
	// mariabackup's data as Percona's).
	if want := strings.Contains(m.MySQLVersion, "MariaDB") || m.ToolFlavor == fifobackupengine.FlavorMariabackup; want != mariadb {
		return nil, nil, couldNotRun(unreadable.Host(fmt.Errorf("the backup was taken with %s from %s, but %s is %s: give a server of its flavor",
			m.ToolFlavor, m.MySQLVersion, mysqld, version), "its server is not of the backup's flavor"))
	}
	return &server{bin: mysqld, mariadb: mariadb, version: version, backupVersion: m.MySQLVersion}, m, nil
}

// run restores bh into a scratch directory of its own and serves it
// (serve); served says the restore succeeded, so that an error is the
// server's or its checks'. The scratch directory is removed before it
// returns.
func run(ctx context.Context, bh backupstorage.BackupHandle, opts Options, srv *server, rec *Record) (served bool, err error) {
	// The record's phases are this run's (a run again without the
	// operator's flags keeps a record of its own).
	var times fifobackupengine.PhaseTimes
	onPhase := opts.OnPhase
	opts.OnPhase = func(phase string) {
		times.Begin(phase)
		if onPhase != nil {
			onPhase(phase)
		}
	}
	defer func() { rec.Phases = times.Done() }()
	logger := opts.Logger
	parent := opts.ScratchParent
	if parent == "" {
		parent = os.TempDir()
	}
	scratch, release, err := fifobackupengine.NewWorkDir(parent, "vtfifo-test-restore-", logger)
	if err != nil {
		return false, couldNotRun(fmt.Errorf("cannot create the scratch directory: %w", err))
	}
	defer release() // one a killed run left is swept by the next (NewWorkDir)
	runAs, err := mysqlinstall.ServerUser(scratch)
	if err != nil {
		return false, couldNotRun(err) // this host's users or directories
	}
	dataDir := filepath.Join(scratch, "data")
	ro := opts.Restore
	ro.Prepare = true
	ro.CheckTables = true // where the tool has it: the structure, before mysqld checks the tables
	if ro.Logger == nil {
		ro.Logger = logger
	}
	if opts.OnPhase != nil {
		ro.OnPhase = opts.OnPhase
	}
	logger.Infof("test restore: restoring %s into %s", rec.Backup, dataDir)
	rep, err := fifobackupengine.RestoreToDir(ctx, bh, dataDir, ro)
	if err != nil {
		return false, err
	}
	rec.Tool, rec.Bytes = rep.Tool, rep.Bytes
	if rep.Work.Prepares > 0 {
		rec.Work = &rep.Work
	}
	if err := os.Mkdir(filepath.Join(scratch, "tmp"), 0o750); err != nil {
		return false, couldNotRun(err)
	}
	if runAs != nil {
		if err := mysqlinstall.ChownTree(scratch, runAs); err != nil {
			return false, couldNotRun(err)
		}
	}
	srv.dir, srv.dataDir, srv.runAs, srv.logger = scratch, dataDir, runAs, logger
	return true, serve(ctx, srv, opts, rec)
}

// serve starts the throwaway server on the prepared directory, checks every
// table and stops it.
func serve(ctx context.Context, srv *server, opts Options, rec *Record) error {
	args, err := srv.args(opts)
	if err != nil {
		return err
	}
	phase := func(string) {}
	if opts.OnPhase != nil {
		phase = opts.OnPhase
	}
	opts.Logger.Infof("test restore: starting %s on %s (socket only, no replication, no events)", srv.bin, srv.dataDir)
	phase(PhaseStart)
	db, started, err := srv.startLoaded(ctx, args, opts.Plugins, opts.StartTimeout)
	if err != nil {
		return srv.controlled(ctx, started, opts, unreadable.InText(err))
	}
	defer srv.stop()
	defer db.Close()
	return unreadable.InText(srv.lost(check(ctx, db, srv, opts, rec, phase)))
}

// check reads the started server: its version, every table (CHECK TABLE),
// the files its tables name, and what opts.Inspect asks.
func check(ctx context.Context, db *sql.DB, srv *server, opts Options, rec *Record, phase func(string)) error {
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&rec.Server); err != nil {
		return fmt.Errorf("SELECT VERSION(): %w", err)
	}
	phase(PhaseCheck)
	if err := checkTables(ctx, db, opts.CheckConcurrency, rec, opts.Logger); err != nil {
		return err
	}
	if err := checkPresent(ctx, db, srv.dataDir, srv.mariadb); err != nil || opts.Inspect == nil {
		return err
	}
	return opts.Inspect(ctx, db)
}
