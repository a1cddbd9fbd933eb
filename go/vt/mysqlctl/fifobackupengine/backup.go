package fifobackupengine

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"vitess.io/vitess/go/mysql/replication"
	"vitess.io/vitess/go/netutil"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// ExecuteBackup runs the tool, carries its stream through the lanes and
// writes the MANIFEST last. Any failure returns BackupUnusable, so Vitess
// aborts the backup and it is never listed.
func (e *Engine) ExecuteBackup(ctx context.Context, params mysqlctl.BackupParams, bh backupstorage.BackupHandle) (mysqlctl.BackupResult, error) {
	if params.IncrementalFromPos != "" {
		return mysqlctl.BackupUnusable, errtext.New(vtrpcpb.Code_INVALID_ARGUMENT, "the fifo engine takes full backups only; incremental backups are not supported")
	}
	cfg := e.config()
	if err := cfg.Validate(); err != nil {
		return mysqlctl.BackupUnusable, err
	}
	if cfg.Lanes == 0 {
		cfg.Lanes = AutoLanes(runtime.NumCPU(), bh)
		params.Logger.Infof("fifo backup: %d lanes (--fifo-backup-lanes=0: one per CPU of %d, at most %d and what the storage can write at once)",
			cfg.Lanes, runtime.NumCPU(), maxLanes)
	}
	run := &backupRun{cfg: cfg, params: params, bh: bh, stats: newPhaseStats(params.Stats), logger: params.Logger}
	start := time.Now()
	err := run.execute(ctx)
	params.Logger.Infof("%s", run.stats.Table(fmt.Sprintf("fifo backup %s: per-phase stats", bh.Name()), time.Since(start)))
	if err != nil {
		return mysqlctl.BackupUnusable, errtext.Wrapf(err, "fifo backup %s failed", bh.Name())
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
	plugins      []ServerPlugin
	pageSize     int64 // innodb_page_size; 0: not read
}

func (b *backupRun) execute(ctx context.Context) error {
	// A backup a restore of this tablet would delete is refused now, not
	// found at the restore.
	if err := checkStorageOutside(b.params.Cnf, b.bh); err != nil {
		return err
	}
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
		return errtext.Wrap(err, "cannot create the backup's work directory")
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
	start := time.Now()
	if err := b.checkFidelity(ctx, workDir, facts.tables); err != nil {
		return err
	}
	b.stats.since("Check:Fidelity", start)
	m, err := b.manifest(workDir, facts, consistent)
	if err != nil {
		return err
	}
	if b.mariadb {
		// After the tool: the key ids of tablespaces made during the backup too.
		if m.ServerEncryption, err = readServerEncryption(ctx, b.query, readKeyFile, b.logger); err != nil {
			return errtext.Wrap(err, "cannot read the server's encryption settings, which the MANIFEST records")
		}
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
	b.logger.Infof("fifo backup: %s (%s), source %s%s, %d lanes, compression %s", b.tool.Path, b.tool.Version, b.source, streams, b.cfg.Lanes,
		compressionName(&b.cfg.Compression))
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
		return f, errtext.Wrap(err, "unable to obtain a connection to the database")
	}
	if f.pos, err = conn.PrimaryPosition(); err != nil {
		conn.Close()
		return f, errtext.Wrap(err, "unable to obtain the server's position")
	}
	// On MySQL, gtid_purged as Vitess's PITR wants it (its path finders order
	// backups by position plus purged set); MariaDB has none.
	f.purged, err = conn.GetGTIDPurged()
	f.hasPurged = err == nil && f.purged.GTIDSet != nil
	f.serverUUID, err = conn.GetServerUUID()
	conn.Close()
	if err != nil {
		b.logger.Warningf("fifo backup: cannot read the server UUID (%s); the MANIFEST will not have one", errtext.Text(err))
	}
	if f.mysqlVersion, err = b.params.Mysqld.GetVersionString(ctx); err != nil {
		return f, errtext.Wrap(err, "can't get MySQL version")
	}
	b.mariadb = strings.Contains(f.mysqlVersion, "MariaDB")
	if f.tables, err = serverTableFiles(ctx, b.query, b.mariadb); err != nil {
		return f, errtext.Wrap(err, "cannot list the server's tables, which the backup is checked against")
	}
	if f.plugins, err = serverPlugins(ctx, b.query); err != nil {
		b.logger.Warningf("fifo backup: cannot list the server's plugins (%s); a test restore loads only those its mysql.plugin names", errtext.Text(err))
	}
	if f.pageSize, err = innodbPageSize(ctx, b.query); err != nil {
		b.logger.Warningf("fifo backup: cannot read the server's innodb_page_size (%s); a table restore finds a live server of another page "+
			"size only when it imports", errtext.Text(err))
	}
	here, fresh, err := loadLineage(b.params.Cnf)
	if err != nil {
		b.logger.Warningf("fifo backup: %s; the backup cannot be a base for incremental ones", errtext.Text(err))
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
	position, _, err := positionFromInfo(workDir, facts.pos.GTIDSet.Flavor())
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
		FormatVersion:        manifestFormatVersion,
		Source:               b.source,
		StreamBytes:          loadAll(b.streamBytes),
		Compressed:           b.cfg.Compression.Enabled,
		CompressionEngine:    b.cfg.Compression.Engine,
		CompressionLevel:     b.cfg.Compression.Level,
		CompressionExtension: b.cfg.Compression.Extension(),
		ToolFlavor:           b.tool.Flavor,
		ToolVersion:          b.tool.Version,
		ToolParams:           RedactedFlags(b.cfg.BackupFlags),
		LSN:                  lsnsFromCheckpoints(workDir),
		StartTime:            mysqlctl.FormatRFC3339(b.params.BackupTime.UTC()),
		ToolDiskReadBytes:    b.toolDiskRead,
		Lineage:              facts.lineage.Instance,
		IncrementalScan:      b.scan.mode,
		ServerPlugins:        facts.plugins,
		InnoDBPageSize:       facts.pageSize,
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
		info := LaneInfo{File: l.name, RawBytes: l.raw.Load(), StoredBytes: l.stored.Load(), Chunks: l.chunks, StreamCRC32C: l.sums.stream.String()}
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
			return errtext.Errorf(vtrpcpb.Code_INTERNAL, "the tool took an incremental backup (from_lsn %s) where a full one was asked for", m.LSN.From)
		}
		return nil
	}
	base := b.base.m
	m.BaseBackup, m.FullBackup, m.ChainLength = base.BackupName, base.FullBackup, base.ChainLength+1
	if !base.isDelta() {
		m.FullBackup = base.BackupName
	}
	if m.LSN.BackupType != "incremental" || m.LSN.From != base.LSN.To {
		return errtext.Errorf(vtrpcpb.Code_INTERNAL, "the tool was asked for an incremental backup from LSN %s but its checkpoints say backup_type %q "+
			"from_lsn %q", base.LSN.To, m.LSN.BackupType, m.LSN.From)
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
		return errtext.Wrap(err, "cannot list the server's tables, which the backup is checked against")
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

func (b *backupRun) writeManifest(ctx context.Context, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return errtext.Wrap(err, "cannot encode the MANIFEST")
	}
	w, err := b.bh.AddFile(ctx, manifestFileName, int64(len(data)))
	if err != nil {
		return errtext.Wrap(err, "cannot add the MANIFEST to the backup")
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return errtext.Wrap(err, "cannot write the MANIFEST")
	}
	if err := w.Close(); err != nil {
		return errtext.Wrap(err, "cannot close the MANIFEST")
	}
	b.logger.Infof("fifo backup %s: %d lanes, %d bytes from the tool, %d bytes stored, position %v; the tool read %d bytes from disk (page cache hits "+
		"not counted)", m.BackupName, len(m.Lanes), m.RawBytes, m.StoredBytes, m.Position, m.ToolDiskReadBytes)
	return nil
}
