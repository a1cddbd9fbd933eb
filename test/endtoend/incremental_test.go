package endtoend

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// TestIncrementalBackups runs incremental backups through Vitess's own flows,
// on local disk and S3, with --fifo-backup-full-interval set on vttablet and
// vtbackup:
//
//  1. vtctldclient Backup three times with writes between, the tablets
//     taking chains (--fifo-backup-incremental-base=latest): a full, then
//     two deltas, each on the one before (vtfifo ls says so);
//  2. after a disaster, a tablet bootstrapped with --restore-from-backup-ts
//     at the middle backup's consistent point restores the full and the
//     first delta: the data at that backup;
//  3. another restores the latest (the whole chain) and is promoted;
//  4. five daily vtbackup runs with the default base (differential: each
//     delta on the full), --min-retention-count=2 and at most 2 deltas on a
//     full: each restores the newest backup (a chain, then a full + one
//     differential), catches up, takes a differential on its full (or a
//     full) and prunes; the pruned bases leave the list but stay while a
//     listed delta needs them, and old chains go with their last member;
//  5. a byte of the full's lane flipped: vtbackup's restore of the delta
//     fails saying what to run, verify of the delta names the full's part,
//     the test restore quarantines the full with the delta (vtctld lists
//     neither); mended and released, both are back;
//  6. the newest backup restored into a fresh tablet holds the data at the
//     last vtbackup run.
func TestIncrementalBackups(t *testing.T) {
	for _, sb := range storageBackends() {
		if sb.name != "split-local" && sb.name != "split-s3-sealed" {
			continue
		}
		t.Run(sb.name, func(t *testing.T) { runIncremental(t, sb) })
	}
}

func runIncremental(t *testing.T, sb storageBackend) {
	c := startCluster(t, cluster.Options{PrepareStorage: sb.prepare(t)})
	ctx := ctxFor(t, 30*time.Minute)
	incremental := []string{"--fifo-backup-full-interval=1h"}
	tablet := func(uid int, extra ...string) *cluster.Tablet {
		tab, err := c.NewTablet(uid)
		must(t, err)
		tab.Engine = engineFor(c, sb.engine)
		tab.ExtraArgs = append(slices.Concat(incremental, []string{"--fifo-backup-incremental-base=latest"}), extra...)
		must(t, tab.InitMySQL(ctx))
		return tab
	}
	type info struct {
		Name, Time, Base string
		ChainLength      int `json:"chain_length"`
	}
	list := func(t *testing.T) []info {
		t.Helper()
		out, code, err := c.Vtfifo(ctx, "ls", "--json")
		must(t, err)
		if code != 0 {
			t.Fatalf("vtfifo ls: exit %d:\n%s", code, out)
		}
		var infos []info
		must(t, json.Unmarshal([]byte(out), &infos))
		return infos
	}

	p := tablet(100)
	must(t, startSampledPrimary(ctx, c, p, sampleRows))
	var sums [3][]cluster.TableSum
	for i := range 3 {
		if i > 0 {
			must(t, p.AddRows(ctx, 500))
		}
		time.Sleep(time.Second) // backup names have seconds
		must(t, p.Backup(ctx, true, ""))
		var err error
		sums[i], err = p.Checksums(ctx)
		must(t, err)
	}
	backups := list(t)
	if len(backups) != 3 || backups[0].Base != "" || backups[1].Base != backups[0].Name || backups[2].Base != backups[1].Name || backups[2].ChainLength != 2 {
		t.Fatalf("vtfifo ls = %+v, want a full and two deltas, each on the one before", backups)
	}

	must(t, p.Destroy(ctx))
	t.Run("restore-from-backup-ts-middle", func(t *testing.T) {
		at, err := mysqlctl.ParseRFC3339(backups[1].Time)
		must(t, err)
		ts := at.UTC().Format(mysqlctl.BackupTimestampFormat)
		// vtfifo says beforehand what the tablet will do, and why.
		out, code, err := c.Vtfifo(ctx, "ls", "--as-of="+ts)
		must(t, err)
		if code != 0 || !strings.Contains(out, "passed over "+c.Keyspace+"/"+c.Shard+"/"+backups[2].Name+": its data is as of") ||
			!strings.Contains(out, "restores "+c.Keyspace+"/"+c.Shard+"/"+backups[1].Name+": its data is as of") {
			t.Fatalf("vtfifo ls --as-of=%s: exit %d:\n%s", ts, code, out)
		}
		r := tablet(101, "--restore-from-backup-ts="+ts)
		must(t, r.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
		checkData(ctx, t, r, sums[1])
		// The tablet's log names the newer backup it passed over and why.
		if log := r.Vttablet.Tail(1 << 20); !strings.Contains(log, "passed over backup "+backups[2].Name+": its data is as of") {
			t.Errorf("the restore's log does not name %s as passed over:\n%s", backups[2].Name, r.Vttablet.Tail(4000))
		}
		must(t, r.Destroy(ctx))
	})
	if t.Failed() {
		return
	}

	r := tablet(102)
	t.Run("restore-latest-chain", func(t *testing.T) {
		must(t, r.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
		checkData(ctx, t, r, sums[2])
		must(t, promote(ctx, t, c, r))
	})
	if t.Failed() {
		return
	}

	var want []cluster.TableSum
	t.Run("vtbackup-daily-retention-keeps-chains", func(t *testing.T) {
		// Five daily runs, differential (the default), with a full when a
		// full has 2 deltas (the interval itself cannot be shortened below a
		// minute): the tablets' chain has 2 already, so a full comes first,
		// then two differentials on it (each at length 1, on the full); the
		// full then leaves the list (kept as their base), so the next run
		// takes a full, and a differential follows. Keeping the newest two
		// removes each old chain whole once no listed backup stands on it.
		vo := cluster.VtbackupOptions{Engine: engineFor(c, sb.engine), MinRetentionCount: 2, MinRetentionTime: time.Second,
			Extra: append(slices.Clone(incremental), "--fifo-backup-max-chain-length=2")}
		wantChain := []int{0, 1, 1, 0, 1}
		for day, length := range wantChain {
			must(t, r.AddRows(ctx, 200))
			var err error
			want, err = r.Checksums(ctx)
			must(t, err)
			_, err = c.RunVtbackup(ctx, vo)
			must(t, err)
			after := list(t)
			if len(after) != 2 || after[1].ChainLength != length || (length > 0) != (after[1].Base != "") {
				t.Fatalf("day %d: vtfifo ls = %+v, want two backups, the newest at chain length %d", day+1, after, length)
			}
			if after[0].Base != "" && after[1].Base != "" && after[1].Base != after[0].Base {
				t.Fatalf("day %d: vtfifo ls = %+v, want two differentials on one full", day+1, after)
			}
			checkChains(ctx, t, c, sb)
		}
		// The old chains went with their last listed member: the storage
		// holds the two listed backups (a full and a delta on it), nothing
		// kept off the list.
		out, code, err := c.Vtfifo(ctx, "verify", "--list-incomplete")
		must(t, err)
		if code != 0 || !strings.Contains(out, "no incomplete backup") {
			t.Fatalf("vtfifo verify --list-incomplete (exit %d), want nothing kept off the list:\n%s", code, out)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("a-damaged-base-quarantined-with-its-chain", func(t *testing.T) {
		// The two listed backups: a full and a differential on it (above).
		// A byte of the full's lane flipped in the store: vtbackup's
		// restore of the differential, Vitess's pick, fails reading the
		// full, its log saying what to run; that test restore quarantines
		// the full, and the differential with it (before 2026-12-04 only the
		// differential, and Vitess then picked the damaged full); verify of
		// the differential names the full's part. The byte flipped back and
		// the full released, both are listed again for the next step.
		before := list(t)
		if len(before) != 2 || before[1].Base != before[0].Name {
			t.Fatalf("vtfifo ls = %+v, want a full and a delta on it", before)
		}
		full, delta := before[0].Name, before[1].Name
		key := damageOnePart(ctx, t, c, splitFlags(c), full)
		vo := cluster.VtbackupOptions{Engine: engineFor(c, sb.engine), MinRetentionCount: 2, MinRetentionTime: time.Second,
			Extra: append(slices.Clone(incremental), "--fifo-backup-max-chain-length=2")}
		res, err := c.RunVtbackup(ctx, vo)
		if err == nil || !strings.Contains(res.Output, "fifo restore: "+delta+", the backup Vitess picked, cannot be restored: ") ||
			!strings.Contains(res.Output, key) || !strings.Contains(res.Output, "vtfifo test-restore --backup="+delta+" fails on the same") {
			t.Fatalf("vtbackup over a damaged full: err %v, want its restore failed naming %s and what to run:\n%s", err, key, res.Output)
		}
		out, code, err := c.Vtfifo(ctx, "verify", "--backup="+delta, "--progress=never", "--quiet")
		must(t, err)
		if code != 1 || !strings.Contains(out, "  its base "+full+" is damaged: ") || !strings.Contains(out, key) {
			t.Fatalf("vtfifo verify of the delta (exit %d), want 1 naming its base %s and %s:\n%s", code, full, key, out)
		}
		out, code, err = c.Vtfifo(ctx, append([]string{"test-restore", "--backup=" + delta, "--quiet"}, toolFlags(c)...)...)
		must(t, err)
		if code != 1 || !strings.Contains(out, "; its base "+full+" is damaged: it is quarantined, and with it every backup that needs it, "+
			"this one among them: ") || !strings.Contains(out, key) {
			t.Fatalf("vtfifo test-restore of the delta (exit %d), want 1, its base %s quarantined:\n%s", code, full, out)
		}
		if got, err := c.GetBackups(ctx); err != nil || len(got) != 0 {
			t.Fatalf("vtctld's GetBackups after the quarantine: %v (%v), want none", got, err)
		}
		if again := damageOnePart(ctx, t, c, splitFlags(c), full); again != key {
			t.Fatalf("damageOnePart flipped %s back, not %s", again, key)
		}
		out, code, err = c.Vtfifo(ctx, "release", "--backup="+full, "--quiet")
		must(t, err)
		if code != 0 || !strings.Contains(out, delta+" too (the quarantine of its chain had taken it out)") {
			t.Fatalf("vtfifo release of the full (exit %d), want both back:\n%s", code, out)
		}
		if after := list(t); len(after) != 2 || after[0].Name != full || after[1].Name != delta {
			t.Fatalf("vtfifo ls after the release = %+v, want %s and %s", after, full, delta)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("restore-after-pruning", func(t *testing.T) {
		must(t, r.Destroy(ctx))
		n := tablet(103)
		must(t, n.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
		checkData(ctx, t, n, want)
	})
}

// checkChains checks, in the storage itself, that every listed fifo backup's
// chain is whole: every base opens by name and has a readable MANIFEST.
func checkChains(ctx context.Context, t *testing.T, c *cluster.Cluster, sb storageBackend) {
	t.Helper()
	bs, err := sb.open(c)
	must(t, err)
	split := bs.(*splitstorage.Storage)
	dir := c.Keyspace + "/" + c.Shard
	bhs, err := bs.ListBackups(ctx, dir)
	must(t, err)
	for _, bh := range bhs {
		for cur := bh; ; {
			m, err := fifobackupengine.ReadManifest(ctx, cur)
			if err != nil {
				t.Fatalf("listed backup %s: its chain is broken: %v", bh.Name(), err)
			}
			if m.BaseBackup == "" {
				break
			}
			if cur, err = split.OpenBackup(ctx, dir, m.BaseBackup); err != nil {
				t.Fatalf("listed backup %s: its base %s: %v", bh.Name(), m.BaseBackup, err)
			}
		}
	}
}
