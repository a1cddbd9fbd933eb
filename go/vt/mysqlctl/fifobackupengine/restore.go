package fifobackupengine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/diskspace"
	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/xbstream"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/relver"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// ExecuteRestore honours Vitess's restore contract: it creates
// restore_in_progress before touching data, stops mysqld and clears the
// tablet's directories; then it reads all lanes in parallel into a staging
// directory beside the data directory, prepares the files and moves them into
// place by rename. On any error the state file stays, mysqld is not started,
// and the next restore starts over.
func (e *Engine) ExecuteRestore(ctx context.Context, params mysqlctl.RestoreParams, bh backupstorage.BackupHandle) (*mysqlctl.BackupManifest, error) {
	cfg := e.config()
	m, err := ReadManifest(ctx, bh)
	if err != nil {
		if !unreadable.Is(err) {
			sayHowToPassOver(params.Logger, bh.Name(), err)
		}
		return nil, err
	}
	logAsOf(ctx, params, bh)
	run := &restoreRun{cfg: cfg, params: params, bh: bh, m: m, stats: newPhaseStats(params.Stats), logger: params.Logger, scope: wholeBackup{}}
	start := time.Now()
	err = run.execute(ctx)
	// The engine's whole run: Vitess's own Restore total less this is what
	// follows it (mysqld's start for mysql_upgrade, the upgrade, the restart).
	run.stats.since("Engine:Restore", start)
	params.Logger.Infof("%s", run.stats.Table(fmt.Sprintf("fifo restore %s: per-phase stats", bh.Name()), time.Since(start)))
	if why := unreadable.NoVerdict(err); why != "" {
		// Said first: Vitess logs the error as it is, and the tool's
		// output that ends it reads like damage.
		return nil, errtext.Wrapf(err, "fifo restore of backup %s failed: %s. What failed", bh.Name(), why)
	}
	if err != nil {
		return nil, errtext.Wrapf(err, "fifo restore of backup %s failed", bh.Name())
	}
	params.Logger.Infof("fifo restore %s: done, position %v", bh.Name(), m.Position)
	return &m.BackupManifest, nil
}

type restoreRun struct {
	cfg     Config
	params  mysqlctl.RestoreParams
	bh      backupstorage.BackupHandle
	m       *Manifest
	chain   []member // what restores m, full first (findChain)
	stats   *phaseStats
	logger  logutil.Logger
	onRead  func(lane, n int)  // stored bytes read (progress); may be nil
	onPhase func(phase string) // each phase as it begins (progress); may be nil
	times   PhaseTimes         // every phase's time, for the restore's log
	// checkTables: the last prepare validates the indexes (prepareStep).
	checkTables bool

	// useMemory is the prepares' --use-memory, sized once (prepareMemory).
	useMemory *int64

	// scope is what the restore restores: everything, or some tables.
	scope     restoreScope
	readBytes atomic.Int64 // stored bytes read, every backup of the chain
}

// The phases of a restore, as RestoreDirOptions.OnPhase names them (a
// tablet's restore also moves the files into place).
const (
	PhaseDownload = "download"
	PhasePrepare  = "prepare"
	PhaseMoveBack = "move-back"
)

// phase says that a phase begins.
func (r *restoreRun) phase(name string) {
	r.times.Begin(name)
	if r.onPhase != nil {
		r.onPhase(name)
	}
}

func (r *restoreRun) execute(ctx context.Context) error {
	cnf := r.params.Cnf
	// The tool is checked before anything is deleted.
	tool, err := detectTool(ctx, &r.cfg)
	if err != nil {
		return err
	}
	if err := r.checkTool(tool); err != nil {
		return err
	}
	// So is every backup of its chain, and the keys they need.
	if err := r.findChain(ctx); err != nil {
		if !unreadable.Is(err) {
			sayHowToPassOver(r.logger, r.m.BackupName, err)
		}
		return err
	}
	if err := checkRestoreKeys(r.chain, cnf.Path, r.logger); err != nil {
		return err
	}
	if err := checkRoom(cnf, r.chain); err != nil {
		return err
	}
	if err := checkStorageOutside(cnf, r.bh); err != nil {
		return err
	}

	// Mark the restore as in progress before touching data (Vitess's
	// mysqlctl.Restore removes the file when the restore succeeded).
	if err := createStateFile(cnf); err != nil {
		return err
	}
	r.logger.Infof("fifo restore: shutting down mysqld")
	shutdown := func(ctx context.Context) error {
		return r.params.Mysqld.Shutdown(ctx, cnf, true, r.params.MysqlShutdownTimeout)
	}
	if err := stopMysqld(ctx, cnf, r.params.MysqlShutdownTimeout, shutdown, r.logger); err != nil {
		return err
	}
	waitOldFiles, err := setAsideOldFiles(cnf, restoreNeeds(r.chain), r.logger)
	if err != nil {
		return err
	}
	defer waitOldFiles()
	if err := r.params.Mysqld.ReinitConfig(ctx, cnf); err != nil {
		return errtext.Wrap(err, "cannot reinit the config file")
	}

	// Staging sits beside the data directory, on the same filesystem, so
	// files move into place by rename.
	staging, release, err := newWorkDir(filepath.Dir(filepath.Clean(cnf.DataDir)), stagingDirPrefix, r.logger)
	if err != nil {
		return errtext.Wrap(err, "cannot create the staging directory")
	}
	// Nothing half-extracted stays behind, whatever failed.
	defer release()

	if err := r.restoreChain(ctx, tool, cnf.Path, staging); err != nil {
		if DamagedBackup(err) != "" {
			sayHowToPassOver(r.logger, r.m.BackupName, err)
		}
		return err
	}
	r.phase(PhaseMoveBack)
	if err := r.moveBack(staging); err != nil {
		return err
	}
	r.logger.Infof("fifo restore: took %s", FormatPhases(r.times.Done()))
	// The next backup of this data directory may be a delta on this chain.
	if err := restoredLineage(cnf, chainNames(r.chain)); err != nil {
		r.logger.Warningf("fifo restore: %s; the next backup will be full", errtext.Text(err))
	}
	return nil
}

// sayHowToPassOver logs, for a restore that err proves cannot be done from
// backup, the one Vitess picked, how to have Vitess pick an older one:
// Vitess picks the newest backup whose own MANIFEST reads, again and again.
func sayHowToPassOver(logger logutil.Logger, backup string, err error) {
	logger.Errorf("fifo restore: %s, the backup Vitess picked, cannot be restored: %s. Vitess picks the newest backup whose own "+
		"MANIFEST reads; for tablets to restore an older one until it is whole again (vtfifo repair, from a copy), take it "+
		"out of the list: vtfifo test-restore --backup=%[1]s fails on the same and quarantines it (or the base "+
		"found damaged), with the backups that need it", backup, errtext.Text(err))
}

// findChain finds and checks what restores r.m (resolveChain, incremental.go).
func (r *restoreRun) findChain(ctx context.Context) error {
	chain, err := resolveChain(ctx, member{bh: r.bh, m: r.m})
	if err != nil {
		return err
	}
	r.chain = chain
	if len(chain) > 1 {
		r.logger.Infof("fifo restore: %s is incremental: restoring its chain %v", r.m.BackupName, chainNames(chain))
	}
	return nil
}

// restoreChain extracts the backups of r.chain and prepares them into dir
// (tool nil: extracts a full backup only). A full alone gets one --prepare.
// A chain follows the tools' rules for incrementals: the full is prepared
// without the rollback phase (Percona's --apply-log-only; mariabackup never
// rolls back at --prepare), then each delta is extracted into a directory of
// its own beside dir and applied with --incremental-dir, the last one
// (Percona) with the rollback. Each delta downloads and extracts while the
// backup before it is prepared (deltaAhead), the first one while the full
// does (a differential's only delta costs the restore its prepare, not its
// download): at most two deltas' files are on disk at once.
func (r *restoreRun) restoreChain(ctx context.Context, tool *backupTool, defaultsFile, dir string) error {
	last := len(r.chain) - 1
	var next *deltaAhead
	defer func() {
		if next != nil { // a failure: the delta ahead is not wanted
			next.discard()
		}
	}()
	if tool != nil && last > 0 && r.scope.alongside() {
		next = r.extractAhead(ctx, 1, dir)
	}
	r.phase(PhaseDownload)
	if err := r.extract(ctx, r.chain[0], dir); err != nil {
		return err
	}
	if tool == nil {
		return nil
	}
	if err := r.scope.beforePrepare(dir, tool, r.m, r.cfg.PrepareFlags); err != nil {
		return err
	}
	ariaElsewhere := setsAriaLogDir(defaultsFile)
	step := func(i int, deltaDir string) prepareStep {
		return prepareStep{DefaultsFile: defaultsFile, TargetDir: dir, DeltaDir: deltaDir,
			RedoOnly: i < last, Export: r.scope.exports() && i == last, CheckTables: r.checkTables && i == last,
			AriaLogInTarget: ariaElsewhere}
	}
	if next == nil && last > 0 {
		next = r.extractAhead(ctx, 1, dir)
	}
	err := r.prepare(ctx, tool, step(0, ""))
	for i := 1; i <= last && err == nil; i++ {
		delta := next.wait(r)
		next = nil
		if delta.err != nil {
			err = delta.err
			break
		}
		if i < last {
			next = r.extractAhead(ctx, i+1, dir)
		}
		err = r.prepare(ctx, tool, step(i, delta.dir))
		delta.release()
		if err != nil {
			err = errtext.Wrapf(err, "incremental backup %s (%d of %d)", r.chain[i].m.BackupName, i, last)
		}
	}
	if err != nil {
		return err
	}
	return r.scope.prepared(dir)
}

// deltaAhead is a delta of the chain being downloaded and extracted into a
// work directory of its own while the restore prepares the backup before
// it.
type deltaAhead struct {
	done   chan struct{}
	cancel context.CancelFunc
	// Set before done closes.
	dir     string
	release func()
	err     error
}

// extractAhead starts extracting r.chain[i] beside dir.
func (r *restoreRun) extractAhead(ctx context.Context, i int, dir string) *deltaAhead {
	ctx, cancel := context.WithCancel(ctx)
	d := &deltaAhead{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(d.done)
		last := len(r.chain) - 1
		delta, release, err := newWorkDir(filepath.Dir(filepath.Clean(dir)), deltaDirPrefix, r.logger)
		if err != nil {
			d.err = errtext.Wrapf(err, "cannot create a directory for an incremental backup")
			return
		}
		if err := r.extract(ctx, r.chain[i], delta); err != nil {
			release()
			d.err = errtext.Wrapf(err, "incremental backup %s (%d of %d)", r.chain[i].m.BackupName, i, last)
			return
		}
		d.dir, d.release = delta, release
	}()
	return d
}

// discard stops a delta no longer wanted and removes what it extracted.
func (d *deltaAhead) discard() {
	d.cancel()
	<-d.done
	if d.err == nil {
		d.release()
	}
}

// wait returns the extracted delta once its goroutine has stopped. The
// time the restore waits for it is its download phase; a delta extracted
// while the one before was prepared costs the restore nothing.
func (d *deltaAhead) wait(r *restoreRun) *deltaAhead {
	select {
	case <-d.done:
	default:
		r.phase(PhaseDownload)
		<-d.done
	}
	d.cancel()
	return d
}

// extract downloads, decompresses and extracts all lanes of one backup in
// parallel into staging.
func (r *restoreRun) extract(ctx context.Context, c member, staging string) error {
	bh, m := c.bh, c.m
	var read atomic.Int64
	onRead := func(lane, n int) {
		read.Add(int64(n))
		r.readBytes.Add(int64(n))
		if r.onRead != nil {
			r.onRead(lane, n)
		}
	}
	from := &storedLanes{bh: bh, m: m, comp: r.cfg.Compression, stats: r.stats, onRead: onRead, logger: r.logger}
	opts := xbstream.ExtractOptions{Keep: isInfoFile}
	want, toRead, what, err := r.scope.frames(ctx, c, from, &opts)
	if err != nil {
		return err
	}
	stopProgress := logProgress(ctx, r.cfg.Progress, func(elapsed time.Duration) {
		r.logger.Infof("fifo restore: %s", restoreProgressLine(read.Load(), toRead, elapsed))
	})
	defer stopProgress()
	lanes := from.lanes(ctx)
	r.logger.Infof("fifo restore: extracting %s into %s", what, staging)
	extractWrite := r.stats.bytesFunc("Extract:Write")
	free := freeBytes(staging)
	start := time.Now()
	opts.OnWrite = func(_ int, n int, d time.Duration) { extractWrite(n, d) }
	st, err := xbstream.Extract(ctx, staging, lanes, opts)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			// Say how much room the restore needs, not only where it ran out.
			return errtext.Wrapf(err, "extracting lanes (%s): the file system of %s is full: the backup needs about %s there (its stream's size), %s "+
				"when the extraction began, %s were written",
				laneNames(m), staging, flagvalue.SizeText(m.RawBytes), freeText(free), flagvalue.SizeText(st.Bytes))
		}
		err = errtext.Wrapf(err, "extracting lanes (%s)", laneNames(m))
		if from.stretches != nil {
			// Only whole lanes tell a damaged lane from an index whose
			// frames are not the lane's.
			err = errtext.Wrapf(err, "reading the frames the lane index names (a damaged lane, or an index that does not match it: vtfifo "+
				"verify reads the whole lanes and says which; a whole restore does not need the index)")
		}
		return laneDamage(m.BackupName, from.judge(err))
	}
	r.logger.Infof("fifo restore: extracted %d files, %d bytes in %v", st.Files, st.Bytes, time.Since(start).Round(time.Millisecond))
	if err := checkPosition(m, st.Kept, r.logger); err != nil {
		return damageOf(m.BackupName, from.judge(err))
	}
	return r.scope.extracted(c, want, st.FileSizes)
}

// freeBytes returns the bytes available to this process on dir's file
// system, -1 when unknown.
func freeBytes(dir string) int64 {
	free, _ := fsSpace(dir)
	return free
}

// fsSpace returns the bytes available to this process on dir's file system
// and its size; -1 and 0 when unknown.
func fsSpace(dir string) (free, size int64) {
	free, size, err := diskspace.Of(dir)
	if err != nil {
		return -1, 0
	}
	return free, size
}

func freeText(free int64) string {
	if free < 0 {
		return "free space unknown"
	}
	return flagvalue.SizeText(free) + " were free"
}

func laneNames(m *Manifest) string {
	names := make([]string, len(m.Lanes))
	for i, l := range m.Lanes {
		names[i] = fmt.Sprintf("lane %d = %s", i, l.File)
	}
	return strings.Join(names, ", ")
}

// checkTool refuses a tool of another flavor than the backup's.
func (r *restoreRun) checkTool(tool *backupTool) error {
	if tool.Flavor != r.m.ToolFlavor {
		return flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "the backup was taken with %s (%s) but the tool here is "+
			"%s (%s): give the backup's tool (--fifo-backup-tool-path)", r.m.ToolFlavor, r.m.ToolVersion, tool.Flavor, tool.Version))
	}
	return nil
}

// prepare runs the tool's --prepare of one step of a chain (prepareStep).
func (r *restoreRun) prepare(ctx context.Context, tool *backupTool, step prepareStep) error {
	r.phase(PhasePrepare)
	openFiles, err := toolOpenFiles(step.TargetDir)
	if err != nil {
		return err
	}
	step.OpenFiles = openFiles
	if r.useMemory == nil {
		mem := prepareMemory(&r.cfg, chainRedo(r.chain), hostAvailable, r.logger)
		r.useMemory = &mem
	}
	cfg := r.cfg
	cfg.UseMemory = *r.useMemory
	var fileSecrets []string
	if tool.Flavor == FlavorMariabackup && step.DefaultsFile != "" {
		optionFile, secrets, remove, err := writePrepareOptionFile(step.DefaultsFile, step.TargetDir, r.logger)
		if err != nil {
			return err
		}
		defer remove()
		step.DefaultsFile, fileSecrets = optionFile, secrets
	}
	argsFor := func(s prepareStep, flags string) ([]string, error) {
		c := cfg
		c.PrepareFlags = flags
		return tool.prepareArgs(&c, s)
	}
	args, err := argsFor(step, cfg.PrepareFlags)
	if err != nil {
		return err
	}
	r.logger.Infof("fifo restore: running %s %s", tool.Path, strings.Join(redactArgs(args), " "))
	out := newTailLogger(r.logger, tool.Flavor+" prepare: ", prepareTailLines)
	_, secrets := redactSecrets(args)
	secrets = append(secrets, fileSecrets...)
	out.hide(secrets...)
	cmd := newToolCommand(ctx, tool.Path, args...)
	cmd.Stdout = out
	cmd.Stderr = out
	start := time.Now()
	err = cmd.Run()
	out.flush()
	r.stats.since("Prepare", start)
	if err == nil {
		return nil
	}
	err = r.olderTool(tool, unreadable.ProgramFailed(errtext.Errorf(vtrpcpb.Code_INTERNAL, "%s --prepare failed: %v; its last output:\n%s",
		tool.Flavor, err, cmp.Or(out.tail(), "(none)")), cmd.ProcessState, out.tail()))
	control := prepareControl{tool: tool, step: step, flags: cfg.PrepareFlags, argsFor: argsFor, secrets: secrets, logger: r.logger}
	return underPrepareFlags(control.judge(ctx, toolExit{state: cmd.ProcessState, out: out, dirs: []string{step.TargetDir, step.DeltaDir}}, err),
		cfg.PrepareFlags)
}

// olderTool marks a prepare that failed as no proof about the backup where
// this host's tool is a release older than the one that took it: a tool may
// refuse a later release's redo log (mariabackup: "Unsupported redo log
// format"; Percona's 8.0 on 8.4's files), which says nothing of the backup.
// The error names the release to give.
func (r *restoreRun) olderTool(tool *backupTool, err error) error {
	have, took := toolRelease(tool.Version), toolRelease(r.m.ToolVersion)
	if unreadable.Is(err) || !relver.Older(have, took) {
		return err
	}
	return flagvalue.Contradiction(fmt.Errorf("%w; this host's %s is release %s, older than the %s that took the backup (%s): a tool may refuse a "+
		"later release's files, which is no proof about the backup; give %s %s or later (--fifo-backup-tool-path)", err, tool.Flavor, have,
		r.m.ToolFlavor, took, tool.Flavor, took))
}

// moveBack moves the prepared files into place by rename, where Percona's
// copy-back or mariabackup's move-back would put them (planMoveBack); the
// tool's own metadata files stay behind.
func (r *restoreRun) moveBack(staging string) error {
	cnf := r.params.Cnf
	start := time.Now()
	layout, err := layoutFor(cnf, &r.cfg)
	if err != nil {
		return err
	}
	layout.Flavor = r.m.ToolFlavor
	layout.MariaDBData = strings.Contains(r.m.MySQLVersion, "MariaDB")
	moves, index, err := planMoveBack(staging, layout)
	if err != nil {
		return errtext.Wrapf(err, "cannot place the files of the backup")
	}
	for _, dir := range []string{cnf.DataDir, cnf.InnodbDataHomeDir, cnf.InnodbLogGroupHomeDir} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return errtext.Wrapf(err, "cannot create %s", dir)
		}
	}
	if err := applyMoveBack(staging, moves, index); err != nil {
		return err
	}
	if err := checkArrived(staging, moves, layout); err != nil {
		return err
	}
	placed := []string{cnf.DataDir, cnf.InnodbDataHomeDir, cnf.InnodbLogGroupHomeDir}
	for _, m := range moves {
		if !slices.ContainsFunc(placed, func(d string) bool { return strings.HasPrefix(m.Dst, filepath.Clean(d)+string(filepath.Separator)) }) {
			r.logger.Infof("fifo restore: %s placed at %s", m.Src, m.Dst)
			placed = append(placed, m.Dst)
		}
	}
	if index != nil {
		placed = append(placed, index.Dst)
	}
	if err := matchOwner(cnf, placed); err != nil {
		return err
	}
	r.stats.since("MoveBack", start)
	r.logger.Infof("fifo restore: moved %d entries into place in %v", len(moves), time.Since(start).Round(time.Millisecond))
	return nil
}

// moveByRename renames src to dst; across filesystems (a custom layout, a
// tablespace outside the data dir on its own mount) it falls back to a copy
// of the directory or file, then removes src.
func moveByRename(src, dst string) error {
	err := os.Rename(src, dst)
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.EXDEV) {
		if cerr := copyTree(src, dst); cerr != nil {
			return errtext.Wrapf(cerr, "cannot move %s to %s (another file system: copying)", src, dst)
		}
		return os.RemoveAll(src)
	}
	return errtext.Wrapf(err, "cannot move %s to %s", src, dst)
}

// copyTree copies a directory (os.CopyFS) or a regular file to dst, which
// must not exist.
func copyTree(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if st.IsDir() {
		return os.CopyFS(dst, os.DirFS(src))
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// matchOwner gives the restored files the owner of the tablet directory
// when the restore runs as root, so a mysqld running as its own user can
// open them.
func matchOwner(cnf *mysqlctl.Mycnf, paths []string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	st, err := os.Stat(cnf.TabletDir())
	if err != nil {
		return nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Uid == 0 {
		return nil
	}
	for _, dir := range paths {
		err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(sys.Uid), int(sys.Gid))
		})
		if err != nil {
			return errtext.Wrapf(err, "cannot give %s to the tablet directory's owner", dir)
		}
	}
	return nil
}

// createStateFile is Vitess's restore_in_progress marker (mysqlctl keeps
// its helper unexported), 0640 like every file the engine writes (Vitess's
// os2.Create asks for 0660).
func createStateFile(cnf *mysqlctl.Mycnf) error {
	f, err := os.OpenFile(filepath.Join(cnf.TabletDir(), mysqlctl.RestoreState), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return errtext.Wrap(err, "unable to create the restore_in_progress file")
	}
	return f.Close()
}

// restoreProgressLine is a restore's progress: stored bytes read of the
// MANIFEST's total, rate and ETA.
func restoreProgressLine(read, total int64, elapsed time.Duration) string {
	rate := float64(read) / elapsed.Seconds()
	line := fmt.Sprintf("%.2f GiB of %.2f GiB stored read", float64(read)/(1<<30), float64(total)/(1<<30))
	if total > 0 {
		line += fmt.Sprintf(" (%.0f%%)", min(100, 100*float64(read)/float64(total)))
	}
	line += fmt.Sprintf(", %.1f MiB/s", rate/(1<<20))
	if rate > 0 && total > read {
		line += fmt.Sprintf(", ETA %v", (time.Duration(float64(total-read)/rate) * time.Second).Round(time.Second))
	}
	return line
}
