package vtfifocli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestAsOf: ls --as-of says which backup a restore to a time restores and
// why each newer one is passed over: a backup named at 10:00 holds the
// data of its end (10:05), so a restore to 10:00 takes the one before;
// a time before every backup is exit 3.
func TestAsOf(t *testing.T) {
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	defer bs.Close()
	for name, at := range map[string]string{
		"2026-11-25.090000.zone1-0000000100": "2026-11-25T09:04:00Z",
		"2026-11-25.100000.zone1-0000000100": "2026-11-25T10:05:00Z",
		"2026-11-25.110000.zone1-0000000100": "2026-11-25T11:03:00Z",
	} {
		splitstoragetest.Plant(t, bs, "ks/0", name, `{"BackupMethod":"fifo","BackupTime":"`+at+`"}`)
	}
	root := cfg.File.Root
	out, _ := runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0", "--as-of=2026-11-25.100000")
	assert.Equal(t, "passed over ks/0/2026-11-25.110000.zone1-0000000100: its data is as of 2026-11-25T11:03:00Z (its consistent point, when its copy "+
		"ended), after 2026-11-25T10:00:00Z\n"+
		"passed over ks/0/2026-11-25.100000.zone1-0000000100: its data is as of 2026-11-25T10:05:00Z (its consistent point, when its copy ended), "+
		"after 2026-11-25T10:00:00Z\n"+
		"a restore to 2026-11-25T10:00:00Z restores ks/0/2026-11-25.090000.zone1-0000000100: its data is as of 2026-11-25T09:04:00Z (its consistent "+
		"point, when its copy ended)\n", out)

	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0", "--as-of=2026-11-25T10:05:00Z", "--json")
	var res AsOfResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, "ks/0/2026-11-25.100000.zone1-0000000100", res.Picked)
	assert.Len(t, res.PassedOver, 1)

	out, errOut := runSplit(t, 3, root, "ls", "--keyspace=ks", "--shard=0", "--as-of=2026-11-25.080000")
	assert.Contains(t, out, "passed over ks/0/2026-11-25.090000.zone1-0000000100")
	assert.Contains(t, errOut, "no complete backup in ks/0 in "+root+" (split storage) holds data as of 2026-11-25T08:00:00Z or before")

	// Vitess's xtrabackup engine writes its start as BackupTime, which
	// Vitess compares; its data is of its end, FinishedTime.
	splitstoragetest.Plant(t, bs, "ks/0", "2026-11-25.120000.zone1-0000000100",
		`{"BackupMethod":"xtrabackup","BackupTime":"2026-11-25T12:00:00Z","FinishedTime":"2026-11-25T12:07:00Z"}`)
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0", "--as-of=2026-11-25.120200")
	assert.Equal(t, "a restore to 2026-11-25T12:02:00Z restores ks/0/2026-11-25.120000.zone1-0000000100: its data is as of 2026-11-25T12:07:00Z "+
		"(when its copy ended, its FinishedTime; Vitess's xtrabackup engine writes its start as BackupTime): later than 2026-11-25T12:02:00Z, as Vitess "+
		"compares this engine's backups by their start\n", out)
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0", "--as-of=2026-11-25.115900")
	assert.Contains(t, out, "passed over ks/0/2026-11-25.120000.zone1-0000000100: it started at 2026-11-25T12:00:00Z (its BackupTime, which Vitess "+
		"compares), after 2026-11-25T11:59:00Z; its data is as of 2026-11-25T12:07:00Z (when its copy ended, its FinishedTime; ")
	assert.Contains(t, out, "restores ks/0/2026-11-25.110000.zone1-0000000100")
	// The builtin engine copies with mysqld stopped: its data is of its start.
	splitstoragetest.Plant(t, bs, "ks/0", "2026-11-25.130000.zone1-0000000100",
		`{"BackupMethod":"builtin","BackupTime":"2026-11-25T13:00:00Z","FinishedTime":"2026-11-25T13:09:00Z"}`)
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0", "--as-of=2026-11-25.130100")
	assert.Equal(t, "a restore to 2026-11-25T13:01:00Z restores ks/0/2026-11-25.130000.zone1-0000000100: its data is as of 2026-11-25T13:00:00Z "+
		"(its BackupTime: the builtin engine copies with mysqld stopped)\n", out)

	_, errOut = runSplit(t, 2, root, "ls", "--as-of=yesterday")
	assert.Contains(t, errOut, `invalid value "yesterday" for --as-of: allowed values are a time as --restore-from-backup-ts takes it`)
	_, errOut = runSplit(t, 2, root, "ls", "--as-of=2026-11-25.080000")
	assert.Contains(t, errOut, "--as-of is about one shard")
}
