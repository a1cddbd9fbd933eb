// Command demo shows the fifo backup engine and the split backup storage at work in a real
// Vitess v24 cluster on MariaDB, and plays a disaster:
//
//  1. starts etcd, vtctld and a MariaDB primary tablet, loads sample data;
//  2. takes a fifo backup into split storage on local disk (vtctldclient Backup --allow-primary)
//     and lists it (GetBackups);
//  3. destroys the tablet and its data;
//  4. starts a fresh tablet with --restore-from-backup, promotes it;
//  5. proves the data matches (row counts and CHECKSUM TABLE) and prints the per-phase stats.
//
// Everything runs on 127.0.0.1 under one temporary directory and is torn down at the end.
// It exits 0 on success; on failure it says which step failed and where the logs are.
// Run it with `make demo` (which builds the binaries first).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/vtversion"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

func main() {
	os.Exit(run())
}

type step struct {
	n, total int
}

func (s *step) do(name string, fn func() error) error {
	s.n++
	fmt.Printf("[%d/%d] %s ... ", s.n, s.total, name)
	start := time.Now()
	err := fn()
	if err != nil {
		fmt.Printf("FAILED (%.1fs)\n", time.Since(start).Seconds())
		return fmt.Errorf("step %d/%d (%s): %w", s.n, s.total, name, err)
	}
	fmt.Printf("ok (%.1fs)\n", time.Since(start).Seconds())
	return nil
}

func run() int {
	rows := 50000
	if v, err := strconv.Atoi(os.Getenv("VTFIFO_DEMO_ROWS")); err == nil && v > 0 {
		rows = v
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 20*time.Minute)
	defer cancelTimeout()

	fmt.Println("vtfifo demo: the fifo backup engine and the split backup storage in a real Vitess cluster")
	fmt.Printf("(Vitess %s vttablet/vtctld/vtctldclient, MariaDB + mariabackup, etcd; all on 127.0.0.1)\n", vtversion.Module())
	fmt.Println()

	d := &demo{ctx: ctx, rows: rows}
	defer func() {
		if d.c != nil {
			d.c.Teardown()
		}
	}()
	steps := []struct {
		name string
		do   func() error
		then func() // what to show once the step is done
	}{
		{"start etcd and vtctld (split storage on local disk)", d.startCluster, nil},
		{"start a MariaDB primary tablet (mysqlctl init, vttablet, InitShardPrimary)", d.startPrimary, nil},
		{fmt.Sprintf("load sample data (%d rows in the biggest table; InnoDB, Aria, MyISAM, partitioned)", rows), d.loadData, nil},
		{"take a fifo backup into split storage: vtctldclient Backup --allow-primary", d.backup, nil},
		{"list backups: vtctldclient GetBackups", d.list, d.showList},
		{"DISASTER: stop the primary, delete its data directory, DeleteTablets --allow-primary", func() error { return d.primary.Destroy(ctx) }, nil},
		{"start a fresh tablet with --restore-from-backup", d.restore, nil},
		{"promote it to primary", d.promote, nil},
		{"compare the data: row counts and CHECKSUM TABLE", d.compare, nil},
	}
	s := &step{total: len(steps)}
	for _, st := range steps {
		if err := s.do(st.name, st.do); err != nil {
			return d.failed(err)
		}
		if st.then != nil {
			st.then()
		}
	}
	d.report()

	d.c.Teardown()
	if os.Getenv("VTFIFO_KEEP") == "" {
		_ = d.c.RemoveAll()
	} else {
		fmt.Printf("kept %s (VTFIFO_KEEP is set)\n", d.c.Root)
	}
	fmt.Println("DEMO PASSED: the restored tablet serves as primary with identical data; everything was torn down.")
	return 0
}

// demo is what the steps share: the cluster, its tablets, the data before and
// after, and what the backup and the restore reported.
type demo struct {
	ctx                       context.Context
	rows                      int
	c                         *cluster.Cluster
	splitRoot                 string
	primary, restored         *cluster.Tablet
	before, after             []cluster.TableSum
	backupOut, listing        string
	backupStats, restoreStats []cluster.Stat
}

// failed says which step failed and where the logs are; it returns the exit code.
func (d *demo) failed(err error) int {
	fmt.Fprintf(os.Stderr, "\nDEMO FAILED: %v\n", err)
	if errors.Is(err, cluster.ErrPrereq) {
		fmt.Fprintln(os.Stderr, "run `make setup` (or `make demo`, which runs it) first")
	}
	if d.c != nil {
		d.c.Teardown()
		fmt.Fprintf(os.Stderr, "logs of every process are kept in %s\n", d.c.LogDir)
		fmt.Fprintf(os.Stderr, "(vttablet-<uid>.log, vtctld.log, vtctldclient.log, mysqlctl-<uid>.log; mysqld's error.log under %s/vt_*/)\n", d.c.DataRoot)
	}
	return 1
}

func (d *demo) startCluster() error {
	c, err := cluster.Start(d.ctx, cluster.Options{
		PrepareStorage: func(c *cluster.Cluster) (cluster.Storage, error) {
			d.splitRoot = filepath.Join(c.Root, "backups")
			return cluster.Storage{Name: "split-local", Flags: []string{
				"--backup-storage-implementation=split",
				"--split-storage-backend=file",
				"--split-storage-root=" + d.splitRoot,
				"--split-storage-part-size=4MiB",
				"--split-storage-memory-budget=64MiB",
			}}, c.MkdirOwned(d.splitRoot)
		},
	})
	if c != nil {
		d.c = c
	}
	return err
}

// tablet starts a tablet of the fifo engine as the demo runs it: mysqlctl
// init, then vttablet with opts.
func (d *demo) tablet(uid int, opts cluster.StartOptions) (*cluster.Tablet, error) {
	t, err := d.c.NewTablet(uid)
	if err != nil {
		return nil, err
	}
	t.Engine = cluster.Engine{Name: "fifo", Flags: []string{
		"--fifo-backup-tool-path=" + filepath.Join(d.c.XtrabackupRoot, "xtrabackup"),
		"--fifo-backup-tool-flavor=mariabackup",
		"--fifo-backup-lanes=2",
		"--fifo-backup-parallel=2",
	}}
	if err := t.InitMySQL(d.ctx); err != nil {
		return t, err
	}
	return t, t.Start(d.ctx, opts)
}

func (d *demo) startPrimary() error {
	var err error
	if d.primary, err = d.tablet(100, cluster.StartOptions{}); err != nil {
		return err
	}
	if _, err := d.c.Vtctldclient(d.ctx, "InitShardPrimary", "--force", d.c.Keyspace+"/"+d.c.Shard, d.primary.Alias); err != nil {
		return err
	}
	if err := d.primary.WaitForType(d.ctx, "PRIMARY", 2*time.Minute); err != nil {
		return err
	}
	return d.primary.WaitServing(d.ctx, 2*time.Minute)
}

func (d *demo) loadData() error {
	if err := d.primary.LoadSampleData(d.ctx, d.rows); err != nil {
		return err
	}
	var err error
	d.before, err = d.primary.Checksums(d.ctx)
	return err
}

func (d *demo) backup() error {
	var err error
	if d.backupOut, err = d.c.Vtctldclient(d.ctx, "Backup", "--allow-primary", d.primary.Alias); err != nil {
		return err
	}
	d.backupStats = statsOf(d.ctx, d.primary, "Backup")
	return nil
}

func (d *demo) list() error {
	var err error
	d.listing, err = d.c.Vtctldclient(d.ctx, "GetBackups", d.c.Keyspace+"/"+d.c.Shard)
	if err == nil && strings.TrimSpace(d.listing) == "" {
		err = errors.New("GetBackups listed no backup")
	}
	return err
}

func (d *demo) showList() {
	fmt.Printf("\n$ vtctldclient GetBackups %s/%s\n%s\n", d.c.Keyspace, d.c.Shard, strings.TrimSpace(d.listing))
	if objs, size := countFiles(d.splitRoot); objs > 0 {
		fmt.Printf("(%d objects, %.1f MiB in %s)\n\n", objs, float64(size)/(1<<20), d.splitRoot)
	}
}

func (d *demo) restore() error {
	var err error
	if d.restored, err = d.tablet(101, cluster.StartOptions{RestoreFromBackup: true}); err != nil {
		return err
	}
	d.restoreStats = statsOf(d.ctx, d.restored, "Restore")
	return nil
}

func (d *demo) promote() error {
	_, err := d.c.Vtctldclient(d.ctx, "PlannedReparentShard", "--new-primary="+d.restored.Alias, d.c.Keyspace+"/"+d.c.Shard)
	if err == nil {
		return d.restored.WaitServing(d.ctx, 2*time.Minute)
	}
	if strings.Contains(err.Error(), "regexp_like") {
		fmt.Print("(PlannedReparentShard fails on MariaDB with Vitess v24: regexp_like; using read_only=OFF + TabletExternallyReparented) ")
	}
	return d.restored.MakePrimary(d.ctx)
}

func (d *demo) compare() error {
	var err error
	if d.after, err = d.restored.Checksums(d.ctx); err != nil {
		return err
	}
	if diff := cluster.CompareChecksums(d.before, d.after); diff != "" {
		fmt.Printf("\n%s", cluster.FormatChecksums("original", d.before, "restored", d.after))
		return fmt.Errorf("restored data differs: %s", diff)
	}
	return nil
}

// report shows the data before and after, the engine's own per-phase tables
// and Vitess's backup and restore stats.
func (d *demo) report() {
	fmt.Printf("\nData before the disaster (%s) and after the restore (%s):\n\n", d.primary.Alias, d.restored.Alias)
	fmt.Print(cluster.FormatChecksums("original", d.before, "restored", d.after))
	fmt.Println()
	if tbl := engineTable(d.backupOut, "fifo backup"); tbl != "" {
		fmt.Printf("The fifo engine's own per-phase table for the backup (logged by the engine):\n\n%s\n", tbl)
	}
	if tbl := engineTable(readFile(d.restored.Vttablet.LogPath), "fifo restore"); tbl != "" {
		fmt.Printf("The fifo engine's own per-phase table for the restore (vttablet log):\n\n%s\n", tbl)
	}
	fmt.Print(cluster.FormatStats(fmt.Sprintf("Backup per-phase stats from %s /debug/vars (BackupBytes, BackupCount, BackupDurationNanoseconds):",
		d.primary.Alias), d.backupStats))
	fmt.Println()
	fmt.Print(cluster.FormatStats(fmt.Sprintf("Restore per-phase stats from %s /debug/vars (RestoreBytes, RestoreCount, RestoreDurationNanoseconds):",
		d.restored.Alias), d.restoreStats))
	fmt.Println()
}

// statsOf reads the backup or restore stats from a tablet's /debug/vars.
func statsOf(ctx context.Context, t *cluster.Tablet, prefix string) []cluster.Stat {
	vars, err := t.DebugVars(ctx)
	if err != nil {
		return nil
	}
	stats, _ := cluster.BackupStats(vars, prefix)
	return stats
}

// engineTable finds the per-phase table the fifo engine logs at the end of a backup or
// restore: either a quoted value:"..." in vtctldclient's event stream or raw lines in a
// tablet log.
func engineTable(log, title string) string {
	i := -1
	for from := 0; ; {
		j := strings.Index(log[from:], title)
		if j < 0 {
			break
		}
		j += from
		if k := strings.Index(log[j:], "per-phase stats"); k >= 0 && !strings.ContainsAny(log[j:j+k], "\n\"") {
			i = j
		}
		from = j + len(title)
	}
	if i < 0 {
		return ""
	}
	rest := log[i:]
	// vtctldclient prints logutil events as value:"<Go-quoted text>".
	if j := strings.LastIndex(log[:i], `value:"`); j >= 0 && !strings.Contains(log[j:i], "\n") {
		quoted := log[j+len(`value:`):]
		if k := endOfQuoted(quoted); k > 0 {
			if s, err := strconv.Unquote(quoted[:k]); err == nil {
				return strings.TrimRight(s, "\n") + "\n"
			}
		}
	}
	// Raw multi-line text: the title line and the rows after it.
	var out []string
	for n, l := range strings.Split(rest, "\n") {
		if n > 0 && (strings.TrimSpace(l) == "" || strings.Contains(l, " INF ") || strings.Contains(l, " WRN ") || strings.HasPrefix(l, "{")) {
			break
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n") + "\n"
}

// endOfQuoted returns the length of the Go-quoted string at the start of s.
func endOfQuoted(s string) int {
	if !strings.HasPrefix(s, `"`) {
		return -1
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func countFiles(root string) (int, int64) {
	var n int
	var size int64
	_ = filepath.Walk(root, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n++
			size += info.Size()
		}
		return nil
	})
	return n, size
}
