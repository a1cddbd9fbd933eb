package fifobackupengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"vitess.io/vitess/go/ioutil"
	"vitess.io/vitess/go/mysql/replication"
	"vitess.io/vitess/go/netutil"
	"vitess.io/vitess/go/vt/dbconfigs"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/vterrors"

	"github.com/vtfifo/vtfifo/go/xbstream"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// ExecuteBackup runs the tool, carries its stream through the lanes and
// writes the MANIFEST last. Any failure returns BackupUnusable, so Vitess
// aborts the backup and it is never listed.
func (e *Engine) ExecuteBackup(ctx context.Context, params mysqlctl.BackupParams, bh backupstorage.BackupHandle) (mysqlctl.BackupResult, error) {
	if params.IncrementalFromPos != "" {
		return mysqlctl.BackupUnusable, vterrors.New(vtrpcpb.Code_INVALID_ARGUMENT, "the fifo engine takes full backups only; incremental backups are not supported")
	}
	cfg := e.config()
	if err := cfg.Validate(); err != nil {
		return mysqlctl.BackupUnusable, err
	}
	if cfg.Lanes == 0 {
		cfg.Lanes = AutoLanes(runtime.NumCPU(), bh)
		params.Logger.Infof("fifo backup: %d lanes (--fifo-backup-lanes=0: one per CPU of %d, at most %d and what the storage can write at once)", cfg.Lanes, runtime.NumCPU(), maxLanes)
	}
	run := &backupRun{cfg: cfg, params: params, bh: bh, stats: newPhaseStats(params.Stats), logger: params.Logger}
	start := time.Now()
	err := run.execute(ctx)
	params.Logger.Infof("%s", run.stats.Table(fmt.Sprintf("fifo backup %s: per-phase stats", bh.Name()), time.Since(start)))
	if err != nil {
		return mysqlctl.BackupUnusable, vterrors.Wrapf(err, "fifo backup %s failed", bh.Name())
	}
	return mysqlctl.BackupUsable, nil
}

type backupRun struct {
	cfg    Config
	params mysqlctl.BackupParams
	bh     backupstorage.BackupHandle
	stats  *phaseStats
	logger logutil.Logger

	tool         *backupTool
	files        streamFiles  // what the tool's stream held
	toolOptions  []optionLine // the tool's own options in its option file
	mariadb      bool         // the server is MariaDB (else MySQL)
	scan         scanPlan     // how a delta finds changed pages
	base         *member      // the base of an incremental backup; nil for a full
	toolDiskRead int64        // bytes the tool read from disk (-1: unknown)
	source       string
	lanes        []*laneWriter
	streamBytes  []atomic.Int64 // read from each of the tool's streams
}

// serverFacts is what a backup reads of the server before the tool runs.
type serverFacts struct {
	pos          replication.Position // where the server is: its flavor parses the tool's position
	purged       replication.Position // gtid_purged (MySQL), for Vitess's PITR
	hasPurged    bool
	serverUUID   string
	mysqlVersion string
	lineage      lineage
	tables       []tableFile // what the stream must hold (fidelity.go)
}

func (b *backupRun) execute(ctx context.Context) error {
	if err := b.chooseTool(ctx); err != nil {
		return err
	}
	facts, err := b.readServer(ctx)
	if err != nil {
		return err
	}
	b.base = b.planDelta(ctx, facts.lineage, facts.pos, facts.mysqlVersion)
	b.scan = b.planScan(ctx, b.query, b.toolOptions)

	workDir, release, err := newWorkDir(b.params.Cnf.TmpDir, workDirPrefix, b.logger)
	if err != nil {
		return vterrors.Wrap(err, "cannot create the backup's work directory")
	}
	defer release()

	if err := b.openLanes(ctx); err != nil {
		b.closeLanes()
		return err
	}
	streamErr := b.stream(ctx, workDir)
	// The tool has exited: its consistent point is behind us.
	consistent := time.Now().UTC()
	closeErr := b.closeLanes()
	if streamErr != nil {
		return streamErr
	}
	if closeErr != nil {
		return closeErr
	}
	if err := b.checkFidelity(ctx, workDir, facts.tables); err != nil {
		return err
	}
	m, err := b.manifest(workDir, facts, consistent)
	if err != nil {
		return err
	}
	if ix := b.laneIndex(); ix != nil {
		if err := writeLaneIndex(ctx, b.bh, ix); err != nil {
			return err
		}
		m.LaneIndex = laneIndexFileName
	}
	return b.writeManifest(ctx, m)
}

// chooseTool finds the tool and its source, and reads the options it will
// take from its option file, refusing those no backup may carry.
func (b *backupRun) chooseTool(ctx context.Context) error {
	var err error
	if b.tool, err = detectTool(ctx, &b.cfg); err != nil {
		return err
	}
	if b.source, err = b.tool.sourceFor(&b.cfg); err != nil {
		return err
	}
	streams := ""
	if b.source == SourceFIFO {
		streams = fmt.Sprintf(" (%d FIFO streams)", b.cfg.streams())
		if p := parallel(&b.cfg, b.source); p != b.cfg.Parallel {
			b.logger.Infof("fifo backup: --parallel raised from %d to %d, as many as the FIFO streams (Percona XtraBackup raises it itself)", b.cfg.Parallel, p)
		}
	}
	b.logger.Infof("fifo backup: %s (%s), source %s%s, %d lanes, compression %s", b.tool.Path, b.tool.Version, b.source, streams, b.cfg.Lanes, compressionName(&b.cfg.Compression))
	if b.toolOptions, err = checkToolOptionFile(b.params.Cnf.Path, b.tool.Flavor); err != nil {
		return err
	}
	if len(b.toolOptions) > 0 {
		names := make([]string, len(b.toolOptions))
		for i, o := range b.toolOptions {
			names[i] = "[" + o.Group + "] " + o.Name
		}
		b.logger.Infof("fifo backup: %s also reads its own options from %s: %s", b.tool.Flavor, b.params.Cnf.Path, strings.Join(names, ", "))
	}
	return nil
}

// readServer reads the server's position, identity, version, tables and
// the data directory's lineage.
func (b *backupRun) readServer(ctx context.Context) (serverFacts, error) {
	var f serverFacts
	conn, err := b.params.Mysqld.GetDbaConnection(ctx)
	if err != nil {
		return f, vterrors.Wrap(err, "unable to obtain a connection to the database")
	}
	if f.pos, err = conn.PrimaryPosition(); err != nil {
		conn.Close()
		return f, vterrors.Wrap(err, "unable to obtain the server's position")
	}
	// On MySQL, gtid_purged as Vitess's PITR wants it (its path finders order
	// backups by position plus purged set); MariaDB has none.
	f.purged, err = conn.GetGTIDPurged()
	f.hasPurged = err == nil && f.purged.GTIDSet != nil
	f.serverUUID, err = conn.GetServerUUID()
	conn.Close()
	if err != nil {
		b.logger.Warningf("fifo backup: cannot read the server UUID (%v); the MANIFEST will not have one", err)
	}
	if f.mysqlVersion, err = b.params.Mysqld.GetVersionString(ctx); err != nil {
		return f, vterrors.Wrap(err, "can't get MySQL version")
	}
	b.mariadb = strings.Contains(f.mysqlVersion, "MariaDB")
	if f.tables, err = serverTableFiles(ctx, b.query, b.mariadb); err != nil {
		return f, vterrors.Wrap(err, "cannot list the server's tables, which the backup is checked against")
	}
	here, fresh, err := loadLineage(b.params.Cnf)
	if err != nil {
		b.logger.Warningf("fifo backup: %v; the backup cannot be a base for incremental ones", err)
	} else if fresh != "" {
		b.logger.Infof("fifo backup: a new lineage for the data directory: %s", fresh)
	}
	f.lineage = here
	return f, nil
}

// manifest is the backup's MANIFEST, from what the tool wrote in workDir
// and what the lanes carried; it fails when the tool took another kind of
// backup than the one asked for.
func (b *backupRun) manifest(workDir string, facts serverFacts, consistent time.Time) (*Manifest, error) {
	position, err := positionFromInfo(workDir, facts.pos.GTIDSet.Flavor())
	if err != nil {
		return nil, err
	}
	hostname, _ := netutil.FullyQualifiedHostname()
	m := &Manifest{
		BackupManifest: mysqlctl.BackupManifest{
			BackupName:     b.bh.Name(),
			BackupMethod:   engineName,
			Position:       position,
			PurgedPosition: position,
			ServerUUID:     facts.serverUUID,
			TabletAlias:    b.params.TabletAlias,
			Hostname:       hostname,
			Keyspace:       b.params.Keyspace,
			Shard:          b.params.Shard,
			BackupTime:     mysqlctl.FormatRFC3339(consistent),
			FinishedTime:   mysqlctl.FormatRFC3339(time.Now().UTC()),
			MySQLVersion:   facts.mysqlVersion,
			// Physical backups restore into the same server version, which is
			// safe for upgrades later, as with Vitess's xtrabackup engine.
			UpgradeSafe: true,
		},
		Source:               b.source,
		StreamBytes:          loadAll(b.streamBytes),
		Compressed:           b.cfg.Compression.Enabled,
		CompressionEngine:    b.cfg.Compression.Engine,
		CompressionLevel:     b.cfg.Compression.Level,
		CompressionExtension: b.cfg.Compression.Extension(),
		ToolFlavor:           b.tool.Flavor,
		ToolVersion:          b.tool.Version,
		ToolParams:           redactFlags(b.cfg.BackupFlags),
		LSN:                  lsnsFromCheckpoints(workDir),
		StartTime:            mysqlctl.FormatRFC3339(b.params.BackupTime.UTC()),
		ToolDiskReadBytes:    b.toolDiskRead,
		Lineage:              facts.lineage.Instance,
		IncrementalScan:      b.scan.mode,
	}
	if err := b.checkKind(m); err != nil {
		return nil, err
	}
	if facts.hasPurged {
		m.PurgedPosition = facts.purged
	}
	if b.source == SourceFIFO {
		m.FIFOStreams = len(b.streamBytes)
	}
	if m.CompressionEngine == mysqlctl.ExternalCompressor {
		m.ExternalDecompressor = b.cfg.Compression.ManifestDecompressor
	}
	for _, l := range b.lanes {
		info := LaneInfo{File: l.name, RawBytes: l.raw.Load(), StoredBytes: l.stored.Load(), Chunks: l.chunks}
		m.Lanes = append(m.Lanes, info)
		m.RawBytes += info.RawBytes
		m.StoredBytes += info.StoredBytes
	}
	return m, nil
}

// checkKind records a delta's chain in m, and fails when the tool took
// another kind of backup than asked (a hand-edited option file cannot make
// a full of a delta, or start it elsewhere).
func (b *backupRun) checkKind(m *Manifest) error {
	if b.base == nil {
		if m.LSN.BackupType == "incremental" {
			return vterrors.Errorf(vtrpcpb.Code_INTERNAL, "the tool took an incremental backup (from_lsn %s) where a full one was asked for", m.LSN.From)
		}
		return nil
	}
	base := b.base.m
	m.BaseBackup, m.FullBackup, m.ChainLength = base.BackupName, base.FullBackup, base.ChainLength+1
	if !base.isDelta() {
		m.FullBackup = base.BackupName
	}
	if m.LSN.BackupType != "incremental" || m.LSN.From != base.LSN.To {
		return vterrors.Errorf(vtrpcpb.Code_INTERNAL, "the tool was asked for an incremental backup from LSN %s but its checkpoints say backup_type %q from_lsn %q", base.LSN.To, m.LSN.BackupType, m.LSN.From)
	}
	return nil
}

// checkFidelity refuses a backup that is not what it would be listed as:
// compressed, encrypted or partial by the tool's own options, or lacking a
// table the server had from start to end (fidelity.go).
func (b *backupRun) checkFidelity(ctx context.Context, workDir string, tablesBefore []tableFile) error {
	if err := checkToolInfo(workDir); err != nil {
		return err
	}
	tablesAfter, err := serverTableFiles(ctx, b.query, b.mariadb)
	if err != nil {
		return vterrors.Wrap(err, "cannot list the server's tables, which the backup is checked against")
	}
	if err := checkComplete(b.files, tablesBefore, tablesAfter); err != nil {
		return err
	}
	if !b.mariadb {
		if err := checkKeyring(ctx, b.query, b.files, b.cfg.PrepareFlags); err != nil {
			return err
		}
	}
	b.logger.Infof("fifo backup: the stream holds %d files, every one of the %d tables the server had throughout", len(b.files), len(tablesBefore))
	return nil
}

// query runs a query on a dba connection; every column is read as text.
func (b *backupRun) query(ctx context.Context, q string) ([][]string, error) {
	conn, err := b.params.Mysqld.GetDbaConnection(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	qr, err := conn.ExecuteFetch(q, 10_000_000, false)
	if err != nil {
		return nil, err
	}
	rows := make([][]string, len(qr.Rows))
	for i, r := range qr.Rows {
		rows[i] = make([]string, len(r))
		for j, v := range r {
			rows[i][j] = v.ToString()
		}
	}
	return rows, nil
}

// laneIndex is the index of seekable lanes, nil when they are not.
func (b *backupRun) laneIndex() *LaneIndex {
	frames := make([]*laneFrames, len(b.lanes))
	for i, l := range b.lanes {
		if l.frames == nil {
			return nil
		}
		frames[i] = l.frames
	}
	return buildLaneIndex(frames)
}

func loadAll(v []atomic.Int64) []int64 {
	out := make([]int64, len(v))
	for i := range v {
		out[i] = v[i].Load()
	}
	return out
}

// laneWriter is one lane: compressor, then the backup file in storage.
type laneWriter struct {
	index  int
	name   string
	file   io.WriteCloser // from BackupHandle.AddFile
	comp   io.WriteCloser // compressor writing into file
	in     io.Writer      // metered compressor input
	raw    atomic.Int64
	stored atomic.Int64
	chunks int64
	closed bool

	// Seekable lanes (laneindex.go): frames is nil when the compressor
	// cannot restart (an external command). Their compressors come from
	// pool, and comp is nil between frames.
	frames *laneFrames
	pool   *framePool
	dest   io.Writer // the metered lane file, under the compressor
}

// compressorInput writes to the lane's current compressor (restarted at
// each frame), so the meter in front of it stays one.
type compressorInput struct{ l *laneWriter }

func (c compressorInput) Write(p []byte) (int, error) {
	l := c.l
	if l.comp == nil { // a frame starts
		comp, err := l.pool.get(l.dest)
		if err != nil {
			return 0, fmt.Errorf("starting the compressor: %w", err)
		}
		l.comp = comp
	}
	return l.comp.Write(p)
}

// BeginChunk is xbstream.ChunkObserver: past frameSize raw bytes, the chunk
// starts a new compressed frame; the frame's files are recorded.
func (l *laneWriter) BeginChunk(path string) error {
	if l.frames == nil {
		return nil
	}
	raw := l.raw.Load()
	if l.frames.startsFrame(raw) {
		if len(l.frames.frames) > 0 {
			if err := l.endFrame(); err != nil { // a cut or end record may have opened one
				return err
			}
		}
		l.frames.add(Frame{Stored: l.stored.Load(), Raw: raw})
	}
	l.frames.note(path)
	return nil
}

// EndChunk is xbstream.ChunkEndObserver: a frame past frameSize raw bytes
// ends now, not when the next chunk comes, and its compressor goes back to
// the pool for whichever lane writes next (framePool).
func (l *laneWriter) EndChunk() error {
	if l.frames == nil || len(l.frames.frames) == 0 || !l.frames.startsFrame(l.raw.Load()) {
		return nil
	}
	return l.endFrame()
}

// endFrame closes the open frame, if any: everything it was given reaches
// the lane file.
func (l *laneWriter) endFrame() error {
	if l.comp == nil {
		return nil
	}
	comp := l.comp
	l.comp = nil
	if err := l.pool.end(comp); err != nil {
		return fmt.Errorf("lane %d (%s): ending a compressed frame: %w", l.index, l.name, err)
	}
	return nil
}

func (l *laneWriter) Write(p []byte) (int, error) {
	n, err := l.in.Write(p)
	l.raw.Add(int64(n))
	if err != nil {
		return n, fmt.Errorf("lane %d (%s): %w", l.index, l.name, err)
	}
	return n, nil
}

func (b *backupRun) openLanes(ctx context.Context) error {
	ext := b.cfg.Compression.Extension()
	compression := b.cfg.Compression.forLanes(b.cfg.Lanes)
	if compression.gzipInLane {
		b.logger.Infof("fifo backup: %d lanes on %d cores: each lane's %s is one sequential gzip stream (the lanes keep the cores busy)", b.cfg.Lanes, runtime.GOMAXPROCS(0), compression.Engine)
	}
	destWrite := b.stats.bytesFunc("Destination:Write")
	compWrite := b.stats.bytesFunc("Compressor:Write")
	pool := newFramePool(ctx, compression, b.logger)
	for i := 0; i < b.cfg.Lanes; i++ {
		l := &laneWriter{index: i, name: laneFileName(i, ext)}
		start := time.Now()
		f, err := b.bh.AddFile(ctx, l.name, backupstorage.FileSizeUnknown)
		b.stats.since("Destination:Open", start)
		if err != nil {
			return vterrors.Wrapf(err, "cannot add lane file %s to the backup", l.name)
		}
		l.file = f
		l.dest = ioutil.NewMeteredWriter(f, destWrite, func(n int, _ time.Duration) { l.stored.Add(int64(n)) })
		l.pool = pool
		l.in = ioutil.NewMeteredWriter(compressorInput{l}, compWrite)
		b.lanes = append(b.lanes, l)
		if compression.seekable() {
			l.frames = newLaneFrames() // the first frame takes its compressor at its first byte
			continue
		}
		comp, err := pool.get(l.dest) // one stream per lane, started now (an external command)
		if err != nil {
			return vterrors.Wrapf(err, "lane %d: cannot start the compressor", i)
		}
		l.comp = comp
	}
	return nil
}

// closeLanes flushes every compressor and closes every lane file; any
// error fails the backup, since a lane that did not close is incomplete.
func (b *backupRun) closeLanes() error {
	var errs []error
	for _, l := range b.lanes {
		if l.closed {
			continue
		}
		l.closed = true
		if l.comp != nil {
			start := time.Now()
			if err := l.comp.Close(); err != nil {
				errs = append(errs, fmt.Errorf("lane %d (%s): closing the compressor: %w", l.index, l.name, err))
			}
			b.stats.since("Compressor:Close", start)
		}
		start := time.Now()
		if err := l.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("lane %d (%s): closing the file in storage: %w", l.index, l.name, err))
		}
		b.stats.since("Destination:Close", start)
	}
	return errors.Join(errs...)
}

// stream runs the tool and carries its output into the lanes.
func (b *backupRun) stream(ctx context.Context, workDir string) error {
	user := b.cfg.User
	dba := dbconfigs.GlobalDBConfigs.Dba
	if user == "" {
		user = dba.User
	}
	if user == "" {
		return vterrors.New(vtrpcpb.Code_INVALID_ARGUMENT, "no MySQL user for the backup tool: set --fifo-backup-user or --db-dba-user")
	}
	fifoDir := ""
	if b.source == SourceFIFO {
		fifoDir = b.cfg.FIFODir
		if fifoDir == "" {
			fifoDir = filepath.Join(workDir, "fifo")
		} else {
			// The tool creates one level (ds_fifo.cc, fifo_init): the parent must exist.
			if st, err := os.Stat(fifoDir); err != nil || !st.IsDir() {
				return vterrors.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "--fifo-backup-fifo-dir %s must be an existing directory: the backup tool creates one directory in it, not its parents", fifoDir)
			}
			fifoDir = filepath.Join(fifoDir, filepath.Base(workDir))
		}
		// The tool creates the directory and its FIFOs (and fails if they
		// exist), so only its parent must be there.
		defer os.RemoveAll(fifoDir)
	}
	openFiles, err := toolOpenFiles(b.params.Cnf.DataDir)
	if err != nil {
		return err
	}
	args, err := b.tool.backupArgs(&b.cfg, b.params.Cnf.Path, b.params.Cnf.SocketFile, user, workDir, b.source, fifoDir, openFiles)
	if err != nil {
		return err
	}
	if b.base != nil {
		// Both tools: copy the pages above this LSN, the base's to_lsn.
		args = append(args, "--incremental-lsn="+b.base.m.LSN.To)
	}
	args = append(args, b.scan.args...)

	toolCtx, killTool := context.WithCancel(ctx)
	defer killTool()
	cmd := newToolCommand(toolCtx, b.tool.Path, args...)
	cmd.Env = os.Environ()
	_, secrets := redactSecrets(args)
	if user == dba.User && dba.Password != "" {
		// The password goes through the environment, never the argv, so
		// it does not show in ps or in logs.
		cmd.Env = append(cmd.Env, "MYSQL_PWD="+dba.Password)
		secrets = append(secrets, dba.Password)
	}
	// Our own pipe, not cmd.StdoutPipe: Wait runs concurrently with the
	// reads and would close that pipe under them when the tool exits.
	var stdout, stdoutW *os.File
	if b.source == SourceStdout {
		if stdout, stdoutW, err = os.Pipe(); err != nil {
			return err
		}
		defer stdout.Close()
		cmd.Stdout = stdoutW
	} else {
		stdoutLog := &lineLogger{logger: b.logger, prefix: b.tool.Flavor + " stdout: "}
		stdoutLog.hide(secrets...)
		cmd.Stdout = stdoutLog
	}
	// The tool may echo a flag with its value ("unknown variable
	// 'pass=...'"): its output is scrubbed of every secret it was given.
	stderr := newTailLogger(b.logger, b.tool.Flavor+" stderr: ", 20)
	stderr.hide(secrets...)
	cmd.Stderr = stderr
	b.logger.Infof("fifo backup: running %s %s", b.tool.Path, strings.Join(redactArgs(args), " "))

	toolStart := time.Now()
	err = cmd.Start()
	if stdoutW != nil {
		stdoutW.Close() // the tool holds the write end now
	}
	if err != nil {
		return vterrors.Wrapf(err, "cannot start %s", b.tool.Path)
	}
	toolDone := make(chan struct{})
	var toolErr error
	go func() { toolErr = cmd.Wait(); close(toolDone) }()

	stopProgress := b.progress(ctx)
	var laneErr error
	if b.source == SourceStdout {
		laneErr = b.splitStdout(toolCtx, stdout)
	} else {
		laneErr = b.readFIFOs(toolCtx, fifoDir, toolDone)
	}
	stopProgress()

	// A stream that ends early is usually the tool failing: give it a moment
	// to exit so the error says why; if it does not, the lanes failed first
	// and the tool is stopped.
	killed := false
	if laneErr != nil {
		select {
		case <-toolDone:
		case <-time.After(5 * time.Second):
			killed = true
			killTool()
			<-toolDone
		}
	} else {
		<-toolDone
	}
	b.stats.since("Tool:Run", toolStart)
	if cmd.ProcessState != nil {
		b.toolDiskRead = diskReadBytes(cmd.ProcessState)
	}
	stderr.flush()
	if toolErr != nil && !killed {
		err := vterrors.Errorf(vtrpcpb.Code_INTERNAL, "%s exited with an error: %v; its last output:\n%s", b.tool.Flavor, toolErr, stderr.tail())
		if laneErr != nil {
			err = vterrors.Wrapf(err, "stream ended with: %v", laneErr)
		}
		return err
	}
	return laneErr
}

// splitStdout deals the tool's single stream into the lanes by bytes.
func (b *backupRun) splitStdout(ctx context.Context, stdout *os.File) error {
	b.streamBytes = make([]atomic.Int64, 1)
	src := b.meteredSource(stdout, stdout, &b.streamBytes[0])
	return b.split(ctx, []io.Reader{src}, "splitting the tool's stream into lanes")
}

// lanePieceSize is the most dealt to a lane at a time: lanes stay within about
// one piece of each other whatever the tool's chunk size (10 MiB, or
// Percona's read buffer up to 64 MiB), at about 40 bytes of headers per piece.
const lanePieceSize = 1 << 20

// split deals the sources' chunks into the lanes by bytes, parsing and
// checking every chunk on the way: a backup that completes has well-formed
// lanes.
func (b *backupRun) split(ctx context.Context, srcs []io.Reader, what string) error {
	writers := make([]io.Writer, len(b.lanes))
	for i, l := range b.lanes {
		writers[i] = l
	}
	b.files = streamFiles{}
	laneStats, err := xbstream.SplitStreams(ctx, srcs, writers, xbstream.SplitOptions{PieceSize: lanePieceSize, FileEnded: b.files.fileEnded})
	for i, s := range laneStats {
		if i < len(b.lanes) {
			b.lanes[i].chunks = s.Chunks
		}
	}
	if err != nil {
		return vterrors.Wrap(err, what)
	}
	return nil
}

// deadlineSource is a metered source that SplitStreams can still interrupt
// through the file's SetReadDeadline.
type deadlineSource struct {
	io.Reader
	f *os.File
}

func (d deadlineSource) SetReadDeadline(t time.Time) error { return d.f.SetReadDeadline(t) }

// meteredSource counts what is read from r (reading f) as Source:Read and
// into total.
func (b *backupRun) meteredSource(r io.Reader, f *os.File, total *atomic.Int64) io.Reader {
	count := func(n int, _ time.Duration) { total.Add(int64(n)) }
	return deadlineSource{ioutil.NewMeteredReader(r, b.stats.bytesFunc("Source:Read"), count), f}
}

func (b *backupRun) writeManifest(ctx context.Context, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return vterrors.Wrap(err, "cannot encode the MANIFEST")
	}
	w, err := b.bh.AddFile(ctx, manifestFileName, int64(len(data)))
	if err != nil {
		return vterrors.Wrap(err, "cannot add the MANIFEST to the backup")
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return vterrors.Wrap(err, "cannot write the MANIFEST")
	}
	if err := w.Close(); err != nil {
		return vterrors.Wrap(err, "cannot close the MANIFEST")
	}
	b.logger.Infof("fifo backup %s: %d lanes, %d bytes from the tool, %d bytes stored, position %v; the tool read %d bytes from disk (page cache hits not counted)", m.BackupName, len(m.Lanes), m.RawBytes, m.StoredBytes, m.Position, m.ToolDiskReadBytes)
	return nil
}

// progress logs bytes done, rate and ETA every interval until stopped.
func (b *backupRun) progress(ctx context.Context) (stop func()) {
	estimate := dataSize(b.params.Cnf)
	return logProgress(ctx, b.cfg.Progress, func(elapsed time.Duration) {
		var raw, stored int64
		for _, l := range b.lanes {
			raw += l.raw.Load()
			stored += l.stored.Load()
		}
		b.logger.Infof("fifo backup: %s", progressLine(raw, stored, estimate, elapsed))
	})
}

// logProgress calls log every interval (0: never) with the time since it
// started, until the returned stop is called or ctx ends; stop returns once
// its goroutine has.
func logProgress(ctx context.Context, every time.Duration, log func(elapsed time.Duration)) (stop func()) {
	if every <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				log(time.Since(start))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func progressLine(raw, stored, estimate int64, elapsed time.Duration) string {
	rate := float64(raw) / elapsed.Seconds()
	line := fmt.Sprintf("%.2f GiB read, %.2f GiB stored, %.1f MiB/s", float64(raw)/(1<<30), float64(stored)/(1<<30), rate/(1<<20))
	if estimate > 0 && rate > 0 {
		pct := 100 * float64(raw) / float64(estimate)
		eta := time.Duration(float64(max(estimate-raw, 0))/rate) * time.Second
		line += fmt.Sprintf(", %.0f%% of ~%.2f GiB, ETA %v", min(pct, 100), float64(estimate)/(1<<30), eta.Round(time.Second))
	}
	return line
}

// dataSize estimates the stream size from the server's data directories.
func dataSize(cnf *mysqlctl.Mycnf) int64 {
	var total int64
	seen := map[string]bool{}
	for _, dir := range []string{cnf.DataDir, cnf.InnodbDataHomeDir, cnf.InnodbLogGroupHomeDir} {
		if dir == "" || seen[dir] {
			continue
		}
		seen[dir] = true
		_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					total += info.Size()
				}
			}
			return nil
		})
	}
	return total
}

func compressionName(c *CompressionConfig) string {
	if !c.Enabled {
		return "none"
	}
	if c.Engine == mysqlctl.ExternalCompressor {
		return "external (" + c.ExternalExtension + ")"
	}
	return fmt.Sprintf("%s level %d", c.Engine, c.Level)
}
