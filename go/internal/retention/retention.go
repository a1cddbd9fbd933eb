// Package retention is vtbackup's rule for which old backups go, shared by
// `vtfifo prune` and vtbackup --fifo-backup-test-restore (which prunes only
// once the new backup passed its test).
package retention

import (
	"time"

	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
)

// Candidates are the backups of bhs (oldest first, as ListBackups returns
// them) that vtbackup's rule removes: outside the newest keep and at least
// within old, oldest first, stopping at the first younger one. A name that
// carries no time (not Vitess's <date>.<time>.<alias>) stops the scan: it
// is kept, and so is everything newer.
func Candidates(bhs []backupstorage.BackupHandle, keep int, within time.Duration, now time.Time) []backupstorage.BackupHandle {
	var out []backupstorage.BackupHandle
	for i, bh := range bhs {
		if i >= len(bhs)-keep {
			break
		}
		t, _, err := mysqlctl.ParseBackupName(bh.Directory(), bh.Name())
		if err != nil || t == nil || now.Sub(*t) < within {
			break
		}
		out = append(out, bh)
	}
	return out
}

// KeepProven takes out of cands (Candidates' answer for bhs) the newest
// backup of bhs that passed a test restore (passed says so): retention never
// removes the last backup proven restorable, whatever the count or age. It
// returns the candidates left and the backup it kept (nil when none of bhs
// is proven, or it was not a candidate).
func KeepProven(bhs, cands []backupstorage.BackupHandle, passed func(backupstorage.BackupHandle) bool) ([]backupstorage.BackupHandle, backupstorage.BackupHandle) {
	for i := len(bhs) - 1; i >= 0; i-- {
		if !passed(bhs[i]) {
			continue
		}
		for j, c := range cands {
			if c.Name() == bhs[i].Name() {
				return append(cands[:j:j], cands[j+1:]...), c
			}
		}
		return cands, nil
	}
	return cands, nil
}
