package vtfifocli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	topodatapb "vitess.io/vitess/go/vt/proto/topodata"
	"vitess.io/vitess/go/vt/topo"
	"vitess.io/vitess/go/vt/topo/memorytopo"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
)

// runSplit runs vtfifo on the split storage at root; it returns stdout and
// stderr apart and asserts the exit status.
func runSplit(t *testing.T, wantCode int, root string, args ...string) (stdout, stderr string) {
	t.Helper()
	code, out, errOut := runCaptured(root, args...)
	require.Equal(t, wantCode, code, "vtfifo %s --split-storage-root=%s\nstdout: %s\nstderr: %s", strings.Join(args, " "), root, out, errOut)
	return out, errOut
}

// localSplit opens the split storage on local disk at root (closed at
// the test's end), as the commands under test open it.
func localSplit(t *testing.T, root string) *splitstorage.Storage {
	bs, err := splitstorage.New(localSplitConfig(root))
	require.NoError(t, err)
	t.Cleanup(func() { bs.Close() })
	return bs
}

// localSplitConfig is the split storage on local disk at root, with small
// parts and no waiting between retries.
func localSplitConfig(root string) splitstorage.Config {
	return splitstorage.Config{Backend: splitstorage.BackendFile, File: local.Config{Root: root}, PartSize: splitstorage.MinPartSize,
		UploadConcurrency: 1, ReadAhead: 1 << 20, RetryMaxAttempts: 1, RetryInitialBackoff: time.Millisecond, RetryMaxBackoff: time.Millisecond,
		RequestTimeout: time.Minute}
}

// TestFleetView: ls without --keyspace/--shard lists every shard with its
// newest backup and newest proven one; --max-age and --max-unproven-age
// make it a check (exit 1, the shard and the reason named), in a table,
// JSON and the Prometheus text format.
func TestFleetView(t *testing.T) {
	root, names := proofStorage(t) // ks/0: four backups, the two newest failed their test restores
	bs := localSplit(t, root)
	ctx := context.Background()
	// ks/1: one backup, never test-restored, and one quarantined.
	for i, name := range []string{"2026-01-01.000000.zone1-0000000200", "2026-01-02.000000.zone1-0000000200"} {
		plantBackup(t, bs, "ks/1", name)
		if i == 1 {
			h, err := bs.OpenBackup(ctx, "ks/1", name)
			require.NoError(t, err)
			require.NoError(t, h.(*splitstorage.Handle).Quarantine(ctx, "test restore failed: planted"))
		}
	}

	out, errOut := runSplit(t, 0, root, "ls")
	assert.Empty(t, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6, out)
	assert.Regexp(t, `^KEYSPACE/SHARD\s+BACKUPS\s+NEWEST\s+AGE\s+CHAIN\s+RESTORE-TIME\s+NEWEST-PROVEN\s+AGE\s+TEST-FAILED\s+QUARANTINED\s+INCOMPLETE\s+NEWEST-LOCK\s+CHECK$`, lines[0])
	assert.Regexp(t, `^ks/0\s+4\s+`+names[3]+`\s+\S+\s+0\s+-\s+`+names[1]+`\s+\S+\s+2\s+0\s+0\s+-\s+ok$`, lines[1])
	assert.Regexp(t, `^ks/1\s+1\s+2026-01-01.000000.zone1-0000000200\s+\S+\s+0\s+-\s+-\s+-\s+0\s+1\s+0\s+-\s+ok$`, lines[2])
	assert.Equal(t, "", lines[3])
	assert.Regexp(t, `^Restore times: not predicted: `, lines[4])
	assert.Regexp(t, `^Summaries: 2 shards: 0 from their summaries, 2 walked in \S+$`, lines[5], "the first view walks every shard")
	out, _ = runSplit(t, 0, root, "ls")
	assert.Regexp(t, `\nSummaries: 2 shards: 2 from their summaries, 0 walked in \S+\n$`, out, "the next reads their summaries")

	// Checks: ks/0's newest proven backup is 3 days old; ks/1 has none and
	// its newest backup is months old.
	out, _ = runSplit(t, 1, root, "ls", "--max-age=2d", "--max-unproven-age=48h")
	assert.Regexp(t, `ks/0 .* FAIL: newest proven backup 3d(\d+h)? old \(--max-unproven-age 2d\)\n`, out)
	assert.Regexp(t, `ks/1 .* FAIL: newest backup \d+d(\d+h)? old \(--max-age 2d\); no backup passed a test restore\n`, out)
	runSplit(t, 0, root, "ls", "--max-age=24000h", "--keyspace=", "--shard=")

	out, _ = runSplit(t, 1, root, "ls", "--json", "--max-unproven-age=48h")
	var shards []ShardStatus
	require.NoError(t, json.Unmarshal([]byte(out), &shards), out)
	require.Len(t, shards, 2)
	assert.WithinDuration(t, time.Now(), shards[1].SummaryBuilt, time.Minute, "from the summary the first view saved")
	assert.Empty(t, shards[1].Walked, "nothing changed since")
	shards[1].SummaryBuilt = time.Time{}
	assert.Equal(t, ShardStatus{Keyspace: "ks", Shard: "1", Backups: 1, Newest: "2026-01-01.000000.zone1-0000000200",
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Quarantined: 1, Problems: []string{"no backup passed a test restore"}}, shards[1])
	assert.Equal(t, names[1], shards[0].NewestProven)
	assert.Equal(t, 2, shards[0].TestRestoreFailed)

	// Written is done: the failed checks are metrics, exit 0.
	out, _ = runSplit(t, 0, root, "ls", "--prometheus", "--max-unproven-age=48h")
	assert.Contains(t, out, "# TYPE vtfifo_backup_newest_proven_timestamp_seconds gauge\n")
	assert.Contains(t, out, `vtfifo_shard_read{keyspace="ks",shard="1"} 1`+"\n")
	assert.Contains(t, out, `vtfifo_backups{keyspace="ks",shard="0"} 4`+"\n")
	assert.Contains(t, out, `vtfifo_backups_quarantined{keyspace="ks",shard="1"} 1`+"\n")
	assert.Contains(t, out, `vtfifo_backup_newest_proven_timestamp_seconds{keyspace="ks",shard="1"} 0`+"\n")
	assert.Contains(t, out, `vtfifo_backup_check_ok{keyspace="ks",shard="0"} 0`+"\n")

	// A shard that cannot be read (here: a start marker the store cannot
	// read back, a symbolic link to itself; a directory by its name is no
	// object, as a store's listing says): its row says why, exit 3; its
	// metrics are left out but vtfifo_shard_read 0; a failed check
	// elsewhere is still exit 1.
	unreadable := filepath.Join(root, "ks", "2", "2026-01-03.000000.zone1-0000000300")
	require.NoError(t, os.MkdirAll(unreadable, 0o750))
	require.NoError(t, os.Symlink(".started", filepath.Join(unreadable, ".started")))
	once := "--split-storage-retry-max-attempts=1" // an error reading a file is not worth retrying here
	out, _ = runSplit(t, 3, root, "ls", once)
	assert.Regexp(t, `\nks/2\s+0\s+.*FAIL: cannot list its backups: split storage: listing backups in ks/2: reading the start marker of `+
		`ks/2/2026-01-03.000000.zone1-0000000300: .*too many levels of symbolic links\n`, out)
	assert.Regexp(t, `\nSummaries: 3 shards: 2 from their summaries, 0 walked, 1 could not be read in \S+\n$`, out)
	out, _ = runSplit(t, 1, root, "ls", "--max-unproven-age=48h", once)
	assert.Contains(t, out, "ks/2 ")
	out, _ = runSplit(t, 0, root, "ls", "--prometheus", "--max-unproven-age=48h", once)
	assert.Contains(t, out, `vtfifo_shard_read{keyspace="ks",shard="2"} 0`+"\n")
	assert.NotContains(t, out, `vtfifo_backups{keyspace="ks",shard="2"}`)
	assert.NotContains(t, out, `vtfifo_backup_check_ok{keyspace="ks",shard="2"}`)
	require.NoError(t, os.RemoveAll(filepath.Join(root, "ks", "2")))

	// A shard's view marks the quarantined backup with its reason.
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=1")
	assert.Regexp(t, `2026-01-02.000000.zone1-0000000200\s+-\s+quarantined: test restore failed: planted\n`, out)

	// One quarantined by an earlier vtfifo for this host's failure (its
	// reason as testrestore.Quarantine wrote it, the tool's output naming a
	// full disk) says so: only a hint, it stays quarantined.
	plantBackup(t, bs, "ks/1", "2026-01-03.000000.zone1-0000000200")
	h, err := bs.OpenBackup(ctx, "ks/1", "2026-01-03.000000.zone1-0000000200")
	require.NoError(t, err)
	require.NoError(t, h.(*splitstorage.Handle).Quarantine(ctx, "test restore failed 2026-11-20T03:00:00Z: fifo restore of backup "+
		"2026-01-03.000000.zone1-0000000200 into /scratch/data failed: mariabackup --prepare failed: exit status 1; its last output: [ERROR] "+
		"InnoDB: Error number 28 means 'No space left on device'"))
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=1")
	assert.Contains(t, out, "'No space left on device' (its words name this host failing, its disk is full, which is no proof about the "+
		"backup: an earlier vtfifo quarantined for it; vtfifo release, then test-restore again)\n")
	assert.Regexp(t, `quarantined: test restore failed: planted\n`, out, "a reason without such words gets no hint")
	_, errOut = runSplit(t, 1, root, "show", "--keyspace=ks", "--shard=1", "--backup=2026-01-03.000000.zone1-0000000200")
	assert.Contains(t, errOut, "(its words name this host failing, its disk is full, which is no proof about the backup: an earlier vtfifo "+
		"quarantined for it; vtfifo release, then test-restore again); restore never picks it")

	// A reason that runs over lines (a failed start's error log) is one
	// line in the table and in verify's list: its first and last, and where
	// the rest is; --json and show have all of it (the table's rows were
	// broken by every line of the log).
	plantBackup(t, bs, "ks/1", "2026-01-04.000000.zone1-0000000200")
	h, err = bs.OpenBackup(ctx, "ks/1", "2026-01-04.000000.zone1-0000000200")
	require.NoError(t, err)
	logged := "test restore failed 2026-11-20T03:00:00Z: mysqld exited while starting (exit status 1); its error log ends:\n" +
		"[Note] InnoDB: Completed initialization of buffer pool\n[ERROR] InnoDB: Inconsistent tablespace ID in ./ibdata1\n[ERROR] Aborting\n" +
		"; the same server, started the same way, starts on an empty data directory here: the restored files are what it refused"
	require.NoError(t, h.(*splitstorage.Handle).Quarantine(ctx, logged))
	oneLine := "quarantined: test restore failed 2026-11-20T03:00:00Z: mysqld exited while starting (exit status 1); its error log ends: " +
		"[3 more lines: vtfifo show --backup=2026-01-04.000000.zone1-0000000200] ; the same server, started the same way, starts on an empty " +
		"data directory here: the restored files are what it refused\n"
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=1")
	assert.Regexp(t, `\n2026-01-04.000000.zone1-0000000200\s+-\s+`+regexp.QuoteMeta(oneLine), out)
	assert.NotContains(t, out, "Inconsistent tablespace ID")
	out, _ = runSplit(t, 0, root, "verify", "--list-incomplete", "--keyspace=ks", "--shard=1")
	assert.Regexp(t, `\nincomplete ks/1/2026-01-04.000000.zone1-0000000200: .*; `+regexp.QuoteMeta(oneLine), out)
	assert.NotContains(t, out, "Inconsistent tablespace ID")
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=1", "--json")
	assert.Contains(t, out, `"state": "quarantined: `+strings.ReplaceAll(logged, "\n", `\n`)+`"`)
	_, errOut = runSplit(t, 1, root, "show", "--keyspace=ks", "--shard=1", "--backup=2026-01-04.000000.zone1-0000000200")
	assert.Contains(t, errOut, "quarantined: "+logged+"; restore never picks it")

	// Usage errors.
	_, errOut = runSplit(t, 2, root, "ls", "--json", "--prometheus")
	assert.Equal(t, "vtfifo ls: --json and --prometheus are exclusive: give one\n", errOut)
	_, errOut = runSplit(t, 2, root, "ls", "--keyspace=ks", "--shard=0", "--max-age=1h")
	assert.Equal(t, "vtfifo ls: --max-age, --max-unproven-age and --prometheus apply to the whole storage: leave out --keyspace and --shard\n", errOut)
}

// TestWrongLocationsFail: a root that does not exist, a storage with no
// backup, a wrong keyspace or shard: exit 3, nothing on stdout, the cause
// first on stderr naming the location; never an empty table and exit 0.
func TestWrongLocationsFail(t *testing.T) {
	root, _ := proofStorage(t)
	missing := filepath.Join(root, "no-such-dir")
	empty := t.TempDir()
	// The storage's root one level up: r1/ks/0/<backup>/... would read as
	// keyspace r1, shard ks, holding "backups" named 0.
	high := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(high, "r1"), os.DirFS(root)))
	for _, c := range []struct {
		root string
		args []string
		want string
	}{
		{missing, []string{"ls"}, "vtfifo ls: the storage root " + missing + " does not exist: check the storage flags\n"},
		{missing, []string{"ls", "--keyspace=ks", "--shard=0"}, "vtfifo ls: the storage root " + missing + " does not exist: check the storage flags\n"},
		{missing, []string{"verify", "--keyspace=ks", "--shard=0"}, "vtfifo verify: the storage root " + missing + " does not exist: check the storage flags\n"},
		{empty, []string{"ls"}, "vtfifo ls: no backup anywhere in " + empty + " (split storage): check the storage flags (root, bucket, prefix)\n"},
		{high, []string{"ls"}, "vtfifo ls: " + notARoot(high)},
		{high, []string{"prune", "--keyspace=r1", "--shard=ks", "--keep=1"}, "vtfifo prune: " + notARoot(high)},
		{high, []string{"key-check", "--keyspace=r1", "--shard=ks"}, "vtfifo key-check: " + notARoot(high)},
		{root, []string{"ls", "--keyspace=ks", "--shard=9"}, "vtfifo ls: no backup in ks/9 in " + root + " (split storage): check --keyspace and --shard " +
			"(or --backup-dir) and the storage flags\n"},
		{root, []string{"restore", "--keyspace=kz", "--shard=0", "--target-dir=" + filepath.Join(t.TempDir(), "r")},
			"vtfifo restore: no complete backup in kz/0 in " + root + " (split storage): check --keyspace and --shard (or --backup-dir) and the " +
				"storage flags\n"},
		{root, []string{"export", "--keyspace=ks", "--shard=0", "--backup=2020-01-01.000000.zone1-0000000100", "-o", filepath.Join(t.TempDir(), "x")},
			"vtfifo export: backup ks/0/2020-01-01.000000.zone1-0000000100 in " + root + " (split storage): no such backup (GetBackups does not list it): " +
				"check --backup, --keyspace and --shard\n"},
	} {
		out, errOut := runSplit(t, 3, c.root, c.args...)
		assert.Empty(t, out, "%v", c.args)
		assert.Equal(t, c.want, lastLine(errOut), "%v", c.args)
	}
}

// TestFleetViewFromTheTopology: with the topology's flags (as a tablet's
// flag file has them), ls lists every shard of the topology, a shard that
// never had a backup included (and failing --max-age), and marks the
// storage's directories the topology does not know; an unreachable
// topology exits 3 naming it.
// fleetTopoRuns counts TestFleetViewFromTheTopology's runs in this process.
var fleetTopoRuns int

func TestFleetViewFromTheTopology(t *testing.T) {
	root, names := proofStorage(t) // ks/0
	ctx := context.Background()
	ts, factory := memorytopo.NewServerAndFactory(ctx, "zone1")
	defer ts.Close()
	// Vitess keeps factories for the process's life: one name per run, so
	// that the test can be repeated (-count).
	fleetTopoRuns++
	impl := fmt.Sprintf("vtfifo-fleet-test-%d", fleetTopoRuns)
	topo.RegisterFactory(impl, factory)
	require.NoError(t, ts.CreateKeyspace(ctx, "ks", &topodatapb.Keyspace{}))
	for _, shard := range []string{"-80", "80-"} {
		require.NoError(t, ts.CreateShard(ctx, "ks", shard))
	}
	topoFlags := []string{"--topo-implementation=" + impl, "--topo-global-server-address=memory", "--topo-global-root=/vitess/global"}
	// Vitess keeps its topology flags in package variables, which outlive
	// one Main: the tests after this one must not find a topology.
	t.Cleanup(func() { runSplit(t, 0, root, "ls", "--topo-global-server-address=") })

	out, errOut := runSplit(t, 1, root, append([]string{"ls", "--max-age=7d"}, topoFlags...)...)
	assert.Empty(t, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 7, out)
	assert.Regexp(t, `^ks/-80\s+0\s+-\s+-\s+0\s+-\s+-\s+-\s+0\s+0\s+0\s+-\s+FAIL: no complete backup$`, lines[1])
	assert.Regexp(t, `^ks/0\s+4\s+`+names[3]+`\s+.*\s+ok \(not in the topology\)$`, lines[2])
	assert.Regexp(t, `^ks/80-\s+0\s+.*FAIL: no complete backup$`, lines[3])

	_, errOut = runSplit(t, 3, root, "ls", "--topo-implementation=no-such-topo", "--topo-global-server-address=x", "--topo-global-root=/r")
	assert.Contains(t, errOut, "vtfifo ls: cannot open the topology (--topo-implementation=no-such-topo --topo-global-server-address=x "+
		"--topo-global-root=/r): ")
}

// TestAgeKeepsItsTwoLargestUnits: the fleet view's ages in their two largest units, no digit lost.
func TestAgeKeepsItsTwoLargestUnits(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		0: "0s", 10 * time.Second: "10s", 160 * time.Second: "2m40s", 2 * time.Minute: "2m", 80 * time.Minute: "1h20m",
		time.Hour: "1h", 10*time.Hour + 5*time.Minute + 7*time.Second: "10h5m", 76 * time.Hour: "3d4h", 72 * time.Hour: "3d",
		-time.Minute: "0s",
	} {
		assert.Equal(t, want, age(now, now.Add(-d)), "%v", d)
	}
	assert.Equal(t, "?", age(now, time.Time{}))
}

// TestFleetViewSeesALinkedShard: a shard's directory moved to another disk
// and linked in place is in the fleet view as it is in the shard's own
// listing (before, the view left it out without a word: no check could fail
// for it), and its backup verifies through the link.
func TestFleetViewSeesALinkedShard(t *testing.T) {
	root := localSplitCopy(t)
	moved := filepath.Join(t.TempDir(), "0")
	require.NoError(t, os.Rename(filepath.Join(root, "ks", "0"), moved))
	require.NoError(t, os.Symlink(moved, filepath.Join(root, "ks", "0")))
	out, _ := runSplit(t, 0, root, "ls", "--max-age=10000d")
	assert.Regexp(t, `(?m)^ks/0\s+1\s+copied\s.*\sok$`, out)
	runSplit(t, 0, root, "verify", "--keyspace=ks", "--shard=0", "--backup=copied", "--progress=never", "--quiet")
}
