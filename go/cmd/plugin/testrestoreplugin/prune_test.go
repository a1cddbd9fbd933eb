package testrestoreplugin

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// TestPruneCountsOnlyBackupsProvenNotBroken: vtbackup's retention
// (--min-retention-count=2) after its new backup passed, over a middle
// backup whose MANIFEST is not JSON and one whose test restore record does
// not read, keeps the oldest: an older backup goes only on the strength of
// the newer ones proven not broken, as vtfifo prune's --keep.
func TestPruneCountsOnlyBackupsProvenNotBroken(t *testing.T) {
	ctx := context.Background()
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	bs, err := splitstorage.New(cfg) // vtbackup's, under a name of this test's
	require.NoError(t, err)
	defer bs.Close()
	backupstorage.BackupStorageMap["split-prune-test"] = bs
	was := backupstorage.BackupStorageImplementation
	backupstorage.BackupStorageImplementation = "split-prune-test"
	t.Cleanup(func() {
		backupstorage.BackupStorageImplementation = was
		delete(backupstorage.BackupStorageMap, "split-prune-test")
	})

	now := time.Now().UTC()
	name := func(daysAgo int) string {
		return now.Add(-time.Duration(daysAgo)*24*time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
	}
	oldest, broken, unproven, newest := name(4), name(3), name(2), name(1)
	splitstoragetest.Plant(t, bs, "ks/0", oldest, "{}")
	splitstoragetest.Plant(t, bs, "ks/0", broken, `{"BackupMethod": "fifo", "Lanes": [`)
	bh := splitstoragetest.Plant(t, bs, "ks/0", unproven, "{}")
	require.NoError(t, bh.(interface {
		PutSidecar(context.Context, string, []byte) error
	}).PutSidecar(ctx, testrestore.RecordName, []byte(`{"version": 1, "outc`)))
	bh = splitstoragetest.Plant(t, bs, "ks/0", newest, "{}")
	require.NoError(t, testrestore.Store(ctx, bh, testrestore.Record{Version: 1, Backup: "ks/0/" + newest, Outcome: testrestore.Passed, Started: now}))

	require.NoError(t, prune(ctx, "ks/0", 2, time.Hour))
	names, err := backupNames(ctx, "ks/0")
	require.NoError(t, err)
	require.Equal(t, []string{oldest, broken, unproven, newest}, names, "nothing pruned: of the newest, only %s is proven not broken", newest)

	// --min-retention-count=1: the newest counts, and the older ones go, broken or not.
	require.NoError(t, prune(ctx, "ks/0", 1, time.Hour))
	names, err = backupNames(ctx, "ks/0")
	require.NoError(t, err)
	require.Equal(t, []string{newest}, names)
}
