package retention

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
)

type handle struct {
	backupstorage.BackupHandle
	name string
}

func (h handle) Name() string      { return h.name }
func (h handle) Directory() string { return "ks/0" }

// TestCandidatesKeepTheNewestAndTheYoung: the candidates for removal are
// the backups beyond the newest --keep that are older than --keep-within.
func TestCandidatesKeepTheNewestAndTheYoung(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	var bhs []backupstorage.BackupHandle
	for _, age := range []time.Duration{96 * time.Hour, 72 * time.Hour, 48 * time.Hour, time.Hour} {
		bhs = append(bhs, handle{name: now.Add(-age).Format("2006-01-02.150405") + ".zone1-0000000100"})
	}
	names := func(hs []backupstorage.BackupHandle) (out []string) {
		for _, h := range hs {
			out = append(out, h.Name())
		}
		return out
	}
	assert.Equal(t, names(bhs[:3]), names(Candidates(bhs, 1, 24*time.Hour, now)), "all but the newest, all old enough")
	assert.Equal(t, names(bhs[:2]), names(Candidates(bhs, 1, 60*time.Hour, now)), "stops at the first younger one")
	assert.Equal(t, names(bhs[:1]), names(Candidates(bhs, 3, time.Second, now)), "the newest keep stay")
	assert.Empty(t, Candidates(bhs, 4, time.Second, now))
	odd := append([]backupstorage.BackupHandle{handle{name: "manual-copy"}}, bhs...)
	assert.Empty(t, Candidates(odd, 1, time.Second, now), "a name without a time stops the scan, as vtbackup's does")
}

// TestKeepProven: the newest backup that passed a test restore is never a
// candidate, even where count and age would remove it; the others stay.
func TestKeepProven(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	var bhs []backupstorage.BackupHandle
	for _, age := range []time.Duration{96 * time.Hour, 72 * time.Hour, 48 * time.Hour, time.Hour} {
		bhs = append(bhs, handle{name: now.Add(-age).Format("2006-01-02.150405") + ".zone1-0000000100"})
	}
	cands := Candidates(bhs, 1, time.Hour, now) // the three oldest
	passed := map[string]bool{bhs[0].Name(): true, bhs[1].Name(): true}
	left, kept := KeepProven(bhs, cands, func(bh backupstorage.BackupHandle) bool { return passed[bh.Name()] })
	assert.Equal(t, bhs[1].Name(), kept.Name(), "the newest proven one")
	assert.Len(t, left, 2)
	for _, c := range left {
		assert.NotEqual(t, bhs[1].Name(), c.Name())
	}
	left, kept = KeepProven(bhs, cands, func(backupstorage.BackupHandle) bool { return false })
	assert.Nil(t, kept)
	assert.Len(t, left, 3)
	passed = map[string]bool{bhs[3].Name(): true} // the newest, already kept by count
	_, kept = KeepProven(bhs, cands, func(bh backupstorage.BackupHandle) bool { return passed[bh.Name()] })
	assert.Nil(t, kept)
}

// TestKeepTiers: two backups a day for 70 days; --keep-daily=3 keeps the
// newest of each of the last 3 days, --keep-weekly=2 of the last 2 ISO
// weeks, --keep-monthly=2 of the last 2 months; every other candidate goes.
func TestKeepTiers(t *testing.T) {
	start := time.Date(2026, 9, 1, 6, 0, 0, 0, time.UTC) // a Tuesday
	var bhs []backupstorage.BackupHandle
	for d := range 70 {
		for _, h := range []int{0, 12} {
			at := start.AddDate(0, 0, d).Add(time.Duration(h) * time.Hour)
			bhs = append(bhs, handle{name: at.Format("2006-01-02.150405") + ".zone1-0000000100"})
		}
	}
	now := start.AddDate(0, 0, 70)
	cands := Candidates(bhs, 1, 0, now)
	require.Len(t, cands, len(bhs)-1)
	left, kept := KeepTiers(bhs, cands, Tiers{Daily: 3, Weekly: 2, Monthly: 2})
	// The newest, 2026-11-09 (a Monday, ISO week 46), is not a candidate: it
	// is the daily, weekly and monthly of its day, week and month. The
	// newest of 2026-11-08 is the daily of the 8th and the weekly of week
	// 45 at once (one backup serves every tier it is the newest of, as in
	// restic); the 7th is the third daily; October's last is its monthly.
	assert.Equal(t, map[string]string{
		"2026-11-08.180000.zone1-0000000100": "daily 2026-11-08",
		"2026-11-07.180000.zone1-0000000100": "daily 2026-11-07",
		"2026-10-31.180000.zone1-0000000100": "monthly 2026-10",
	}, kept)
	_, weekly := KeepTiers(bhs, cands, Tiers{Weekly: 3})
	assert.Equal(t, map[string]string{"2026-11-08.180000.zone1-0000000100": "weekly 2026-W45", "2026-11-01.180000.zone1-0000000100": "weekly 2026-W44"}, weekly)
	assert.Len(t, left, len(cands)-len(kept))
	for _, c := range left {
		_, ok := kept[c.Name()]
		assert.False(t, ok, c.Name())
	}
}

// TestKeepCountSkipsFailedBackups: --keep counts the backups that did not
// fail a test restore; the failed ones among the newest are kept with them.
func TestKeepCountSkipsFailedBackups(t *testing.T) {
	var bhs []backupstorage.BackupHandle
	for _, n := range []string{"2026-11-20.000000.zone1-0000000100", "2026-11-21.000000.zone1-0000000100", "2026-11-22.000000.zone1-0000000100",
		"2026-11-23.000000.zone1-0000000100"} {
		bhs = append(bhs, handle{name: n})
	}
	failedSet := map[string]bool{}
	failed := func(bh backupstorage.BackupHandle) bool { return failedSet[bh.Name()] }
	assert.Equal(t, 1, KeepCount(bhs, 1, failed), "none failed: the newest one")
	failedSet["2026-11-23.000000.zone1-0000000100"] = true
	assert.Equal(t, 2, KeepCount(bhs, 1, failed), "the newest failed: it and the untested one before it")
	failedSet["2026-11-22.000000.zone1-0000000100"] = true
	assert.Equal(t, 4, KeepCount(bhs, 2, failed), "two needed, only two not failed: all")
	assert.Equal(t, 4, KeepCount(bhs, 9, failed), "more than there are: all")
}
