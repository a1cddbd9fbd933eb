package fifobackupengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"vitess.io/vitess/go/ioutil"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// vitessXtrabackup is the MANIFEST method of Vitess's xtrabackup engine,
// whose backups verify and test-restore read too (an adopted fleet's).
const vitessXtrabackup = "xtrabackup"

// NotRead is why this package does not read a backup of Vitess's
// xtrabackup engine (errors.As finds it): never a damaged one.
type NotRead string

func (e NotRead) Error() string { return string(e) }

// vitessStream is how Vitess's xtrabackup engine stored a backup's
// xbstream (xtrabackupengine.go, its unexported xtraBackupManifest): one
// file, or NumStripes files (stripeFileName: FileName-000, ..) that the
// stream was dealt to in StripeBlockSize blocks round robin (stripeReader),
// each compressed on its own.
type vitessStream struct {
	FileName        string
	StreamMode      string
	NumStripes      int32
	StripeBlockSize int32
	SkipCompress    bool
}

// files are the stored files, in the order the stream was dealt to them.
func (v *vitessStream) files() []string {
	if v.NumStripes <= 1 {
		return []string{v.FileName}
	}
	names := make([]string, v.NumStripes)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", v.FileName, i)
	}
	return names
}

// parseVitessXtrabackup reads a MANIFEST of Vitess's xtrabackup engine as
// a Manifest (Vitess's fields, the compression, one lane per stored file,
// the tool's flavor from the server's version) and how its stream is
// stored. What this reader cannot read is refused naming it.
func parseVitessXtrabackup(doc []byte) (*Manifest, *vitessStream, error) {
	var m Manifest
	var v vitessStream
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, nil, errtext.Wrap(err, "cannot decode MANIFEST")
	}
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, nil, errtext.Wrap(err, "cannot decode MANIFEST")
	}
	switch {
	case v.FileName == "":
		return nil, nil, NotRead("its xtrabackup MANIFEST names no FileName (a backup older than Vitess recording it)")
	case v.StreamMode != "" && v.StreamMode != "xbstream":
		return nil, nil, NotRead(fmt.Sprintf("its stream is %s (--xtrabackup-stream-mode): only xbstream is read here", v.StreamMode))
	case v.NumStripes > 1 && v.StripeBlockSize <= 0:
		return nil, nil, NotRead(fmt.Sprintf("its MANIFEST has %d stripes and no StripeBlockSize", v.NumStripes))
	}
	m.Compressed = !v.SkipCompress
	if m.Compressed && m.CompressionEngine == "" {
		m.CompressionEngine = "pargzip" // Vitess's default before it recorded the engine
	}
	if m.MySQLVersion != "" {
		m.ToolFlavor = FlavorXtrabackup
		if strings.Contains(m.MySQLVersion, "MariaDB") {
			m.ToolFlavor = FlavorMariabackup
		}
	}
	for _, f := range v.files() {
		m.Lanes = append(m.Lanes, LaneInfo{File: f})
	}
	return &m, &v, nil
}

// open reads the stored files through bh, each through its decompressor,
// and deals their blocks back into the one stream the tool wrote. Every
// stripe must end where the stream does: a stripe cut short at a block's
// end would otherwise end the stream early without an error.
// The stored and the decompressed bytes are counted in stats as a fifo
// lane's are (Source:Read, Decompressor:Read), and onRead (may be nil) gets
// the stored ones per file.
func (v *vitessStream) open(ctx context.Context, bh backupstorage.BackupHandle, m *Manifest, local CompressionConfig, stats *phaseStats,
	onRead func(lane, n int), logger logutil.Logger) (io.ReadCloser, error) {
	srcRead, decRead := stats.bytesFunc("Source:Read"), stats.bytesFunc("Decompressor:Read")
	var closers []io.Closer
	closeAll := func() error {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	var readers []io.Reader
	for i, name := range v.files() {
		f, err := bh.ReadFile(ctx, name)
		if err != nil {
			closeAll()
			return nil, errtext.Wrapf(err, "backup %s: cannot read %s", bh.Name(), name)
		}
		closers = append(closers, f)
		metered := func(n int, d time.Duration) {
			srcRead(n, d)
			if onRead != nil {
				onRead(i, n)
			}
		}
		d, err := newDecompressor(ctx, m, local, ioutil.NewMeteredReader(f, metered), logger)
		if err != nil {
			closeAll()
			return nil, errtext.Wrapf(err, "backup %s: %s", bh.Name(), name)
		}
		closers = append(closers, d)
		readers = append(readers, &namedReader{r: ioutil.NewMeteredReader(d, decRead), what: fmt.Sprintf("backup %s: %s", bh.Name(), name)})
	}
	return &unstriped{stripes: readers, block: int64(v.StripeBlockSize), left: int64(v.StripeBlockSize), close: closeAll}, nil
}

// verifyVitessStream reads a backup of Vitess's xtrabackup engine through
// xbstream.Verify: every stored file, its decompressor and every chunk's
// CRC32, writing nothing.
func verifyVitessStream(ctx context.Context, bh backupstorage.BackupHandle, m *Manifest, v *vitessStream, opts VerifyOptions) (VerifyReport, error) {
	rep := VerifyReport{Manifest: m}
	r, err := v.open(ctx, bh, m, opts.Compression, newPhaseStats(nil), opts.OnRead, opts.Logger)
	if err != nil {
		return rep, err
	}
	defer r.Close()
	st, err := xbstream.Verify(ctx, xbstream.ReaderLanes(r), xbstream.ExtractOptions{ListFiles: opts.ListFiles})
	rep.Files, rep.Bytes, rep.Lanes, rep.FileSizes = st.Files, st.Bytes, st.Lanes, st.FileSizes
	if err != nil {
		return rep, errtext.Wrapf(err, "backup %s: the stream of %s", bh.Name(), strings.Join(v.files(), ", "))
	}
	return rep, nil
}

// unstriped is Vitess's stripeReader without its goroutine: block bytes
// from each stripe in turn. The stream ends where a stripe ends inside a
// block (or at a block's end, the next one having nothing); every other
// stripe must end there too.
type unstriped struct {
	stripes []io.Reader
	block   int64 // 0: one file, read whole
	i       int
	left    int64
	done    bool
	close   func() error
}

func (u *unstriped) Read(p []byte) (int, error) {
	if len(u.stripes) == 1 {
		return u.stripes[0].Read(p)
	}
	for !u.done {
		if int64(len(p)) > u.left {
			p = p[:u.left]
		}
		n, err := u.stripes[u.i].Read(p)
		u.left -= int64(n)
		if err == io.EOF && u.left == 0 {
			err = nil // the stripe ended with a whole block: the next one's turn
		}
		switch {
		case err == io.EOF:
			u.done = true
			if err := u.othersEnded(); err != nil {
				return n, err
			}
		case err != nil:
			return n, err
		case u.left == 0:
			u.i, u.left = (u.i+1)%len(u.stripes), u.block
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, io.EOF
}

// othersEnded checks, once stripe u.i has ended, that no other stripe has
// more to give.
func (u *unstriped) othersEnded() error {
	var one [1]byte
	for j, s := range u.stripes {
		if j == u.i {
			continue
		}
		if n, err := io.ReadFull(s, one[:]); n > 0 {
			return errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "stripe %d ended while stripe %d has more: the stripes do not make one stream", u.i, j)
		} else if err != io.EOF {
			return err
		}
	}
	return nil
}

func (u *unstriped) Close() error { return u.close() }

// namedReader prefixes its reader's errors with what it reads.
type namedReader struct {
	r    io.Reader
	what string
}

func (n *namedReader) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", n.what, err)
	}
	return k, err
}

// restoreVitessStream is RestoreToDir for a backup of Vitess's xtrabackup
// engine: its stream extracted into dir by our xbstream reader, then, with
// Prepare, the tool's --prepare in place (Vitess's own restore moves the
// files with --move-back, which leaves backup-my.cnf behind; a test
// restore's server needs it). A whole backup only: that engine takes no
// incrementals that this reads, and tables are restored from fifo backups.
func restoreVitessStream(ctx context.Context, bh backupstorage.BackupHandle, m *Manifest, v *vitessStream, dir string, opts RestoreDirOptions) (RestoreDirReport, error) {
	rep := RestoreDirReport{Manifest: m, Chain: []string{m.BackupName}}
	if opts.Tables != nil {
		return rep, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s was taken by Vitess's xtrabackup engine: tables are restored from fifo backups only", bh.Name())
	}
	if opts.OnManifest != nil {
		opts.OnManifest(m)
	}
	run := &restoreRun{cfg: opts.Config, bh: bh, m: m, stats: newPhaseStats(opts.Stats), logger: opts.Logger, onRead: opts.OnRead, onPhase: opts.OnPhase,
		checkTables: opts.CheckTables, scope: wholeBackup{}}
	var tool *backupTool
	if opts.Prepare {
		var err error
		if tool, err = detectTool(ctx, &run.cfg); err != nil {
			return rep, err
		}
		if m.ToolFlavor == "" {
			m.ToolFlavor = tool.Flavor // no server version recorded: the tool's prepare judges
		}
		if err := run.checkTool(tool); err != nil {
			return rep, err
		}
	}
	var err error
	if rep.Target, err = claimEmptyDir(dir); err != nil {
		return rep, err
	}
	err = run.extractVitessStream(ctx, v, rep.Target.Files())
	if err == nil && tool != nil {
		err = run.prepare(ctx, tool, prepareStep{DefaultsFile: opts.DefaultsFile, TargetDir: rep.Target.Files(), CheckTables: run.checkTables,
			AriaLogInTarget: setsAriaLogDir(opts.DefaultsFile)})
		rep.Tool = tool.Flavor + " " + tool.Version
	}
	if err == nil && !opts.LeaveStaged {
		err = rep.Target.Done(tool != nil, opts.Logger)
	}
	if err != nil {
		_ = rep.Target.RemoveRestored()
		return rep, errtext.Wrapf(err, "restore of backup %s (Vitess's xtrabackup engine) into %s failed", bh.Name(), dir)
	}
	rep.Files, rep.Bytes = countFiles(rep.Target.FilesNow())
	rep.ReadBytes = run.readBytes.Load()
	return rep, nil
}

// extractVitessStream downloads, decompresses and extracts the stream of
// a backup of Vitess's xtrabackup engine into dir.
func (r *restoreRun) extractVitessStream(ctx context.Context, v *vitessStream, dir string) error {
	r.phase(PhaseDownload)
	onRead := func(lane, n int) {
		r.readBytes.Add(int64(n))
		if r.onRead != nil {
			r.onRead(lane, n)
		}
	}
	src, err := v.open(ctx, r.bh, r.m, r.cfg.Compression, r.stats, onRead, r.logger)
	if err != nil {
		return err
	}
	defer src.Close()
	r.logger.Infof("fifo restore: extracting %s (Vitess's xtrabackup engine) into %s", strings.Join(v.files(), ", "), dir)
	st, err := xbstream.Extract(ctx, dir, xbstream.ReaderLanes(src), xbstream.ExtractOptions{})
	if err != nil {
		return errtext.Wrapf(err, "extracting %s", strings.Join(v.files(), ", "))
	}
	r.logger.Infof("fifo restore: extracted %d files, %d bytes", st.Files, st.Bytes)
	return nil
}
