package vtfifocli

import (
	"context"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// What a listing says of one backup (ls, the fleet view, the restore
// predictions): read from its MANIFEST and its test record.

// BackupInfo is one backup as `vtfifo ls` shows it.
type BackupInfo struct {
	Name   string `json:"name"`
	Engine string `json:"engine"`
	// Storage is the storage the backup is in: the one in use, or the
	// split storage's legacy one.
	Storage     string `json:"storage"`
	Time        string `json:"time,omitempty"`
	Position    string `json:"position,omitempty"`
	Lanes       int    `json:"lanes,omitempty"`
	RawBytes    int64  `json:"raw_bytes,omitempty"`
	StoredBytes int64  `json:"stored_bytes,omitempty"`
	Compression string `json:"compression,omitempty"`
	Tool        string `json:"tool,omitempty"`
	// Base is the backup an incremental one holds the changes since, and
	// ChainLength its place after the chain's full (0 for a full).
	Base        string `json:"base,omitempty"`
	ChainLength int    `json:"chain_length,omitempty"`
	// Verification is the backup's latest test restore (split storage).
	Verification *testrestore.Record `json:"verification,omitempty"`
	// PredictedRestore is how long restoring it should take, at the rates
	// of the shard's latest test restores (restoretime.go).
	PredictedRestore *fifobackupengine.PredictedRestore `json:"predicted_restore,omitempty"`
	// Problem says why the MANIFEST could not be read, if it could not.
	Problem string `json:"problem,omitempty"`
	// DamagedBase is, for a delta, the backup of its chain whose MANIFEST
	// is damaged (markBrokenChains): restores pass over it.
	DamagedBase string `json:"damaged_base,omitempty"`
	// State says why restores never pick the backup: "quarantined: " and
	// the reason (split storage); empty for a complete one.
	State string `json:"state,omitempty"`
	// Lock is what keeps it from removal at the store ("locked until ...",
	// split storage), and LockedUntil its date; empty when nothing does.
	Lock        string     `json:"lock,omitempty"`
	LockedUntil *time.Time `json:"locked_until,omitempty"`

	manifest *fifobackupengine.Manifest // a fifo backup's
	// damaged: Problem is proof about the MANIFEST (not an access error);
	// noManifest: there is none (a backup that never completed, another
	// storage's directory): what is there, not a read that failed.
	// elsewhere: it is another backup's, copied or renamed here
	// (splitstorage.Handle.CheckPlace): what is there, not damage.
	damaged, noManifest, elsewhere bool
}

// isDamage says whether err, reading a backup, is proof about it: not an
// access error, nor a request the data contradicts.
func isDamage(err error) bool { return !unreadable.Is(err) && !flagvalue.IsContradiction(err) }

// describe reads a backup's MANIFEST: a fifo one in full, another engine's
// (builtin, xtrabackup) for its engine, time and position.
func describe(ctx context.Context, bh backupstorage.BackupHandle) BackupInfo {
	info := BackupInfo{Name: bh.Name()}
	describeLock(ctx, bh, &info)
	base, doc, err := fifobackupengine.ReadAnyManifest(ctx, bh)
	if err != nil {
		info.Problem, info.damaged, info.noManifest = errtext.Line(err), isDamage(err), unreadable.Missing(err)
		info.elsewhere = flagvalue.IsContradiction(err)
		return info
	}
	info.Engine, info.Time, info.Position = base.BackupMethod, base.BackupTime, base.Position.String()
	if base.BackupMethod != "fifo" {
		return info
	}
	m, err := fifobackupengine.ParseManifest(doc)
	if err != nil {
		info.Problem, info.damaged = "MANIFEST: "+errtext.Line(err), isDamage(err)
		return info
	}
	info.Lanes, info.RawBytes, info.StoredBytes = len(m.Lanes), m.RawBytes, m.StoredBytes
	info.Compression = "none"
	if m.Compressed {
		info.Compression = m.CompressionEngine
	}
	info.Tool = m.ToolFlavor + " " + m.ToolVersion
	info.Base, info.ChainLength, info.manifest = m.BaseBackup, m.ChainLength, m
	rec, err := testrestore.Load(ctx, bh)
	if err != nil {
		info.Problem = "cannot read its verification record: " + errtext.Line(err)
	}
	info.Verification = rec
	return info
}

// markBrokenChains sets DamagedBase of each delta of infos (one shard's,
// oldest first) whose chain needs a backup listed there with a damaged
// MANIFEST: what restores pass over (fifobackupengine.CheckRestorable),
// shown where the operator looks.
func markBrokenChains(infos []BackupInfo) {
	damaged := map[string]string{} // a backup's name: the damaged one its chain needs
	for i := range infos {
		b := &infos[i]
		if b.damaged {
			damaged[b.Name] = b.Name
		} else if d, ok := damaged[b.Base]; ok && b.Base != "" {
			b.DamagedBase, damaged[b.Name] = d, d
		}
	}
}

// describeLock says what keeps the backup from removal, where the storage
// locks backups.
func describeLock(ctx context.Context, bh backupstorage.BackupHandle, info *BackupInfo) {
	lr, ok := has[lockReader](bh)
	if !ok {
		return
	}
	bl, err := lr.LockState(ctx)
	if err != nil {
		info.Lock = "lock unknown: " + errtext.Line(err)
		return
	}
	if info.Lock = lockText(bl); info.Lock != "" && !bl.Lock.Until.IsZero() {
		until := bl.Lock.Until
		info.LockedUntil = &until
	}
}
