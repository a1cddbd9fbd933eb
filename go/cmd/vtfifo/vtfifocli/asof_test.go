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
		"a restore to 2026-11-25T10:00:00Z restores ks/0/2026-11-25.090000.zone1-0000000100: its data is as of 2026-11-25T09:04:00Z\n", out)

	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0", "--as-of=2026-11-25T10:05:00Z", "--json")
	var res AsOfResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, "ks/0/2026-11-25.100000.zone1-0000000100", res.Picked)
	assert.Len(t, res.PassedOver, 1)

	out, errOut := runSplit(t, 3, root, "ls", "--keyspace=ks", "--shard=0", "--as-of=2026-11-25.080000")
	assert.Contains(t, out, "passed over ks/0/2026-11-25.090000.zone1-0000000100")
	assert.Contains(t, errOut, "no complete backup in ks/0 in "+root+" (split storage) holds data as of 2026-11-25T08:00:00Z or before")

	_, errOut = runSplit(t, 2, root, "ls", "--as-of=yesterday")
	assert.Contains(t, errOut, `invalid value "yesterday" for --as-of: allowed values are a time as --restore-from-backup-ts takes it`)
	_, errOut = runSplit(t, 2, root, "ls", "--as-of=2026-11-25.080000")
	assert.Contains(t, errOut, "--as-of is about one shard")
}
