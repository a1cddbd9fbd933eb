package vtfifocli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// ShowLane is one lane as `vtfifo show` prints it; the part fields are the
// split storage's (absent on another storage).
type ShowLane struct {
	File        string `json:"file"`
	RawBytes    int64  `json:"raw_bytes"`
	StoredBytes int64  `json:"stored_bytes"`
	Chunks      int64  `json:"chunks,omitempty"`
	// StreamCRC32C is the CRC-32C of the lane's stream as written, which
	// restore and verify check (empty in a backup from before 2026-12-03).
	StreamCRC32C string `json:"stream_crc32c,omitempty"`
	Parts        int    `json:"parts,omitempty"`
	PartSize     int64  `json:"part_size,omitempty"`
}

// ShowReport is `vtfifo show --json`.
type ShowReport struct {
	Backup   string          `json:"backup"`
	Manifest json.RawMessage `json:"manifest"`
	Lanes    []ShowLane      `json:"lanes"`
	// Files are the files of the tool's backup directory (with --files).
	Files map[string]int64 `json:"files,omitempty"`
	// EncryptionKeyID names the master key of an encrypted backup on the
	// split storage ("" in the clear).
	EncryptionKeyID string `json:"encryption_key_id,omitempty"`
	// PredictedRestore is how long restoring it should take at RestoreRates,
	// those of the shard's latest test restores (absent: none to learn from).
	PredictedRestore *fifobackupengine.PredictedRestore `json:"predicted_restore,omitempty"`
	RestoreRates     *fifobackupengine.RestoreRates     `json:"restore_rates,omitempty"`
	restoreTimes     string                             // where the prediction comes from, or why there is none
	// Lock is what keeps the backup from removal at the store (split
	// storage; "not locked" when nothing does), LockedUntil its date.
	Lock        string     `json:"lock,omitempty"`
	LockedUntil *time.Time `json:"locked_until,omitempty"`
	// MAC says whether the backup is sealed (split storage), with which
	// key, and whether this storage checked it.
	MAC string `json:"mac,omitempty"`
	// Promotion says where and until when it was promoted (vtfifo promote),
	// and Cost what writing it sent to the store (split storage).
	Promotion string `json:"promotion,omitempty"`
	Cost      string `json:"cost,omitempty"`
	// Verification is its latest test restore (split storage): a failed
	// one's error is what an operator reads first.
	Verification *testrestore.Record `json:"verification,omitempty"`
	testRestore  string              // the record in a line, or why it could not be read
}

// showDoc is `vtfifo show`'s help.
var showDoc = commandDoc{"show", "Show a backup: its MANIFEST, lanes and parts, and with --files the files it holds",
	"Shows the backup (--backup, or the newest complete one) as its MANIFEST describes it, each lane's\n" +
		"bytes, chunks and CRC-32C (of its stream as written; \"-\" in a backup from before 2026-12-03), and on the\n" +
		"split storage its parts. --files also lists the files of the data\n" +
		"directory in the backup, by reading and checking every lane as verify does. --json prints one object.",
	"  vtfifo show --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce --shard=0 --files"}

// Show is `vtfifo show`: a backup's MANIFEST, its lanes and parts, and with
// --files the files of the data directory it holds (read from the lanes).
func Show(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var files, asJSON *bool
	s, bh, code := openBackup(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, _ *options) func() error {
			files = fs.Bool("files", false, "also list the files of the data directory in the backup (reads and checks every lane, like verify)")
			asJSON = fs.Bool("json", false, "print one JSON object instead of text")
			return nil
		})
	if s == nil {
		return code
	}
	defer s.close()
	rep, m, err := show(s.ctx, bh, *files, fifobackupengine.VerifyOptions{Compression: fifobackupengine.CompressionFromFlags(s.o.flags), Logger: s.logger})
	if err != nil {
		// The error names the backup (and the file and part).
		return s.fail(err)
	}
	rep.Backup = s.o.dir() + "/" + bh.Name()
	s.predictRestore(&rep, bh.Name())
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if enc.Encode(rep) != nil {
			return 1
		}
		return 0
	}
	printShow(stdout, rep, m)
	return 0
}

func show(ctx context.Context, bh backupstorage.BackupHandle, withFiles bool,
	vopts fifobackupengine.VerifyOptions) (ShowReport, *fifobackupengine.Manifest, error) {
	var rep ShowReport
	m, doc, err := fifobackupengine.ReadManifestDoc(ctx, bh)
	if err != nil {
		return rep, nil, err
	}
	rep.Manifest = doc
	if lr, ok := has[lockReader](bh); ok {
		bl, err := lr.LockState(ctx)
		if err != nil {
			return rep, nil, err
		}
		rep.Lock = cmp.Or(lockText(bl), "not locked")
		if rep.Lock != "not locked" && !bl.Lock.Until.IsZero() {
			until := bl.Lock.Until
			rep.LockedUntil = &until
		}
	}
	if sr, ok := has[sealReader](bh); ok {
		if rep.MAC, err = sr.SealState(ctx); err != nil {
			return rep, nil, err
		}
	}
	if pr, ok := has[promotionReader](bh); ok {
		if rep.Promotion, err = pr.Promotion(ctx); err != nil {
			return rep, nil, err
		}
		if rep.Cost, err = pr.Cost(ctx); err != nil {
			return rep, nil, err
		}
	}
	rep.Verification, rep.testRestore = testRestoreOf(ctx, bh)
	ix, _ := has[indexer](bh)
	if ix != nil {
		if rep.EncryptionKeyID, err = ix.EncryptionKeyID(ctx); err != nil {
			return rep, nil, err
		}
	}
	for _, l := range m.Lanes {
		sl := ShowLane{File: l.File, RawBytes: l.RawBytes, StoredBytes: l.StoredBytes, Chunks: l.Chunks, StreamCRC32C: l.StreamCRC32C}
		if ix != nil {
			idx, err := ix.Index(ctx, l.File)
			if err != nil {
				return rep, nil, err
			}
			sl.Parts, sl.PartSize = len(idx.Parts), idx.PartSize
		}
		rep.Lanes = append(rep.Lanes, sl)
	}
	if withFiles {
		vopts.ListFiles = true
		vr, err := fifobackupengine.Verify(ctx, bh, vopts)
		if err != nil {
			return rep, nil, err
		}
		rep.Files = vr.FileSizes
	}
	return rep, m, nil
}

// testRestoreOf reads bh's latest test restore record, and says it in a
// line; one that cannot be read is said, not fatal: the backup is still
// shown.
func testRestoreOf(ctx context.Context, bh backupstorage.BackupHandle) (*testrestore.Record, string) {
	rec, err := testrestore.Load(ctx, bh)
	switch {
	case err != nil:
		return nil, "cannot read its record: " + errtext.Line(err)
	case rec == nil:
		return nil, "none recorded (vtfifo test-restore proves a backup restorable)"
	}
	line := fmt.Sprintf("%s on %s, took %s", rec.Summary(), cmp.Or(rec.Host, "?"), rec.Duration)
	if rec.Outcome != testrestore.Passed {
		line += " (its error below)"
	}
	return rec, line
}

// redo says how much redo the prepare applies (the log the tool copied
// while it copied the data files): what makes a prepare long.
func redo(l fifobackupengine.LSNs) string {
	n, ok := l.Redo()
	if !ok {
		return "not recorded (LSNs " + cmp.Or(l.To, "?") + " .. " + cmp.Or(l.Last, "?") + ")"
	}
	return fmt.Sprintf("%s copied during the backup, applied by the prepare (LSN %s .. %s)", humanize.IBytes(uint64(n)), l.To, l.Last)
}

func backupType(m *fifobackupengine.Manifest) string {
	if m.BaseBackup == "" {
		return "full"
	}
	return fmt.Sprintf("incremental, %d after the full %s, on %s (LSN %s .. %s)", m.ChainLength, m.FullBackup, m.BaseBackup, m.LSN.From, m.LSN.To)
}

func encryption(keyID string) string {
	if keyID == "" {
		return "none"
	}
	return "AES-256-GCM, data key wrapped by key ID " + keyID
}

func printShow(w io.Writer, rep ShowReport, m *fifobackupengine.Manifest) {
	compression := "none"
	if m.Compressed {
		compression = fmt.Sprintf("%s (level %d)", m.CompressionEngine, m.CompressionLevel)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, kv := range [][2]string{
		{"Backup", rep.Backup},
		{"Time", cmp.Or(m.StartTime, "?") + " .. " + m.FinishedTime + " (consistent at " + m.BackupTime + ")"},
		{"Type", backupType(m)},
		{"Engine", m.BackupMethod},
		{"Position", m.Position.String()},
		{"Tool", m.ToolFlavor + " " + m.ToolVersion},
		{"Server", m.MySQLVersion},
		{"Source", m.Source},
		{"Compression", compression},
		{"Encryption", encryption(rep.EncryptionKeyID)},
		{"Server encryption", m.ServerEncryption.String()},
		{"Size", fmt.Sprintf("%s from the tool, %s stored", humanize.IBytes(uint64(m.RawBytes)), humanize.IBytes(uint64(m.StoredBytes)))},
		{"Redo", redo(m.LSN)},
		{"Restore", rep.restoreTimes},
		{"Test restore", cmp.Or(rep.testRestore, "-")},
		{"Lock", cmp.Or(rep.Lock, "-")},
		{"MAC", cmp.Or(rep.MAC, "-")},
		{"Promotion", cmp.Or(rep.Promotion, "-")},
		{"Cost", cmp.Or(rep.Cost, "-")},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LANE\tFILE\tRAW\tSTORED\tCHUNKS\tCRC-32C\tPARTS")
	for i, l := range rep.Lanes {
		parts := "-"
		if l.PartSize > 0 {
			parts = fmt.Sprintf("%d x %s", l.Parts, humanize.IBytes(uint64(l.PartSize)))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", i, l.File, humanize.IBytes(uint64(l.RawBytes)), humanize.IBytes(uint64(l.StoredBytes)), l.Chunks,
			cmp.Or(l.StreamCRC32C, "-"), parts)
	}
	tw.Flush()
	if v := rep.Verification; v != nil && v.Outcome != testrestore.Passed {
		fmt.Fprintf(w, "\nThe test restore of %s failed:\n%s\n", v.Started.UTC().Format(time.RFC3339), strings.TrimSpace(v.Error))
	}
	if rep.Files == nil {
		return
	}
	paths := make([]string, 0, len(rep.Files))
	var total int64
	for p, n := range rep.Files {
		paths = append(paths, p)
		total += n
	}
	sort.Strings(paths)
	fmt.Fprintf(w, "\n%d files, %s:\n", len(paths), humanize.IBytes(uint64(total)))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	for _, p := range paths {
		fmt.Fprintf(tw, "%d\t  %s\t\n", rep.Files[p], p)
	}
	tw.Flush()
}
