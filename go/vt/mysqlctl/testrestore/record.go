package testrestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// ErrNoRecords is returned by Store for a storage that keeps no documents
// beside a backup (only the split storage does).
var ErrNoRecords = errors.New("only the split storage keeps verification records")

// sidecars is what the split storage's handles offer beyond BackupHandle.
type sidecars interface {
	PutSidecar(ctx context.Context, name string, doc []byte) error
	ReadSidecar(ctx context.Context, name string) ([]byte, error)
	Quarantine(ctx context.Context, reason string) error
}

var _ sidecars = (*splitstorage.Handle)(nil)

// Store writes rec beside bh, replacing an older record.
func Store(ctx context.Context, bh backupstorage.BackupHandle, rec Record) error {
	sc, ok := bh.(sidecars)
	if !ok {
		return ErrNoRecords
	}
	doc, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return sc.PutSidecar(ctx, RecordName, doc)
}

// Quarantine takes a backup that failed its test restore out of the list
// restores choose from (see splitstorage.Handle.Quarantine).
func Quarantine(ctx context.Context, bh backupstorage.BackupHandle, rec Record) error {
	sc, ok := bh.(sidecars)
	if !ok {
		return ErrNoRecords
	}
	return sc.Quarantine(ctx, fmt.Sprintf("test restore failed %s: %s", rec.Started.Format("2006-01-02T15:04:05Z"), rec.Error))
}

// Load reads bh's record; nil when it has none.
func Load(ctx context.Context, bh backupstorage.BackupHandle) (*Record, error) {
	sc, ok := bh.(sidecars)
	if !ok {
		return nil, nil
	}
	doc, err := sc.ReadSidecar(ctx, RecordName)
	if errors.Is(err, splitstorage.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := ParseRecord(doc)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// PassedFunc reports, for retention.KeepProven, whether a backup's latest
// test restore passed (an unreadable record counts as not proven).
func PassedFunc(ctx context.Context) func(backupstorage.BackupHandle) bool {
	return func(bh backupstorage.BackupHandle) bool {
		rec, err := Load(ctx, bh)
		return err == nil && rec != nil && rec.Outcome == Passed
	}
}

// FailedFunc reports, for retention.KeepCount, whether a backup's latest
// test restore failed (no record, or one that cannot be read, is not a
// failure).
func FailedFunc(ctx context.Context) func(backupstorage.BackupHandle) bool {
	return func(bh backupstorage.BackupHandle) bool {
		rec, err := Load(ctx, bh)
		return err == nil && rec != nil && rec.Outcome == Failed
	}
}
