package retention

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
)

type handle struct {
	backupstorage.BackupHandle
	name string
}

func (h handle) Name() string      { return h.name }
func (h handle) Directory() string { return "ks/0" }

func TestCandidates(t *testing.T) {
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
