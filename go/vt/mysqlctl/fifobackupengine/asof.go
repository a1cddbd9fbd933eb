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
// (mysqlctl.FindBackupToRestore). This engine's BackupTime is the backup's
// consistent point, its end, not the time in its name: a backup named at
// 10:00 whose copy ended at 10:05 holds the data of 10:05, so a restore to
// 10:00 passes it over for the one before. AsOf says which and why.

// PassedOver is a backup newer than the one a restore to a time picks, and
// why it was passed over.
type PassedOver struct {
	Backup string `json:"backup"`
	Why    string `json:"why"`
}

// AsOfChoice is what a restore to a time restores.
type AsOfChoice struct {
	Picked backupstorage.BackupHandle // nil: none is at or before the time
	// PickedTime is the picked backup's consistent point (its BackupTime).
	PickedTime time.Time
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
		at, err := mysqlctl.ParseRFC3339(m.BackupTime)
		if err != nil {
			c.PassedOver = append(c.PassedOver, PassedOver{bh.Name(), fmt.Sprintf("its MANIFEST's BackupTime %q is not a time", m.BackupTime)})
			continue
		}
		if at.After(t) {
			c.PassedOver = append(c.PassedOver, PassedOver{bh.Name(), fmt.Sprintf("its data is as of %s (its consistent point, when its copy "+
				"ended), after %s", at.UTC().Format(time.RFC3339), t.UTC().Format(time.RFC3339))})
			continue
		}
		c.Picked, c.PickedTime = bh, at
		return c
	}
	return c
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
