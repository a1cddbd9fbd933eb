// Package retention is vtbackup's rule for which old backups go, shared by
// `vtfifo prune` and vtbackup --fifo-backup-test-restore (which prunes only
// once the new backup passed its test).
package retention

import (
	"fmt"
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
		t, ok := Dated(bh)
		if !ok || now.Sub(t) < within {
			break
		}
		out = append(out, bh)
	}
	return out
}

// KeepCount is how many of the newest backups of bhs (oldest first) the
// newest keep are, counting only those that did not fail a test restore
// (failed says so): a backup that failed its test is not one an operator
// keeps for restores, so --keep=1 over an untested backup and a newer
// failed one keeps both, never the failed one alone. The failed backups
// among the newest are kept with them (they are newer than a kept one).
func KeepCount(bhs []backupstorage.BackupHandle, keep int, failed func(backupstorage.BackupHandle) bool) int {
	counted := 0
	for i := len(bhs) - 1; i >= 0; i-- {
		if !failed(bhs[i]) {
			counted++
		}
		if counted == keep {
			return len(bhs) - i
		}
	}
	return len(bhs)
}

// KeepProven takes out of cands (Candidates' answer for bhs) the newest
// backup of bhs that passed a test restore (passed says so): retention never
// removes the last backup proven restorable, whatever the count or age. It
// returns the candidates left and the backup it kept (nil when none of bhs
// is proven, or it was not a candidate).
func KeepProven(bhs, cands []backupstorage.BackupHandle,
	passed func(backupstorage.BackupHandle) bool) ([]backupstorage.BackupHandle, backupstorage.BackupHandle) {
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

// Tiers keeps, besides the newest --keep, the newest backup of each of the
// last Daily days, Weekly ISO weeks and Monthly months that have a backup
// (in UTC), as restic's forget --keep-daily/--keep-weekly/--keep-monthly.
type Tiers struct{ Daily, Weekly, Monthly int }

// tier is one of Tiers: its name, its count, the bucket of a time.
type tier struct {
	name   string
	n      int
	bucket func(time.Time) string
}

func (t Tiers) tiers() []tier {
	return []tier{
		{"daily", t.Daily, func(at time.Time) string { return at.Format("2006-01-02") }},
		{"weekly", t.Weekly, func(at time.Time) string { y, w := at.ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }},
		{"monthly", t.Monthly, func(at time.Time) string { return at.Format("2006-01") }},
	}
}

// KeepTiers takes out of cands (Candidates' answer for bhs, oldest first)
// the backups t keeps, and says why each candidate it took out is kept
// ("daily 2026-11-23", ...), by name.
func KeepTiers(bhs, cands []backupstorage.BackupHandle, t Tiers) ([]backupstorage.BackupHandle, map[string]string) {
	why := map[string]string{}
	for _, tr := range t.tiers() {
		last, left := "", tr.n
		for i := len(bhs) - 1; i >= 0 && left > 0; i-- {
			at, _, err := mysqlctl.ParseBackupName(bhs[i].Directory(), bhs[i].Name())
			if err != nil || at == nil {
				continue
			}
			b := tr.bucket(at.UTC())
			if b == last {
				continue
			}
			last, left = b, left-1
			if _, ok := why[bhs[i].Name()]; !ok {
				why[bhs[i].Name()] = tr.name + " " + b
			}
		}
	}
	var out []backupstorage.BackupHandle
	kept := map[string]string{}
	for _, c := range cands {
		if w, ok := why[c.Name()]; ok {
			kept[c.Name()] = w
			continue
		}
		out = append(out, c)
	}
	return out, kept
}

// Dated is the time in bh's name, false where its name carries none.
func Dated(bh backupstorage.BackupHandle) (time.Time, bool) {
	t, _, err := mysqlctl.ParseBackupName(bh.Directory(), bh.Name())
	if err != nil || t == nil {
		return time.Time{}, false
	}
	return *t, true
}
