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
//  5. the newest backup restored into a fresh tablet holds the data at the
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
