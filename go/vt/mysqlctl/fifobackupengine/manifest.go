package fifobackupengine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// manifestFileName is the file Vitess reads to find the engine of a backup.
const manifestFileName = "MANIFEST"

// maxManifestBytes bounds what is read of a MANIFEST (a real one is a few KiB).
const maxManifestBytes = 16 << 20

// Manifest is Vitess's BackupManifest plus what this engine needs to restore
// and what an operator wants to know about a backup.
type Manifest struct {
	mysqlctl.BackupManifest

	// FormatVersion is the version of this document's format
	// (manifestFormatVersion when this engine writes it; 0: written before
	// versions were recorded). A reader of an earlier one reads a later
	// version's as written by a later engine (laterManifest), never as
	// damaged.
	FormatVersion int `json:",omitempty"`

	// Source is where the stream came from: stdout (the tool's one stream) or
	// fifo (its FIFO streams). Either way the engine dealt the chunks to the
	// lanes by bytes, except in backups written before FIFOStreams was
	// recorded, where each FIFO stream was stored as it came as one lane.
	Source string
	// FIFOStreams is the number of the tool's FIFO streams (source fifo).
	FIFOStreams int `json:",omitempty"`
	// StreamBytes is what was read from each of the tool's streams.
	StreamBytes []int64 `json:",omitempty"`
	Lanes       []LaneInfo
	// LaneIndex is the file mapping the stream's files to the lanes' frames
	// (laneindex.go); empty where lanes are not seekable.
	LaneIndex string `json:",omitempty"`
	// RawBytes and StoredBytes are the sums over the lanes.
	RawBytes    int64
	StoredBytes int64

	Compressed           bool
	CompressionEngine    string
	CompressionLevel     int
	CompressionExtension string
	ExternalDecompressor string `json:",omitempty"`

	ToolFlavor  string
	ToolVersion string
	ToolParams  string `json:",omitempty"`
	LSN         LSNs
	// ToolDiskReadBytes is what the tool read from disk (its rusage; reads
	// the page cache served are not counted; -1: unknown): a delta reads
	// every page with mariabackup, only the changed ones with Percona's
	// --page-tracking.
	ToolDiskReadBytes int64 `json:",omitempty"`
	// IncrementalScan is how a delta found the pages it copied:
	// ScanPageTracking or ScanFull (pagetracking.go); empty for a full.
	IncrementalScan string `json:",omitempty"`

	// StartTime is when the backup began (the time in its name).
	// BackupTime is when the tool finished: its data's consistent point is
	// at or before it (XtraBackup and mariabackup take it at the end), which
	// is what Vitess compares a restore-to time and --restore-from-backup-ts
	// with.
	StartTime string `json:",omitempty"`

	// Incremental backups (incremental.go). In Vitess's sense every fifo
	// backup is full (BackupManifest.Incremental is false): restoring a delta
	// restores its chain, the full first. LSN.From is the base's LSN.To.
	//
	// BaseBackup is the backup this one holds the changed pages since.
	BaseBackup string `json:",omitempty"`
	// FullBackup is the full backup its chain starts from.
	FullBackup string `json:",omitempty"`
	// ChainLength counts the deltas from the full to this one (0: a full).
	ChainLength int `json:",omitempty"`
	// Lineage names the life of the data directory it was taken from
	// (lineage.go): a delta is only taken against a backup of the same.
	Lineage string `json:",omitempty"`

	// ServerEncryption is the server's own data-at-rest encryption
	// (serverencryption.go); nil when it had no encryption plugin.
	ServerEncryption *ServerEncryption `json:",omitempty"`

	// InnoDBPageSize is the server's innodb_page_size (0: not recorded, a
	// backup before 2026-11-29): a tablespace imports only into a server
	// of the same (CheckImportPageSize).
	InnoDBPageSize int64 `json:",omitempty"`

	// ServerPlugins are the plugins the server had loaded from a library
	// when the backup began (plugins.go): what a server started on the
	// backup must load to read its tables.
	ServerPlugins []ServerPlugin `json:",omitempty"`
}

// isDelta reports whether the backup is an incremental one.
func (m *Manifest) isDelta() bool { return m.BaseBackup != "" }

// LanesDecodedByHostCommand says the backup's lanes are decoded by an
// external command of the host that reads them (--external-decompressor),
// which may not be the one they were written for: what that command makes of
// them is no proof about the backup, only the storage's checksums are.
func (m *Manifest) LanesDecodedByHostCommand() bool {
	return m.Compressed && m.CompressionEngine == mysqlctl.ExternalCompressor
}

// LaneInfo describes one lane file of the backup.
type LaneInfo struct {
	File        string
	RawBytes    int64
	StoredBytes int64
	Chunks      int64 `json:",omitempty"`
	// StreamCRC32C is the CRC-32C (Castagnoli) of the lane's uncompressed
	// stream, RawBytes long, as 8 hex digits (lanecheck.go); empty in a
	// backup written before 2026-12-03.
	StreamCRC32C string `json:",omitempty"`
}

// LSNs are the InnoDB log sequence numbers the tool recorded.
type LSNs struct {
	BackupType string `json:",omitempty"`
	From       string `json:",omitempty"`
	To         string `json:",omitempty"`
	Last       string `json:",omitempty"`
}

// Redo is the redo the tool copied while it copied the data files, which
// the prepare applies: last_lsn - to_lsn, in bytes of log. ok is false when
// the backup does not record both (one taken before the LSNs were kept).
func (l LSNs) Redo() (bytes int64, ok bool) {
	to, err1 := strconv.ParseInt(l.To, 10, 64)
	last, err2 := strconv.ParseInt(l.Last, 10, 64)
	if err1 != nil || err2 != nil || last < to {
		return 0, false
	}
	return last - to, true
}

func laneFileName(i int, ext string) string {
	return fmt.Sprintf("lane-%03d.xbstream%s", i, ext)
}

// BackupFiles names the files of a backup from its MANIFEST, whichever
// engine took it: this engine's lanes and lane index; Vitess's xtrabackup
// engine's FileName, or its stripes FileName-000.. (xtrabackupengine.go,
// stripeFileName); its builtin engine's FileEntries, stored as 0, 1, ..
// (builtinbackupengine.go); the MANIFEST last. An engine it does not know,
// or a MANIFEST that does not say, is an error naming it: a copy must never
// leave a file behind.
func BackupFiles(doc []byte) ([]string, error) {
	var m struct {
		BackupMethod string
		Lanes        []LaneInfo
		LaneIndex    string
		FileName     string
		NumStripes   int32
		FileEntries  []json.RawMessage
	}
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("the MANIFEST is not JSON: %w", err)
	}
	var files []string
	switch m.BackupMethod {
	case "fifo":
		for _, l := range m.Lanes {
			files = append(files, l.File)
		}
		if m.LaneIndex != "" {
			files = append(files, m.LaneIndex)
		}
	case "xtrabackup":
		if m.FileName == "" {
			return nil, flagvalue.Contradiction(errors.New("its xtrabackup MANIFEST names no FileName (a backup older than Vitess recording it): its " +
				"file is not known"))
		}
		files = append(files, m.FileName)
		if m.NumStripes > 0 {
			files = files[:0]
			for i := range int(m.NumStripes) {
				files = append(files, fmt.Sprintf("%s-%03d", m.FileName, i))
			}
		}
	case "builtin":
		for i := range m.FileEntries {
			files = append(files, strconv.Itoa(i))
		}
	default:
		// Another engine's backup, not a damaged one: a request this tool refuses.
		return nil, flagvalue.Contradiction(fmt.Errorf("its engine %q keeps files this tool does not know (fifo, xtrabackup and builtin only)",
			m.BackupMethod))
	}
	return append(files, manifestFileName), nil
}

// ManifestFileName is the name of the MANIFEST file in a backup.
const ManifestFileName = manifestFileName

// ParseManifest decodes a MANIFEST and runs the checks restore runs before
// it touches anything: the engine, lane names and count, source and tool
// flavor (Manifest.check), and that the byte counts and the compression
// fields agree with each other. A hand-edited MANIFEST fails here.
func ParseManifest(doc []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(doc))
	decodeErr := dec.Decode(&m)
	if err := laterManifest(doc, m.FormatVersion, decodeErr); err != nil {
		return nil, err
	}
	if decodeErr != nil {
		return nil, errtext.Wrap(decodeErr, "cannot decode MANIFEST")
	}
	if dec.More() {
		return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "MANIFEST has data after its JSON object")
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	if err := m.checkConsistency(); err != nil {
		return nil, err
	}
	return &m, nil
}

// manifestFormatVersion is the MANIFEST format this engine writes, and the
// latest it reads. Raise it when a MANIFEST this engine writes would fail
// an earlier reader's checks or be misread by it: a value added to a closed
// list (source, tool flavor, compression), a field whose absence an
// earlier reader would take for another meaning.
const manifestFormatVersion = 1

// laterManifest is the error of a MANIFEST of a later format version than
// this engine reads (its decoded version, or after a failed decode, which
// a later format may cause, the version read alone): written by a later
// engine, it proves nothing about the backup (unreadable, never damage).
func laterManifest(doc []byte, decoded int, decodeErr error) error {
	if decodeErr != nil {
		var v struct{ FormatVersion int }
		_ = json.Unmarshal(doc, &v)
		decoded = v.FormatVersion
	}
	if decoded <= manifestFormatVersion {
		return nil
	}
	return unreadable.Error(errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "MANIFEST of format version %d, written by a later version of the "+
		"fifo engine (this one reads versions up to %d): read it with that version or later; nothing says it is damaged", decoded,
		manifestFormatVersion))
}

// ReadManifest reads and checks the MANIFEST of a backup of this engine.
func ReadManifest(ctx context.Context, bh backupstorage.BackupHandle) (*Manifest, error) {
	m, _, err := ReadManifestDoc(ctx, bh)
	return m, err
}

// ReadManifestDoc is ReadManifest that also returns the document as stored.
func ReadManifestDoc(ctx context.Context, bh backupstorage.BackupHandle) (*Manifest, []byte, error) {
	doc, err := readManifestBytes(ctx, bh)
	if err != nil {
		return nil, nil, err
	}
	m, err := ParseManifest(doc)
	if err != nil {
		return nil, doc, errtext.Wrapf(err, "backup %s: MANIFEST", bh.Name())
	}
	return m, doc, nil
}

// ReadRestorable reads the MANIFEST of a backup that RestoreToDir and
// Verify read: this engine's, or Vitess's xtrabackup engine's seen as a
// Manifest (Vitess's fields, its compression, a lane per stored file, the
// tool's flavor from its server's version). Another engine's is an error
// naming it; one of Vitess's xtrabackup engine that this package does not
// read is a NotRead.
func ReadRestorable(ctx context.Context, bh backupstorage.BackupHandle) (*Manifest, error) {
	m, _, err := readRestorable(ctx, bh)
	return m, err
}

// ParseRestorable is ReadRestorable of a MANIFEST already read (doc).
func ParseRestorable(name string, doc []byte) (*Manifest, error) {
	m, _, err := parseRestorable(name, doc)
	return m, err
}

// readRestorable is ReadRestorable with how a Vitess xtrabackup engine's
// backup stored its stream (nil for this engine's).
func readRestorable(ctx context.Context, bh backupstorage.BackupHandle) (*Manifest, *vitessStream, error) {
	doc, err := readManifestBytes(ctx, bh)
	if err != nil {
		return nil, nil, err
	}
	return parseRestorable(bh.Name(), doc)
}

func parseRestorable(name string, doc []byte) (*Manifest, *vitessStream, error) {
	var method struct{ BackupMethod string }
	if json.Unmarshal(doc, &method) == nil && method.BackupMethod == vitessXtrabackup {
		m, v, err := parseVitessXtrabackup(doc)
		if err != nil {
			return nil, nil, fmt.Errorf("backup %s: MANIFEST: %w", name, err)
		}
		return m, v, nil
	}
	m, err := ParseManifest(doc)
	if err != nil {
		return nil, nil, errtext.Wrapf(err, "backup %s: MANIFEST", name)
	}
	return m, nil, nil
}

// ReadAnyManifest reads the MANIFEST of a backup of any engine (builtin,
// xtrabackup, fifo) as Vitess's own fields (engine, time, position), with
// the document (ParseManifest reads a fifo one in full).
func ReadAnyManifest(ctx context.Context, bh backupstorage.BackupHandle) (*mysqlctl.BackupManifest, []byte, error) {
	doc, err := readManifestBytes(ctx, bh)
	if err != nil {
		return nil, nil, err
	}
	var m mysqlctl.BackupManifest
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, doc, errtext.Wrapf(err, "backup %s: MANIFEST is not JSON", bh.Name())
	}
	return &m, doc, nil
}

// ReadManifestBytes reads a backup's MANIFEST as stored, whatever its
// engine, for ParseRestorable and RestoreDirOptions.ManifestDoc.
func ReadManifestBytes(ctx context.Context, bh backupstorage.BackupHandle) ([]byte, error) {
	return readManifestBytes(ctx, bh)
}

// readManifestBytes is the one read of a MANIFEST: bounded, with a clear
// error for one over the bound.
func readManifestBytes(ctx context.Context, bh backupstorage.BackupHandle) ([]byte, error) {
	r, err := bh.ReadFile(ctx, manifestFileName)
	if unreadable.Missing(err) {
		// Nothing to judge: a backup that never completed, or a root read
		// through another storage than the one that wrote it (a split
		// storage's root as Vitess's file storage lists parts, no MANIFEST).
		return nil, unreadable.Error(errtext.Wrapf(err, "backup %s: it has no MANIFEST: an incomplete backup, or another storage's "+
			"(check --backup-storage-implementation and the storage flags)", bh.Name()))
	}
	if err != nil {
		return nil, errtext.Wrapf(err, "backup %s: cannot read MANIFEST", bh.Name())
	}
	defer r.Close()
	doc, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return nil, errtext.Wrapf(err, "backup %s: cannot read MANIFEST", bh.Name())
	}
	if len(doc) > maxManifestBytes {
		return nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s: MANIFEST is larger than %d bytes", bh.Name(), maxManifestBytes)
	}
	return doc, nil
}

// check rejects a MANIFEST that could not have been written by this engine,
// so a hand-edited one fails before any data is touched.
func (m *Manifest) check() error {
	if m.BackupMethod != engineName {
		return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "BackupMethod is %q, not %q", m.BackupMethod, engineName)
	}
	if len(m.Lanes) < 1 || len(m.Lanes) > maxLanes {
		return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "has %d lanes, want 1..%d", len(m.Lanes), maxLanes)
	}
	seen := map[string]bool{}
	for i, l := range m.Lanes {
		if l.File != laneFileName(i, m.CompressionExtension) || seen[l.File] {
			return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "lane %d has file name %q, want %q", i, l.File, laneFileName(i, m.CompressionExtension))
		}
		seen[l.File] = true
	}
	switch m.Source {
	case SourceStdout, SourceFIFO:
	default:
		return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "unknown source %q", m.Source)
	}
	switch m.ToolFlavor {
	case FlavorXtrabackup, FlavorMariabackup:
	default:
		return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "unknown tool flavor %q", m.ToolFlavor)
	}
	switch {
	case m.Incremental:
		return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "is incremental in Vitess's sense, which the fifo engine never writes")
	case m.BaseBackup == "" && (m.FullBackup != "" || m.ChainLength != 0):
		return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "has no BaseBackup but FullBackup %q and ChainLength %d", m.FullBackup, m.ChainLength)
	case m.BaseBackup != "" && (m.FullBackup == "" || m.ChainLength < 1 || m.LSN.From == "" || m.BaseBackup == m.BackupName):
		return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "is incremental (BaseBackup %q) but FullBackup %q, ChainLength %d or LSN.From %q is wrong",
			m.BaseBackup, m.FullBackup, m.ChainLength, m.LSN.From)
	}
	return nil
}

// lsnsFromCheckpoints reads xtrabackup_checkpoints ("key = value" lines).
func lsnsFromCheckpoints(dir string) LSNs {
	var l LSNs
	for _, name := range []string{"xtrabackup_checkpoints", "mariadb_backup_checkpoints"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			k, v, ok := strings.Cut(s.Text(), "=")
			if !ok {
				continue
			}
			v = strings.TrimSpace(v)
			switch strings.TrimSpace(k) {
			case "backup_type":
				l.BackupType = v
			case "from_lsn":
				l.From = v
			case "to_lsn":
				l.To = v
			case "last_lsn":
				l.Last = v
			}
		}
		f.Close()
		break
	}
	return l
}
