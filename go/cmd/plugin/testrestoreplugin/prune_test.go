package testrestoreplugin

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
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
	bs := localStorage(t)
	withStorage(t, "split-prune-test", bs) // vtbackup's, under a name of this test's

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

// TestVtbackupPrunesASplitStorageByItsOwnRule: vtbackup without a test
// restore prunes a split storage by the same rule: its own pruning, which
// counts every listed backup toward --min-retention-count (a MANIFEST that
// is not JSON included) and so would remove the good oldest one, is held
// back, and the backups proven not broken are counted. Another storage
// keeps stock vtbackup whole.
func TestVtbackupPrunesASplitStorageByItsOwnRule(t *testing.T) {
	bs := localStorage(t)
	now := time.Now().UTC()
	name := func(ago time.Duration) string { return now.Add(-ago).Format("2006-01-02.150405") + ".zone1-0000000100" }
	oldest, broken, taken := name(96*time.Hour), name(72*time.Hour), name(0)
	splitstoragetest.Plant(t, bs, "ks/0", oldest, "{}")
	splitstoragetest.Plant(t, bs, "ks/0", broken, `{"BackupMethod": "fifo", "Lanes": [`)

	for _, c := range []struct {
		impl          string
		stockPrunesIn time.Duration
		after         []string
	}{{"split-not-ours-test", time.Hour, []string{oldest, broken}}, {splitstorage.Name, 0, []string{oldest, broken, taken}}} {
		t.Run(c.impl, func(t *testing.T) {
			withStorage(t, c.impl, bs)
			var prunesIn time.Duration
			cmd := fakeVtbackup(func(cmd *cobra.Command) {
				prunesIn, _ = cmd.Flags().GetDuration("min-retention-time")
				if c.impl == splitstorage.Name {
					splitstoragetest.Plant(t, bs, "ks/0", taken, "{}")
				}
			})
			Wrap(cmd)
			cmd.SetArgs([]string{"--min-retention-count=2", "--min-retention-time=1h", "--init-keyspace=ks", "--init-shard=0"})
			require.NoError(t, cmd.Execute())
			assert.Equal(t, c.stockPrunesIn, prunesIn, "the --min-retention-time stock vtbackup's own pruning ran with")
			names, err := backupNames(context.Background(), "ks/0")
			require.NoError(t, err)
			require.Equal(t, c.after, names, "the oldest kept: of the newest two, only %s is proven not broken", taken)
		})
	}
}

// localStorage is a split storage on local disk, closed at t's end.
func localStorage(t *testing.T) *splitstorage.Storage {
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { bs.Close() })
	return bs
}

// withStorage registers bs as impl, the storage vtbackup uses, for t.
func withStorage(t *testing.T, impl string, bs backupstorage.BackupStorage) {
	was, wasImpl := backupstorage.BackupStorageMap[impl], backupstorage.BackupStorageImplementation
	backupstorage.BackupStorageMap[impl], backupstorage.BackupStorageImplementation = bs, impl
	t.Cleanup(func() {
		backupstorage.BackupStorageImplementation = wasImpl
		if was == nil {
			delete(backupstorage.BackupStorageMap, impl)
		} else {
			backupstorage.BackupStorageMap[impl] = was
		}
	})
}

// fakeVtbackup is a command with vtbackup's flags that Wrap reads, whose
// run is backup.
func fakeVtbackup(backup func(*cobra.Command)) *cobra.Command {
	cmd := &cobra.Command{Use: "vtbackup", RunE: func(cmd *cobra.Command, _ []string) error {
		backup(cmd)
		return nil
	}}
	cmd.Flags().Duration("min-retention-time", 0, "")
	cmd.Flags().Int("min-retention-count", 1, "")
	cmd.Flags().String("init-keyspace", "", "")
	cmd.Flags().String("init-shard", "", "")
	return cmd
}
