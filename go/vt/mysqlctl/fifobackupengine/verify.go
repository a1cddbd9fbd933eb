package fifobackupengine

import (
	"context"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/xbstream"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// checkConsistency checks what Manifest.check does not: totals are the sums
// over the lanes, no count is negative, the compression fields agree.
func (m *Manifest) checkConsistency() error {
	bad := func(format string, args ...any) error {
		return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, format, args...)
	}
	var raw, stored int64
	for i, l := range m.Lanes {
		if l.RawBytes < 0 || l.StoredBytes < 0 || l.Chunks < 0 {
			return bad("lane %d (%s) has a negative byte or chunk count", i, l.File)
		}
		if l.StreamCRC32C != "" && !streamSumForm.MatchString(l.StreamCRC32C) {
			return bad("lane %d (%s) has StreamCRC32C %q: not 8 lower-case hex digits", i, l.File, l.StreamCRC32C)
		}
		raw += l.RawBytes
		stored += l.StoredBytes
	}
	if raw != m.RawBytes || stored != m.StoredBytes {
		return bad("RawBytes %d / StoredBytes %d are not the sums over the lanes (%d / %d)", m.RawBytes, m.StoredBytes, raw, stored)
	}
	if !m.Compressed {
		if m.CompressionExtension != "" {
			return bad("not compressed but CompressionExtension is %q", m.CompressionExtension)
		}
		return nil
	}
	c := CompressionConfig{Enabled: true, Engine: m.CompressionEngine, ExternalExtension: m.CompressionExtension}
	if _, ok := codecs[m.CompressionEngine]; !ok {
		return bad("unknown CompressionEngine %q", m.CompressionEngine)
	}
	if ext := c.Extension(); ext != m.CompressionExtension {
		return bad("CompressionEngine %s writes %q files, CompressionExtension says %q", m.CompressionEngine, ext, m.CompressionExtension)
	}
	return nil
}

// VerifyOptions configures Verify.
type VerifyOptions struct {
	// Compression is the local decompressor configuration (as restore uses
	// it: an external decompressor comes from here, or from the MANIFEST
	// when UseManifestDecompressor is set).
	Compression CompressionConfig
	// OnRead is called with the stored bytes read from a lane (progress);
	// called from the lanes' goroutines.
	OnRead func(lane int, n int)
	// OnManifest, if set, is called once the MANIFEST is read and checked.
	OnManifest func(*Manifest)
	// ListFiles fills VerifyReport.FileSizes.
	ListFiles bool
	Logger    logutil.Logger
}

// VerifyReport is what Verify read.
type VerifyReport struct {
	Manifest *Manifest
	// Files and Bytes are the files and payload bytes a restore would write.
	Files int
	Bytes int64
	// Lanes are the uncompressed stream bytes and chunks read per lane.
	Lanes []xbstream.LaneStats
	// FileSizes are the files of the tool's backup directory and their
	// sizes, with VerifyOptions.ListFiles.
	FileSizes map[string]int64
}

// Verify reads a backup as restore does and writes nothing: the MANIFEST
// (ParseManifest), every lane through the storage (which checks its own
// checksums) and the decompressor, and every xbstream chunk through
// xbstream.Verify (CRC32 of every payload, sequence completeness, gaps and
// overlaps per file, paths), each lane's length and CRC-32C at its end
// (checkedLane), then the MANIFEST's replication position against the one
// the tool's xtrabackup_info in the stream records (checkPosition), and
// reads the lane index (a table restore's map of the lanes).
// Errors name the backup, the lane and its file, the stream offset and the
// path, as restore's do.
func Verify(ctx context.Context, bh backupstorage.BackupHandle, opts VerifyOptions) (VerifyReport, error) {
	if opts.Logger == nil {
		opts.Logger = logutil.NewConsoleLogger()
	}
	var rep VerifyReport
	m, stream, err := readRestorable(ctx, bh)
	if err != nil {
		return rep, err
	}
	rep.Manifest = m
	if opts.OnManifest != nil {
		opts.OnManifest(m)
	}
	if stream != nil {
		return verifyVitessStream(ctx, bh, m, stream, opts)
	}
	from := &storedLanes{bh: bh, m: m, comp: opts.Compression, stats: newPhaseStats(nil), onRead: opts.OnRead, logger: opts.Logger, checkIndex: true}
	opt := xbstream.ExtractOptions{ListFiles: opts.ListFiles, Keep: isInfoFile}
	ix, ixErr := from.laneIndex(ctx)
	check := newIndexCheck(ix, m)
	if check != nil {
		opt.OnRecord, from.sums = check.record, check.summer
	}
	st, err := xbstream.Verify(ctx, from.lanes(ctx), opt)
	rep.Files, rep.Bytes, rep.Lanes, rep.FileSizes = st.Files, st.Bytes, st.Lanes, st.FileSizes
	if err != nil {
		return rep, from.judge(errtext.Wrapf(err, "backup %s: lanes (%s)", bh.Name(), laneNames(m)))
	}
	if err := checkPosition(m, st.Kept, opts.Logger); err != nil {
		return rep, from.judge(err)
	}
	// The lane index, read through the storage's checksums and checked
	// against the MANIFEST, so that a full check has read every file of the
	// backup, and against the lanes (their frames' stored offsets by
	// reading them frame by frame, their records and files by indexCheck):
	// a whole restore reads the lanes without it (and went on without it
	// above), a table restore cannot.
	err = from.indexMismatch.get()
	if err == nil && check != nil {
		err = check.result(m)
	}
	if ixErr != nil {
		err = ixErr
	}
	if err != nil {
		return rep, errtext.Wrapf(err, "table restores cannot use this backup's lane index (a whole restore does not need it)")
	}
	return rep, nil
}
