package vtfifocli

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// proofStorage makes a split storage with four complete backups, oldest
// first, whose test restores passed, passed, failed, failed.
func proofStorage(t *testing.T) (string, []string) {
	ctx := context.Background()
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	defer bs.Close()
	now := time.Now().UTC()
	var names []string
	for i, outcome := range []string{testrestore.Passed, testrestore.Passed, testrestore.Failed, testrestore.Failed} {
		name := now.Add(time.Duration(i-4)*24*time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
		bh := plantBackup(t, bs, "ks/0", name)
		require.NoError(t, testrestore.Store(ctx, bh, testrestore.Record{Version: 1, Backup: "ks/0/" + name, Outcome: outcome, Error: "planted " + outcome,
			Started: now}))
		names = append(names, name)
	}
	return cfg.File.Root, names
}

// plantBackup stores a complete backup dir/name in bs whose MANIFEST is
// "{}" (not a fifo one: enough for listing, retention and records).
func plantBackup(t *testing.T, bs *splitstorage.Storage, dir, name string) backupstorage.BackupHandle {
	return splitstoragetest.Plant(t, bs, dir, name, "{}")
}

// TestRetentionKeepsTheNewestProvenBackup: with a newer untested backup,
// prune --keep=1 would remove the older ones; the newest one that passed
// its test restore stays, and the output says why.
func TestRetentionKeepsTheNewestProvenBackup(t *testing.T) {
	root, names := proofStorage(t)
	untested := time.Now().UTC().Add(-time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
	plantBackup(t, openSplit(t, root), "ks/0", untested)
	out := run(t, 0, "prune", "--backup-storage-implementation=split", "--split-storage-root="+root, "--keyspace=ks", "--shard=0", "--keep=1", "--dry-run")
	assert.Contains(t, out, "keeping ks/0/"+untested+": one of the newest 1 that did not fail a test restore (--keep)\n")
	assert.Contains(t, out, "keeping ks/0/"+names[1]+": the newest backup that passed a test restore\n")
	for _, gone := range []string{names[0], names[2], names[3]} {
		assert.Contains(t, out, "would remove ks/0/"+gone+"\n")
	}
	assert.NotContains(t, out, "would remove ks/0/"+names[1])
}

// TestKeepCountsBackupsThatDidNotFail: --keep=1 over an untested backup
// and newer ones whose test restore failed keeps them all, saying why: a
// failed backup never takes the place of one that may restore.
func TestKeepCountsBackupsThatDidNotFail(t *testing.T) {
	root, names := proofStorage(t) // passed, passed, failed, failed
	out, _ := runSplit(t, 0, root, "prune", "--keyspace=ks", "--shard=0", "--keep=1", "--dry-run")
	assert.Equal(t, "keeping ks/0/"+names[1]+": one of the newest 1 that did not fail a test restore (--keep)\n"+
		"keeping ks/0/"+names[2]+": newer than the oldest of the newest 1 that did not fail a test restore (--keep); its own test restore failed\n"+
		"keeping ks/0/"+names[3]+": newer than the oldest of the newest 1 that did not fail a test restore (--keep); its own test restore failed\n"+
		"would remove ks/0/"+names[0]+"\n", out)
}

// TestKeepCountsOnlyBackupsProvenNotBroken: --keep=1 over a newer backup
// that is broken (its MANIFEST written whole, checksums and all, but no
// JSON) or unproven (its test restore record not JSON, or another
// backup's) keeps the older one too: an older backup goes only on the
// strength of the newer ones proven not broken.
func TestKeepCountsOnlyBackupsProvenNotBroken(t *testing.T) {
	for _, c := range []struct{ name, manifest, record, why string }{
		{"MANIFEST not JSON", `{"BackupMethod": "fifo", "Lanes": [`, "", "it is broken: backup %s: MANIFEST: cannot decode MANIFEST: unexpected EOF"},
		{"record not JSON", "{}", `{"version": 1, "outcome": "fai`, "its test restore record could not be used (verification record: " +
			"unexpected end of JSON input): nothing says whether it passed"},
		{"another backup's record", "{}", `{"version": 1, "backup": "ks/0/other", "outcome": "passed"}`, "its test restore record could " +
			"not be used (the test restore record of backup ks/0/%s is backup ks/0/other's (moved from another backup): it proves nothing of " +
			"this one): nothing says whether it passed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			bs := openSplit(t, root)
			now := time.Now().UTC()
			older := now.Add(-48*time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
			newer := now.Add(-24*time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
			plantBackup(t, bs, "ks/0", older)
			bh := splitstoragetest.Plant(t, bs, "ks/0", newer, c.manifest)
			if c.record != "" {
				require.NoError(t, bh.(interface {
					PutSidecar(context.Context, string, []byte) error
				}).PutSidecar(context.Background(), testrestore.RecordName, []byte(c.record)))
			}
			out, _ := runSplit(t, 0, root, "prune", "--keyspace=ks", "--shard=0", "--keep=1")
			assert.Equal(t, "keeping ks/0/"+older+": one of the newest 1 that did not fail a test restore (--keep)\n"+
				"keeping ks/0/"+newer+": newer than the oldest of the newest 1 that did not fail a test restore (--keep); "+
				strings.ReplaceAll(c.why, "%s", newer)+"\n"+
				"nothing to remove in ks/0: 2 kept\n", out)
		})
	}
}

// TestListingMarksWhatADamagedBaseTakesOut: every delta whose chain needs
// a backup with a damaged MANIFEST is marked, naming it, down the chain;
// one that could not be read marks nothing.
func TestListingMarksWhatADamagedBaseTakesOut(t *testing.T) {
	infos := []BackupInfo{{Name: "full", damaged: true}, {Name: "d1", Base: "full"}, {Name: "d2", Base: "d1"}, {Name: "full2"},
		{Name: "e1", Base: "full2"}, {Name: "unread", Problem: "403"}, {Name: "f1", Base: "unread"}}
	markBrokenChains(infos)
	var got []string
	for _, b := range infos {
		got = append(got, b.Name+":"+b.DamagedBase)
	}
	assert.Equal(t, []string{"full:", "d1:full", "d2:full", "full2:", "e1:", "unread:", "f1:"}, got)
}

// TestLatestSkipsFailedTestRestores: "the latest" is the newest backup
// whose test restore did not fail, and stderr names each one passed over.
func TestLatestSkipsFailedTestRestores(t *testing.T) {
	root, names := proofStorage(t)
	bs := openSplit(t, root)
	bhs, err := bs.ListBackups(context.Background(), "ks/0")
	require.NoError(t, err)
	var notes bytes.Buffer
	o := &options{prog: "vtfifo restore", notes: &notes, restorable: anyBackup}
	got := o.latestNotFailed(context.Background(), bhs, "ks/0")
	assert.Equal(t, names[1], got.Name())
	lines := strings.Split(strings.TrimSpace(notes.String()), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], "vtfifo restore: skipping ks/0/"+names[3]+": its test restore of ")
	assert.Contains(t, lines[0], "failed (planted failed); name it with --backup to use it anyway")
	assert.Contains(t, lines[1], names[2])

	notes.Reset()
	got = o.latestNotFailed(context.Background(), []backupstorage.BackupHandle{bhs[2], bhs[3]}, "ks/0")
	assert.Equal(t, names[3], got.Name(), "every one failed: the newest, and the note says so")
	assert.Contains(t, notes.String(), "every backup in ks/0 was passed over (above): taking the newest, "+names[3])
}

// TestLatestPassesOverOnlyWhatIsProvenBroken: the commands that restore
// pass over a backup their check proves broken (damage, a missing base),
// saying why, but take one the check could not read (an access error, a
// timeout): that is no proof, and the restore says what it could not read.
func TestLatestPassesOverOnlyWhatIsProvenBroken(t *testing.T) {
	root, names := proofStorage(t) // passed, passed, failed, failed
	bs := openSplit(t, root)
	bhs, err := bs.ListBackups(context.Background(), "ks/0")
	require.NoError(t, err)
	var notes bytes.Buffer
	for _, c := range []struct {
		name string
		err  error
		want string
		note string
	}{
		{"damaged", errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "its base %s is damaged", names[0]), names[0],
			"vtfifo restore: skipping ks/0/" + names[1] + ": its base " + names[0] + " is damaged; name it with --backup to try it anyway\n"},
		{"not read", fmt.Errorf("reading its base: %w", fs.ErrPermission), names[1], ""},
		{"timed out", fmt.Errorf("reading its base: %w", context.DeadlineExceeded), names[1], ""},
	} {
		notes.Reset()
		o := &options{prog: "vtfifo restore", notes: &notes, restorable: func(_ context.Context, bh backupstorage.BackupHandle) error {
			if bh.Name() == names[1] {
				return c.err
			}
			return nil
		}}
		got := o.latestNotFailed(context.Background(), bhs, "ks/0")
		assert.Equal(t, c.want, got.Name(), c.name)
		assert.NotContains(t, notes.String(), "every backup", c.name)
		if c.note == "" {
			assert.NotContains(t, notes.String(), names[1], c.name)
			continue
		}
		assert.True(t, strings.HasSuffix(notes.String(), c.note), "%s: %s", c.name, notes.String())
	}
}

// TestLatestVerifiedIsTheNewestProven: --backup=latest-verified takes the newest backup whose
// test restore passed, saying how many newer ones it passed over; with
// none proven it fails (exit 1) saying so.
func TestLatestVerifiedIsTheNewestProven(t *testing.T) {
	root, names := proofStorage(t)
	// The planted backups' MANIFESTs are not fifo ones: show fails on the
	// one it took, saying why without Vitess's RPC code.
	out, errOut := runSplit(t, 1, root, "show", "--keyspace=ks", "--shard=0", "--backup=latest-verified", "--json")
	assert.Empty(t, out)
	assert.Equal(t, "vtfifo show: taking ks/0/"+names[1]+", the newest backup that passed a test restore (2 newer ones did not)\n"+
		"vtfifo show: FAIL: backup "+names[1]+": MANIFEST: BackupMethod is \"\", not \"fifo\"\n", errOut)

	empty := t.TempDir()
	splitCopyAs(t, localSplitConfig(empty), "2026-11-20.000000.zone1-0000000100")
	out, errOut = runSplit(t, 1, empty, "verify", "--keyspace=ks", "--shard=0", "--backup=latest-verified")
	assert.Empty(t, out)
	assert.Equal(t, "vtfifo verify: no backup in ks/0 in "+empty+" (split storage) passed a test restore (1 complete ones): run vtfifo test-restore, "+
		"or name one with --backup\n", errOut)
}

// TestPruneTiersAndAges: --keep-daily keeps the newest backup of each of
// the last days besides --keep, saying why; --keep-within takes days.
func TestPruneTiersAndAges(t *testing.T) {
	root, names := proofStorage(t) // one backup a day, the last four days
	out, _ := runSplit(t, 0, root, "prune", "--keyspace=ks", "--shard=0", "--keep=1", "--keep-daily=4", "--dry-run")
	failedLine := ": newer than the oldest of the newest 1 that did not fail a test restore (--keep); its own test restore failed\n"
	assert.Equal(t, "keeping ks/0/"+names[0]+": daily "+names[0][:10]+"\n"+
		"keeping ks/0/"+names[1]+": one of the newest 1 that did not fail a test restore (--keep)\n"+
		"keeping ks/0/"+names[2]+failedLine+
		"keeping ks/0/"+names[3]+failedLine+
		"nothing to remove in ks/0: 4 kept\n", out)
	out, _ = runSplit(t, 0, root, "prune", "--keyspace=ks", "--shard=0", "--keep=1", "--keep-within=7d", "--dry-run")
	assert.NotContains(t, out, "would remove", "every backup is younger than 7 days")
	assert.Contains(t, out, "keeping ks/0/"+names[0]+": younger than --keep-within=7d\n")
	assert.True(t, strings.HasSuffix(out, "nothing to remove in ks/0: 4 kept\n"), "%s", out)
	// A shard with no backup at all is a wrong location, not an empty prune.
	_, errOut := runSplit(t, 3, root, "prune", "--keyspace=ks", "--shard=1", "--keep=1")
	assert.Contains(t, errOut, "no backups at all in ks/1")
	_, errOut = runSplit(t, 2, root, "prune", "--keyspace=ks", "--shard=0", "--keep=1", "--keep-within=soon")
	assert.Contains(t, errOut, `invalid argument "soon" for "--keep-within" flag: not an age (such as 7d, 2w, 36h, 1d12h): allowed values are an age `+
		`>= 0 such as 36h, 7d or 2w`)
	_, errOut = runSplit(t, 2, root, "prune", "--keyspace=ks", "--shard=0", "--keep=1", "--keep-weekly=-1")
	assert.Equal(t, "vtfifo prune: invalid value \"-1\" for --keep-weekly: allowed values are 0 or more\n", errOut)
}

// TestRemovalKeepsOffABackupBeingRead: a backup another host is reading
// (its read lease) is refused by rm (exit 3, saying who reads it) and kept
// by prune, which goes on with the others.
func TestRemovalKeepsOffABackupBeingRead(t *testing.T) {
	root, names := proofStorage(t)
	bs := openSplit(t, root)
	// An older one, untested: prune's to remove beside the one being read.
	older := time.Now().UTC().Add(-5*24*time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
	plantBackup(t, bs, "ks/0", older)
	lease, err := bs.Hold(context.Background(), "ks/0", names[0], "vtfifo restore on dr-host", time.Hour)
	require.NoError(t, err)
	defer lease.Release(context.Background())

	// A dry run takes the same decisions.
	_, errOut := runSplit(t, 3, root, "rm", "--keyspace=ks", "--shard=0", "--backup="+names[0], "--dry-run")
	assert.Contains(t, errOut, "vtfifo rm: would be refused: split storage: backup ks/0/"+names[0]+" is not removed: the backup is being read: vtfifo "+
		"restore on dr-host by ")
	out, _ := runSplit(t, 0, root, "prune", "--keyspace=ks", "--shard=0", "--keep=1", "--dry-run")
	assert.Contains(t, out, "keeping ks/0/"+names[0]+": the backup is being read: vtfifo restore on dr-host by ")
	assert.Contains(t, out, "would remove ks/0/"+older+"\n")
	assert.NotContains(t, out, "would remove ks/0/"+names[0])

	_, errOut = runSplit(t, 3, root, "rm", "--keyspace=ks", "--shard=0", "--backup="+names[0])
	assert.Contains(t, errOut, "vtfifo rm: refused: split storage: backup ks/0/"+names[0]+" is not removed: the backup is being read: vtfifo restore "+
		"on dr-host by ")
	out, _ = runSplit(t, 0, root, "prune", "--keyspace=ks", "--shard=0", "--keep=1")
	assert.Contains(t, out, "keeping ks/0/"+names[0]+": the backup is being read: vtfifo restore on dr-host by ")
	assert.Contains(t, out, "removed ks/0/"+older+"\n")
}

// openSplit opens the split storage on local disk at root for the test.
func openSplit(t *testing.T, root string) *splitstorage.Storage {
	t.Helper()
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = root
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { bs.Close() })
	return bs
}
