package endtoend

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// sampleRows is the size of the biggest sample table: about 6 MB of data in all, enough for
// several xbstream chunks and parts while keeping CI fast.
const sampleRows = 20000

// TestBackupFlows runs every flow that uses backups, against real processes, once per
// storage backend:
//
//  1. vtctldclient Backup --allow-primary, with the tablet's default engine and with the
//     per-request --backup-engine on a tablet whose default engine is another one;
//  2. GetBackups and RemoveBackup through vtctld;
//  3. bootstrap of a tablet with --restore-from-backup into a shard with no primary, then
//     promotion (PlannedReparentShard, which fails on MariaDB for an upstream reason, then
//     InitShardPrimary); data verified;
//  4. vtctldclient RestoreFromBackup on a non-primary tablet; data verified;
//  5. two scheduled-style vtbackup runs (restore latest, catch up from the primary, back up,
//     prune with --min-retention-count); the backups that remain are checked, and the newest
//     is restored into a fresh tablet to prove the catch-up;
//  6. /debug/vars BackupBytes/BackupDurationNanoseconds and the Restore twins carry the
//     engine's and the storage's labels after each flow.
//
// Replica tablets cannot run beside a primary on MariaDB with Vitess v24 (docs/compatibility.md),
// so the topology moves one tablet at a time: a lone primary; after the disaster a lone
// replica in a shard without primary (flows 3 and 4); then that replica promoted (flow 5's
// primary).
func TestBackupFlows(t *testing.T) {
	for _, sb := range storageBackends() {
		t.Run(sb.name, func(t *testing.T) {
			runFlows(t, sb)
		})
	}
}

func runFlows(t *testing.T, sb storageBackend) {
	c := startCluster(t, cluster.Options{PrepareStorage: sb.prepare(t)})
	ctx := ctxFor(t, 30*time.Minute)
	engine := sb.engine
	other := otherEngine(engine)

	// A lone primary with sample data.
	p, err := c.NewTablet(100)
	must(t, err)
	p.Engine = engineFor(c, engine)
	must(t, p.InitMySQL(ctx))
	must(t, startSampledPrimary(ctx, c, p, sampleRows))

	t.Run("1a-backup-primary-default-engine", func(t *testing.T) {
		must(t, p.Backup(ctx, true, ""))
		checkNewestBackup(ctx, t, c, sb, 1, engine)
		checkStats(ctx, t, p, "Backup", engineStats(engine), sb)
	})
	if t.Failed() {
		return
	}

	var atSecondBackup []cluster.TableSum
	t.Run("1b-backup-per-request-engine", func(t *testing.T) {
		// Same primary, restarted with another default engine.
		p.StopVttablet()
		p.Engine = engineFor(c, other)
		must(t, p.Start(ctx, cluster.StartOptions{WaitForType: "PRIMARY"}))
		must(t, p.AddRows(ctx, 1000))
		must(t, p.Backup(ctx, true, engine))
		checkNewestBackup(ctx, t, c, sb, 2, engine)
		// Vitess v24 labels engine stats with the tablet's --backup-engine-implementation,
		// not with the engine a request picked (mysqlctl.Backup scopes them before it looks
		// the engine up, and a scope cannot be overridden): the fifo engine's operations
		// show under the default engine's label.
		checkStats(ctx, t, p, "Backup", statsEngine{label: other, emits: engineEmitsStats(engine)}, sb)
		atSecondBackup, err = p.Checksums(ctx)
		must(t, err)
	})
	if t.Failed() {
		return
	}

	t.Run("2-getbackups-removebackup", func(t *testing.T) {
		names, err := c.GetBackups(ctx)
		must(t, err)
		if len(names) != 2 || !slices.IsSorted(names) {
			t.Fatalf("GetBackups = %v, want 2 backups oldest first", names)
		}
		must(t, c.RemoveBackup(ctx, names[0]))
		after, err := c.GetBackups(ctx)
		must(t, err)
		if !slices.Equal(after, names[1:]) {
			t.Fatalf("after RemoveBackup %s: GetBackups = %v, want %v", names[0], after, names[1:])
		}
	})
	if t.Failed() {
		return
	}

	// Disaster: the primary and its data are gone.
	must(t, p.Destroy(ctx))
	r, err := c.NewTablet(101)
	must(t, err)
	r.Engine = engineFor(c, engine)
	t.Run("3-bootstrap-restore-from-backup", func(t *testing.T) {
		must(t, r.InitMySQL(ctx))
		must(t, r.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
		checkData(ctx, t, r, atSecondBackup)
		checkStats(ctx, t, r, "Restore", engineStats(engine), sb)
	})
	if t.Failed() {
		return
	}

	t.Run("4-restorefrombackup-non-primary", func(t *testing.T) {
		typ, err := r.Type(ctx)
		must(t, err)
		if typ == "PRIMARY" {
			t.Fatalf("%s is %s, want a non-primary", r.Alias, typ)
		}
		// Damage the data so the restore has something to repair.
		_, err = r.Exec(ctx, "DELETE FROM "+c.DBName()+".orders WHERE id <= 500")
		must(t, err)
		if damaged, _ := r.Checksums(ctx); cluster.CompareChecksums(atSecondBackup, damaged) == "" {
			t.Fatal("damaging the data did not change the checksums")
		}
		must(t, r.RestoreFromBackup(ctx))
		must(t, r.WaitForType(ctx, "REPLICA", 5*time.Minute))
		checkData(ctx, t, r, atSecondBackup)
		checkStats(ctx, t, r, "Restore", engineStats(engine), sb)
	})
	if t.Failed() {
		return
	}

	t.Run("3-promote-restored-tablet", func(t *testing.T) {
		must(t, promote(ctx, t, c, r))
		checkData(ctx, t, r, atSecondBackup)
		must(t, r.AddRows(ctx, 10)) // the new primary takes writes
	})
	if t.Failed() {
		return
	}

	t.Run("5-vtbackup-scheduled-runs", func(t *testing.T) {
		before, err := c.GetBackups(ctx)
		must(t, err)
		vo := cluster.VtbackupOptions{Engine: engineFor(c, engine), MinRetentionCount: 2, MinRetentionTime: time.Second}
		// The second run is kept alive after its prune so its /debug/vars can be read.
		vo2 := vo
		vo2.Vars = true
		must(t, r.AddRows(ctx, 500))
		_, err = c.RunVtbackup(ctx, vo)
		must(t, err)
		first, err := c.GetBackups(ctx)
		must(t, err)
		if len(first) != len(before)+1 || !slices.Equal(first[:len(before)], before) {
			t.Fatalf("after the first vtbackup run: %v, want %v plus one new backup", first, before)
		}
		checkNewestBackup(ctx, t, c, sb, len(first), engine)
		copied := copyNewestByHand(ctx, t, c, sb, first)
		// The new backup's MANIFEST damaged in the store: the next run
		// restores the one before it, and its pruning does not count it.
		damaged := first[len(first)-1]
		damageManifest(ctx, t, c, splitFlags(c), damaged)

		must(t, r.AddRows(ctx, 500))
		want, err := r.Checksums(ctx)
		must(t, err)
		res, err := c.RunVtbackup(ctx, vo2)
		must(t, err)
		checkVarsStats(t, "vtbackup", res.Vars, "Restore", engineStats(engine), sb)
		checkVarsStats(t, "vtbackup", res.Vars, "Backup", engineStats(engine), sb)
		second, err := c.GetBackups(ctx)
		must(t, err)
		// --min-retention-count=2: the newest two that are not broken remain, with the
		// damaged one between them; everything older than 1s is pruned. Neither the
		// damaged backup nor the copy made by hand is counted (counted, each made the
		// run remove the good backup before it, leaving one restorable backup), nor
		// removed.
		want2 := []string{first[len(first)-2], damaged}
		if len(second) != 3 || !slices.Equal(second[:2], want2) {
			t.Fatalf("after the second vtbackup run: %v, want %v and the new one", second, want2)
		}
		// The operator removes the damaged one, through Vitess.
		if out, err := c.Vtctldclient(ctx, "RemoveBackup", c.Keyspace+"/"+c.Shard, damaged); err != nil {
			t.Fatalf("RemoveBackup of the backup whose MANIFEST is damaged: %v\n%s", err, out)
		}
		checkNewestBackup(ctx, t, c, sb, 2, engine)
		checkCopyKept(ctx, t, c, sb, copied)

		// The newest backup must hold the rows added just before the run: vtbackup caught up
		// from the primary. Prove it by restoring it into a fresh tablet after a second disaster.
		must(t, r.Destroy(ctx))
		n, err := c.NewTablet(102)
		must(t, err)
		n.Engine = engineFor(c, engine)
		must(t, n.InitMySQL(ctx))
		must(t, n.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
		checkData(ctx, t, n, want)
		checkStats(ctx, t, n, "Restore", engineStats(engine), sb)
		must(t, promote(ctx, t, c, n))
	})
}

// startSampledPrimary starts a lone tablet's vttablet, makes it the primary
// of a shard that never had one, and loads rows of sample data into it.
func startSampledPrimary(ctx context.Context, c *cluster.Cluster, p *cluster.Tablet, rows int) error {
	if err := p.Start(ctx, cluster.StartOptions{}); err != nil {
		return err
	}
	if err := initShardPrimary(ctx, c, p); err != nil {
		return err
	}
	return p.LoadSampleData(ctx, rows)
}

// initShardPrimary makes a lone tablet the primary of a shard that never had one.
func initShardPrimary(ctx context.Context, c *cluster.Cluster, t *cluster.Tablet) error {
	if _, err := c.Vtctldclient(ctx, "InitShardPrimary", "--force", c.Keyspace+"/"+c.Shard, t.Alias); err != nil {
		return err
	}
	if err := t.WaitForType(ctx, "PRIMARY", 2*time.Minute); err != nil {
		return err
	}
	return t.WaitServing(ctx, 2*time.Minute)
}

// promote makes the restored tablet the shard primary. PlannedReparentShard first: it fails
// on MariaDB with Vitess v24 ("FUNCTION regexp_like does not exist", from the semi-sync
// monitor's query). Then the path that works: read_only off on its mysqld and
// TabletExternallyReparented. InitShardPrimary is not used here on purpose: it runs
// RESET MASTER on the new primary, which restarts MariaDB's GTID sequence below the
// positions recorded in existing backups, after which vtbackup believes it has caught up
// when it has not (see docs/compatibility.md).
func promote(ctx context.Context, t *testing.T, c *cluster.Cluster, tab *cluster.Tablet) error {
	_, err := c.Vtctldclient(ctx, "PlannedReparentShard", "--new-primary="+tab.Alias, c.Keyspace+"/"+c.Shard)
	switch {
	case err == nil:
		t.Logf("PlannedReparentShard promoted %s", tab.Alias)
	case strings.Contains(err.Error(), "regexp_like"):
		t.Logf("PlannedReparentShard failed for the known upstream reason on MariaDB (regexp_like); using read_only=OFF + TabletExternallyReparented")
	default:
		t.Logf("PlannedReparentShard failed (%v); using read_only=OFF + TabletExternallyReparented", firstLine(err.Error()))
	}
	if typ, _ := tab.Type(ctx); typ == "PRIMARY" {
		return tab.WaitServing(ctx, 2*time.Minute)
	}
	return tab.MakePrimary(ctx)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// checkNewestBackup checks the number of backups (GetBackups through vtctld) and that the
// newest was taken by engine (its MANIFEST, read from the storage).
func checkNewestBackup(ctx context.Context, t *testing.T, c *cluster.Cluster, sb storageBackend, want int, engine string) {
	t.Helper()
	names, err := c.GetBackups(ctx)
	must(t, err)
	if len(names) != want {
		t.Fatalf("GetBackups: %d backups %v, want %d", len(names), names, want)
	}
	bs, err := sb.open(c)
	must(t, err)
	manifests, err := cluster.ReadManifests(ctx, bs, c.Keyspace+"/"+c.Shard)
	must(t, err)
	if len(manifests) != want {
		t.Fatalf("storage holds %d backups, GetBackups %d", len(manifests), want)
	}
	newest := manifests[len(manifests)-1]
	if newest.BackupName != names[len(names)-1] || newest.BackupMethod != engine {
		t.Fatalf("newest backup %s has BackupMethod %q, want %s %q", newest.BackupName, newest.BackupMethod, names[len(names)-1], engine)
	}
	if sb.keyID != "" {
		bhs, err := bs.ListBackups(ctx, c.Keyspace+"/"+c.Shard)
		must(t, err)
		for _, bh := range bhs {
			id, err := bh.(*splitstorage.Handle).EncryptionKeyID(ctx)
			must(t, err)
			if id != sb.keyID {
				t.Fatalf("backup %s: encryption key ID %q, want %q: every backup is encrypted", bh.Name(), id, sb.keyID)
			}
		}
	}
}

func checkData(ctx context.Context, t *testing.T, tab *cluster.Tablet, want []cluster.TableSum) {
	t.Helper()
	got, err := tab.Checksums(ctx)
	must(t, err)
	if diff := cluster.CompareChecksums(want, got); diff != "" {
		t.Fatalf("data on %s differs from the source: %s\n%s", tab.Alias, diff, cluster.FormatChecksums("want", want, "got", got))
	}
}

// statsEngine is the engine label expected on the stats, and whether the engine that ran
// emits stats at all (Vitess's xtrabackup engine does not).
type statsEngine struct {
	label string
	emits bool
}

func engineStats(engine string) statsEngine {
	return statsEngine{label: engine, emits: engineEmitsStats(engine)}
}

// checkStats checks flow 6: /debug/vars of the tablet show <op>Bytes and
// <op>DurationNanoseconds with the engine's and the storage's labels.
func checkStats(ctx context.Context, t *testing.T, tab *cluster.Tablet, op string, e statsEngine, sb storageBackend) {
	t.Helper()
	vars, err := tab.DebugVars(ctx)
	must(t, err)
	checkVarsStats(t, tab.Alias, vars, op, e, sb)
}

// checkVarsStats checks one process's /debug/vars (see checkStats).
func checkVarsStats(t *testing.T, who string, vars map[string]json.RawMessage, op string, e statsEngine, sb storageBackend) {
	t.Helper()
	stats, err := cluster.BackupStats(vars, op)
	must(t, err)
	has := func(component, impl string) bool {
		for _, s := range stats {
			if s.Component == component && strings.EqualFold(s.Implementation, impl) && s.Bytes > 0 && s.Duration > 0 {
				return true
			}
		}
		return false
	}
	if !has("BackupStorage", sb.impl) {
		t.Errorf("%s /debug/vars: no %sBytes/%sDurationNanoseconds with labels BackupStorage.%s\n%s", who, op, op, sb.impl, cluster.FormatStats(op, stats))
	}
	if e.emits && !has("BackupEngine", e.label) {
		t.Errorf("%s /debug/vars: no %sBytes/%sDurationNanoseconds with labels BackupEngine.%s\n%s", who, op, op, e.label, cluster.FormatStats(op, stats))
	}
	for _, fam := range []string{"Bytes", "DurationNanoseconds"} {
		var m map[string]int64
		if err := json.Unmarshal(vars[op+fam], &m); err != nil || len(m) == 0 {
			t.Errorf("%s /debug/vars: %s%s missing or empty", who, op, fam)
		}
	}
	if op == "Restore" && e.emits && e.label == "fifo" {
		checkRestorePhases(t, who, stats)
	}
	if t.Failed() {
		return
	}
	t.Logf("%s", cluster.FormatStats(fmt.Sprintf("%s stats on %s", op, who), stats))
}

// checkRestorePhases: the fifo engine's restore reports each phase of the
// downtime in backupstats: the download (the storage's reads), the
// decompression, the extraction's writes, the prepare and the move-back.
func checkRestorePhases(t *testing.T, who string, stats []cluster.Stat) {
	t.Helper()
	find := func(component, impl, op string) *cluster.Stat {
		for i, s := range stats {
			if s.Component == component && strings.EqualFold(s.Implementation, impl) && s.Operation == op && s.Duration > 0 {
				return &stats[i]
			}
		}
		return nil
	}
	for _, op := range []string{"Source:Read", "Decompressor:Read", "Extract:Write", "Prepare", "MoveBack", "Engine:Restore"} {
		if find("BackupEngine", "fifo", op) == nil {
			t.Errorf("%s /debug/vars: no RestoreDurationNanoseconds for the fifo engine's phase %s\n%s", who, op, cluster.FormatStats("Restore", stats))
		}
	}
	// What follows the engine (mysqld's start for mysql_upgrade, the
	// upgrade, the restart) is Vitess's Restore total less the engine's.
	total, engine := find("-", "-", "Restore"), find("BackupEngine", "fifo", "Engine:Restore") // "-": Vitess's unscoped label
	switch {
	case total == nil || engine == nil:
		t.Errorf("%s /debug/vars: no Restore total or no Engine:Restore\n%s", who, cluster.FormatStats("Restore", stats))
	case total.Count == engine.Count && total.Duration <= engine.Duration:
		t.Errorf("%s /debug/vars: Vitess's Restore total %v is not longer than the engine's %v", who, total.Duration, engine.Duration)
	case total.Count == engine.Count:
		t.Logf("%s: %d restores, %v in the engine, %v after it in Vitess (mysqld started, mysql_upgrade, restarted)", who, total.Count,
			engine.Duration.Round(time.Millisecond), (total.Duration - engine.Duration).Round(time.Millisecond))
	}
}
