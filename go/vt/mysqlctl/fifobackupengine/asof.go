package fifobackupengine

import (
	"context"
	"fmt"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
)

// Restoring "as of a time" (--restore-from-backup-ts): Vitess restores the
// newest complete backup whose MANIFEST BackupTime is at or before the time
// (mysqlctl.FindBackupToRestore), whichever engine took it; what that time
// means is the engine's (dataTime):
//   - fifo: BackupTime is the backup's consistent point, its end, not the
//     time in its name: a backup named at 10:00 whose copy ended at 10:05
//     holds the data of 10:05, so a restore to 10:00 passes it over;
//   - Vitess's xtrabackup engine: BackupTime is when it started, and its
//     data is as of its end (FinishedTime), as any hot copy's: Vitess
//     compares the start, so a restore to 10:02 of a backup that ran from
//     10:00 to 10:05 restores the data of 10:05, later than asked;
//   - Vitess's builtin engine: it copies with mysqld stopped, so its data is
//     as of its start, BackupTime.
// AsOf says which backup Vitess picks, why each newer one is passed over,
// and what time its data is really of.

// PassedOver is a backup newer than the one a restore to a time picks, and
// why it was passed over.
type PassedOver struct {
	Backup string `json:"backup"`
	Why    string `json:"why"`
}

// AsOfChoice is what a restore to a time restores.
type AsOfChoice struct {
	Picked backupstorage.BackupHandle // nil: none is at or before the time
	// PickedTime is the time the picked backup's data is of (dataTime),
	// and PickedWhy what that is, in its engine's terms.
	PickedTime time.Time
	PickedWhy  string
	// PassedOver are the newer backups, newest first.
	PassedOver []PassedOver
}

// AsOf decides among bhs (complete backups, oldest first, as ListBackups
// returns them) as Vitess's restore to time t does.
func AsOf(ctx context.Context, bhs []backupstorage.BackupHandle, t time.Time) AsOfChoice {
	var c AsOfChoice
	for i := len(bhs) - 1; i >= 0; i-- {
		bh := bhs[i]
		m, _, err := ReadAnyManifest(ctx, bh)
		if err != nil {
			c.PassedOver = append(c.PassedOver, PassedOver{bh.Name(), fmt.Sprintf("its MANIFEST cannot be read: %v", err)})
			continue
		}
		compared, err := mysqlctl.ParseRFC3339(m.BackupTime)
		if err != nil {
			c.PassedOver = append(c.PassedOver, PassedOver{bh.Name(), fmt.Sprintf("its MANIFEST's BackupTime %q is not a time", m.BackupTime)})
			continue
		}
		data, why := dataTime(m.BackupMethod, compared, m.FinishedTime)
		if compared.After(t) {
			c.PassedOver = append(c.PassedOver, PassedOver{bh.Name(), passedOverWhy(m.BackupMethod, compared, data, why, t)})
			continue
		}
		c.Picked, c.PickedTime, c.PickedWhy = bh, data, why
		return c
	}
	return c
}

// dataTime is the time a backup's data is of, and what that time is in its
// engine's terms, from its BackupTime (compared) and FinishedTime.
func dataTime(engine string, compared time.Time, finished string) (time.Time, string) {
	switch engine {
	case "xtrabackup":
		if end, err := mysqlctl.ParseRFC3339(finished); err == nil {
			return end, "when its copy ended, its FinishedTime; Vitess's xtrabackup engine writes its start as BackupTime"
		}
		return compared, "its BackupTime, when it started: its data is of its end, which its MANIFEST does not record"
	case "builtin":
		return compared, "its BackupTime: the builtin engine copies with mysqld stopped"
	}
	return compared, "its consistent point, when its copy ended"
}

// passedOverWhy says why a backup whose BackupTime is after t is passed
// over.
func passedOverWhy(engine string, compared, data time.Time, why string, t time.Time) string {
	if engine == "xtrabackup" {
		return fmt.Sprintf("it started at %s (its BackupTime, which Vitess compares), after %s; its data is as of %s (%s)",
			compared.UTC().Format(time.RFC3339), t.UTC().Format(time.RFC3339), data.UTC().Format(time.RFC3339), why)
	}
	return fmt.Sprintf("its data is as of %s (%s), after %s", data.UTC().Format(time.RFC3339), why, t.UTC().Format(time.RFC3339))
}

// logAsOf says, for a restore to a time, which newer backups the choice
// passed over and why (Vitess's own log names only the one chosen).
func logAsOf(ctx context.Context, params mysqlctl.RestoreParams, bh backupstorage.BackupHandle) {
	if params.StartTime.IsZero() {
		return
	}
	shared, err := backupstorage.GetBackupStorage()
	if err != nil {
		return
	}
	// A copy of its own, closed after: closing the shared instance would
	// close the client the restore reads through (Vitess's gcs, azblob and
	// ceph storages return themselves from WithParams: left open).
	bs := shared.WithParams(backupstorage.NoParams())
	if bs != shared {
		defer bs.Close()
	}
	bhs, err := bs.ListBackups(ctx, bh.Directory())
	if err != nil {
		params.Logger.Warningf("fifo restore: cannot list %s to say which backups a restore to %s passed over: %v", bh.Directory(),
			params.StartTime.UTC().Format(time.RFC3339), err)
		return
	}
	c := AsOf(ctx, bhs, params.StartTime)
	for _, p := range c.PassedOver {
		params.Logger.Infof("fifo restore to %s: passed over backup %s: %s", params.StartTime.UTC().Format(time.RFC3339), p.Backup, p.Why)
	}
	params.Logger.Infof("fifo restore to %s: restoring backup %s, the newest whose data is as of that time or before", params.StartTime.UTC().Format(time.RFC3339),
		bh.Name())
}
