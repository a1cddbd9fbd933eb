package endtoend

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/go/testutil/tmpfs"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// TestARestoreThatCannotFitOnATabletTouchesNothing: `vtctldclient
// RestoreFromBackup` asks a serving replica, whose disk (a tmpfs of its
// own) holds its data and 16 MiB more, to restore a backup 400 MiB larger
// than that data. The fifo engine refuses it before mysqld stops: the
// RPC fails saying so, and the tablet is a REPLICA again with its mysqld
// running and its data as before, nothing left beside it (a restore that
// began would have deleted the tablet's files, then run out of room). With
// room, the same RPC restores the backup.
func TestARestoreThatCannotFitOnATabletTouchesNothing(t *testing.T) {
	const roomy = 1536 << 20
	// Mounted before the cluster starts, so that it is unmounted after the
	// cluster's cleanups stopped the tablet's mysqld.
	mnt := tmpfs.Mount(t, roomy)
	ctx, c, p := backedUpPrimary(t)
	small, err := p.Checksums(ctx)
	must(t, err)
	// A time after the small backup's consistent point and before the
	// large one's (backup times have seconds).
	time.Sleep(time.Second)
	between := time.Now().UTC().Format("2006-01-02.150405")
	time.Sleep(time.Second)
	must(t, p.ExecAll(ctx, "CREATE TABLE "+c.DBName()+".pad (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB",
		"INSERT INTO "+c.DBName()+".pad SELECT seq, REPEAT(MD5(seq), 32768) FROM "+c.DBName()+".seq_1_to_400"))
	must(t, p.Backup(ctx, true, ""))
	large, err := p.Checksums(ctx)
	must(t, err)
	names, err := c.GetBackups(ctx)
	must(t, err)
	if len(names) != 2 {
		t.Fatalf("GetBackups: %v, want the small backup and the large one", names)
	}
	must(t, p.Destroy(ctx))

	// The replica, on its own disk, restores the small backup at start.
	r, err := c.NewTablet(101)
	must(t, err)
	r.Engine = engineFor(c, "fifo")
	disk := filepath.Join(mnt, "tablet")
	must(t, c.MkdirOwned(disk))
	must(t, os.Symlink(disk, r.Dir))
	r.ExtraArgs = []string{"--restore-from-backup-ts=" + between}
	must(t, r.InitMySQL(ctx))
	must(t, r.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
	checkData(ctx, t, r, small)

	used, err := statUsed(mnt)
	must(t, err)
	must(t, tmpfs.Resize(mnt, used+16<<20))
	before := dirNames(t, disk)
	err = r.RestoreFromBackup(ctx)
	if err == nil || !regexpMatch(`backup \S+ does not fit on this tablet: the files of its full backup `+names[1]+` take at least their streams' size, `+
		sizeText+`, and \S+ has `+sizeText+` free, `+sizeText+` with the tablet's files that a restore deletes: nothing was touched, mysqld runs `+
		`with its data as before; make room there or restore onto a larger disk`, err.Error()) {
		t.Fatalf("RestoreFromBackup of %s onto %s with 16 MiB free: %v, want the refusal", names[1], r.Alias, err)
	}
	msg := err.Error()
	t.Logf("refused, as it should be: %s", msg[strings.Index(msg, "does not fit"):])
	must(t, r.WaitForType(ctx, "REPLICA", 2*time.Minute))
	if done, werr := r.Vttablet.Exited(); done {
		t.Fatalf("vttablet exited after the refusal: %v", werr)
	}
	checkData(ctx, t, r, small)
	if after := dirNames(t, disk); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("the tablet's directory changed: %v before the refused restore, %v after", before, after)
	}

	must(t, tmpfs.Resize(mnt, roomy))
	must(t, r.RestoreFromBackup(ctx))
	must(t, r.WaitForType(ctx, "REPLICA", 5*time.Minute))
	checkData(ctx, t, r, large)
}

// backedUpPrimary starts a cluster on a split storage on local disk, and
// in it a fifo primary with sample data and one backup of it.
func backedUpPrimary(t *testing.T) (context.Context, *cluster.Cluster, *cluster.Tablet) {
	c := startCluster(t, cluster.Options{PrepareStorage: splitBackend("split-local", "file", false, false).prepare(t)})
	ctx := ctxFor(t, 20*time.Minute)
	p, err := c.NewTablet(100)
	must(t, err)
	p.Engine = engineFor(c, "fifo")
	must(t, p.InitMySQL(ctx))
	must(t, startSampledPrimary(ctx, c, p, sampleRows))
	must(t, p.Backup(ctx, true, ""))
	return ctx, c, p
}

// sizeText matches an amount of room as the engine's messages write it
// (go/internal/flagvalue.SizeText, which test/ cannot import).
const sizeText = `(?:\d+(?:\.\d+)? ?(?:[KMGTPE]i)?B(?: \(\d+ bytes\))?|\d+ bytes|-?\d+)`

// statUsed is the bytes in use on dir's file system.
func statUsed(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize, nil
}

// dirNames are the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestAVtbackupWhoseSpoolCannotHoldItLeavesNothing: a scheduled vtbackup
// whose --split-storage-spool-dir (a tmpfs of 512 MiB, 400 MiB of it taken
// by another's file) cannot hold the parts its lanes and uploads spool at
// once (six of 64 MiB) fails before the tool runs, saying which directory
// lacks how much room and which flags size it, and leaves nothing in the
// storage: no new backup, complete or not. With the other's file gone, the
// same run takes its backup. (Where the spool's whole file system is too
// small for those flags, vtbackup refuses them at startup.)
func TestAVtbackupWhoseSpoolCannotHoldItLeavesNothing(t *testing.T) {
	mnt := tmpfs.Mount(t, 512<<20)
	ctx, c, _ := backedUpPrimary(t)
	before, err := c.GetBackups(ctx)
	must(t, err)
	shardDir := filepath.Join(flagValue(c.Storage.Flags, "--split-storage-root"), c.Keyspace, c.Shard)
	stored := dirNames(t, shardDir)
	spool := filepath.Join(mnt, "spool")
	must(t, c.MkdirOwned(spool))
	other := filepath.Join(mnt, "another-writers-file")
	must(t, os.WriteFile(other, make([]byte, 400<<20), 0o600))

	vo := cluster.VtbackupOptions{Engine: engineFor(c, "fifo"), MinRetentionCount: 10,
		Extra: []string{"--split-storage-spool-dir=" + spool, "--split-storage-part-size=64MiB"}}
	res, err := c.RunVtbackup(ctx, vo)
	if err == nil || !regexpMatch(`split storage: the spool directory `+spool+` \(--split-storage-spool-dir\) cannot hold .*: it needs \S+, and .+ are `+
		`free there beyond .* lower --split-storage-part-size, --split-storage-upload-concurrency or the files written at once`, res.Output) {
		t.Fatalf("vtbackup with a spool that cannot hold its parts: err %v, want it failed saying why:\n%s", err, res.Output)
	}
	if strings.Contains(res.Output, "fifo backup: running ") {
		t.Errorf("the tool ran, though the spool could be judged before it:\n%s", res.Output)
	}
	for _, line := range strings.Split(res.Output, "\n") {
		if strings.Contains(line, "cannot hold") {
			t.Logf("refused, as it should be: %s", line)
			break
		}
	}
	after, err := c.GetBackups(ctx)
	must(t, err)
	if strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("GetBackups after the refused vtbackup: %v, want %v", after, before)
	}
	if now := dirNames(t, shardDir); strings.Join(now, " ") != strings.Join(stored, " ") {
		t.Fatalf("the shard's directory in the storage holds %v after the refused vtbackup, want %v (nothing left of it)", now, stored)
	}

	must(t, os.Remove(other))
	_, err = c.RunVtbackup(ctx, vo)
	must(t, err)
	after, err = c.GetBackups(ctx)
	must(t, err)
	if len(after) != len(before)+1 {
		t.Fatalf("GetBackups after vtbackup with room: %v, want %v and one more", after, before)
	}
}
