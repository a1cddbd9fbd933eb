package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/topo"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// ShardStatus is one backup directory (keyspace/shard) as the fleet view
// shows it.
type ShardStatus struct {
	Keyspace string `json:"keyspace"`
	Shard    string `json:"shard"`
	// Backups counts the complete ones, as Vitess lists them (those
	// restores pick from; not those copied there by hand); Newest
	// is the newest a restore takes, PassedOver the newer ones it passes
	// over (a damaged MANIFEST, another backup's copied there: vtfifo ls
	// of the shard says why).
	Backups    int       `json:"backups"`
	Newest     string    `json:"newest,omitempty"`
	Time       time.Time `json:"time,omitempty"`
	PassedOver int       `json:"passed_over,omitempty"`
	// ChainLength is the newest backup's place after its chain's full (0:
	// a full backup).
	ChainLength int `json:"chain_length"`
	// NewestLock is what keeps the newest from removal ("locked until ...",
	// split storage), NewestLockedUntil its date; empty: nothing.
	NewestLock        string     `json:"newest_lock,omitempty"`
	NewestLockedUntil *time.Time `json:"newest_locked_until,omitempty"`
	// NewestPredictedRestore is how long restoring the newest should take,
	// at the rates of the storage's latest test restores (restoretime.go).
	NewestPredictedRestore *fifobackupengine.PredictedRestore `json:"newest_predicted_restore,omitempty"`
	// NewestProven is the newest backup whose latest test restore passed.
	NewestProven     string    `json:"newest_proven,omitempty"`
	NewestProvenTime time.Time `json:"newest_proven_time,omitempty"`
	// TestRestoreFailed counts the complete backups whose latest test
	// restore failed.
	TestRestoreFailed int `json:"test_restore_failed"`
	Quarantined       int `json:"quarantined"`
	Incomplete        int `json:"incomplete"`
	// Problems are what the checks found (--max-age, --max-unproven-age),
	// or why the directory could not be read.
	Problems []string `json:"problems,omitempty"`
	// NotInTopology: the flags name a topology, which has no such shard
	// (the backups of a shard since deleted, or of another cluster).
	NotInTopology bool `json:"not_in_topology,omitempty"`
	// Unread: its backups could not all be listed (Problems says why): its
	// counts say nothing, and --prometheus gives none for it.
	Unread bool `json:"unread,omitempty"`
	// SummaryBuilt is when the storage's summary these counts come from
	// was made (fleet_summary.go); Walked says why this view walked the
	// shard's backups instead of reading it ("": it read it).
	SummaryBuilt time.Time `json:"summary_built,omitempty"`
	Walked       string    `json:"walked,omitempty"`
}

// fleetCheck is ls's whole-storage view: its checks, output format and
// how it uses the storage's summaries.
type fleetCheck struct {
	maxAge, maxUnprovenAge time.Duration
	prometheus             bool
	summaries              summaryUse
}

func (c *fleetCheck) register(fs *pflag.FlagSet) {
	fs.Var(flagvalue.Age{P: &c.maxAge, Allowed: "0 (no check) or an age such as 36h, 2d or 1w"}, "max-age", "without --keyspace/--shard: a shard "+
		"whose newest complete backup is older than this (or that has none) fails the check (exit 1); 0: no check")
	fs.Var(flagvalue.Age{P: &c.maxUnprovenAge, Allowed: "0 (no check) or an age such as 36h, 2d or 1w"}, "max-unproven-age",
		"without --keyspace/--shard: a shard whose newest backup that passed a test restore is older than this (or that has none) fails the check "+
			"(exit 1); 0: no check")
	c.summaries.register(fs)
}

// registerPrometheus adds ls's --prometheus (the exporter always is).
func (c *fleetCheck) registerPrometheus(fs *pflag.FlagSet) {
	fs.BoolVar(&c.prometheus, "prometheus", false, "without --keyspace/--shard: print the Prometheus text format (for node_exporter's textfile "+
		"collector) instead of a table")
}

func (c *fleetCheck) set() bool { return c.maxAge != 0 || c.maxUnprovenAge != 0 || c.prometheus }

func (c *fleetCheck) validate(asJSON bool) error {
	switch {
	case c.maxAge < 0:
		return invalid("max-age", c.maxAge.String(), "0 (no check) or a positive duration")
	case c.maxUnprovenAge < 0:
		return invalid("max-unproven-age", c.maxUnprovenAge.String(), "0 (no check) or a positive duration")
	case c.prometheus && asJSON:
		return errors.New("--json and --prometheus are exclusive: give one")
	}
	return c.summaries.validate()
}

// fleet is ls without --keyspace/--shard: every backup directory of the
// storage, checked as c says.
func (s *session) fleet(c fleetCheck, asJSON bool, stdout io.Writer) int {
	st, err := can[fleetLister](s.bs, "list its shards (give --keyspace and --shard)")
	if err != nil {
		return s.o.failf(exitUsage, "%v", err)
	}
	if code := s.o.rootMissing(); code != exitOK {
		return code
	}
	v, err := s.fleetView(st, c, s.viewingNow())
	if err != nil {
		return s.o.failf(exitUnreachable, "%v", err)
	}
	if len(v.shards) == 0 {
		return s.o.failf(exitUnreachable, "no backup anywhere in %s: check the storage flags (root, bucket, prefix)", storageLocation(s.o))
	}
	s.noteSummaries(v.unsaved)
	switch {
	case c.prometheus:
		// Written is done: the checks' results are metrics, so that a
		// textfile collector's wrapper replaces its file exactly when an
		// alert should fire.
		writePrometheus(stdout, v)
		return exitOK
	case asJSON:
		if code := writeJSON(stdout, v.shards); code != exitOK {
			return code
		}
	default:
		if code := writeFleetTable(stdout, v.shards, v.at); code != exitOK {
			return code
		}
		fmt.Fprintln(stdout, "\nRestore times: "+ratesLine(v.rates, v.predictable))
		fmt.Fprintln(stdout, "Summaries: "+summariesLine(v.report))
	}
	return fleetStatus(v.failed, v.unread)
}

// fleetView is the fleet as one refresh saw it.
type fleetView struct {
	shards         []ShardStatus
	rates          fifobackupengine.RestoreRates
	predictable    bool
	failed, unread bool
	report         splitstorage.FleetReport
	unsaved        []string // why summaries could not be saved
	at             time.Time
}

// fleetView reads every shard of the storage (from the storage's
// summaries, walking those it has none of or that changed) and of the
// topology the flags name, and checks each as c says at now.
func (s *session) fleetView(st fleetLister, c fleetCheck, now time.Time) (fleetView, error) {
	topo, err := s.topologyDirs()
	if err != nil {
		return fleetView{}, err
	}
	opts := c.summaries.options(s.summarize(st))
	opts.Dirs = topo // a shard whose backups are all in the legacy storage's root
	got, rep, err := st.Fleet(s.ctx, opts)
	if err != nil {
		return fleetView{}, fmt.Errorf("cannot list %s: %v", storageLocation(s.o), err)
	}
	byDir := map[string]splitstorage.FleetShard{}
	dirs := make([]string, 0, len(got))
	for _, fs := range got {
		byDir[fs.Dir] = fs
		dirs = append(dirs, fs.Dir)
	}
	dirs, notInTopo := withTopology(dirs, topo)
	v := fleetView{report: rep, at: now}
	works := make([]*fifobackupengine.RestoreWork, 0, len(dirs))
	var recs []testrestore.Record
	for _, dir := range dirs {
		sum, unsaved := fromSummary(dir, byDir[dir])
		sh := sum.Status
		sh.NotInTopology = notInTopo[dir]
		if sh.Unread {
			v.unread = true
		} else if checks := c.problems(sh, now); len(checks) > 0 {
			sh.Problems, v.failed = append(sh.Problems, checks...), true
		}
		if unsaved != "" {
			v.unsaved = append(v.unsaved, dir+": "+unsaved)
		}
		v.shards = append(v.shards, sh)
		works = append(works, sum.NewestWork)
		recs = append(recs, sum.Records...)
	}
	// One host class for the whole storage: the rates of its latest test
	// restores, whichever shard they restored.
	v.rates, v.predictable = testrestore.Rates(recs)
	for i, w := range works {
		if v.predictable && w != nil {
			p := v.rates.Predict(*w)
			v.shards[i].NewestPredictedRestore = &p
		}
	}
	return v, nil
}

// fleetStatus is the fleet view's exit status: a failed check is 1 whatever
// else could not be read (named in its row); a shard that could not be
// read, and no failed check, is 3.
func fleetStatus(failed, unread bool) int {
	switch {
	case failed:
		return exitFailed
	case unread:
		return exitUnreachable
	}
	return exitOK
}

// topologyDirs are the backup directories of every shard of the topology
// the flags name (--topo-global-server-address, as a tablet's flag file
// has it), sorted; nil when they name none.
func (s *session) topologyDirs() ([]string, error) {
	ts, where, err := s.openTopology()
	if err != nil || ts == nil {
		return nil, err
	}
	defer ts.Close()
	keyspaces, err := ts.GetKeyspaces(s.ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read the keyspaces of %s: %v", where, err)
	}
	dirs := []string{}
	for _, ks := range keyspaces {
		shards, err := ts.GetShardNames(s.ctx, ks)
		if err != nil {
			return nil, fmt.Errorf("cannot read the shards of keyspace %s in %s: %v", ks, where, err)
		}
		for _, sh := range shards {
			dirs = append(dirs, mysqlctl.GetBackupDir(ks, sh))
		}
	}
	sort.Strings(dirs)
	return dirs, nil
}

// withTopology adds to dirs, the storage's backup directories, every shard
// of the topology (topo, nil: none): a shard that never had a backup
// shows, and fails --max-age. It marks the directories the topology does
// not know.
func withTopology(dirs, topo []string) ([]string, map[string]bool) {
	if topo == nil {
		return dirs, nil
	}
	notInTopo := map[string]bool{}
	for _, d := range dirs {
		notInTopo[d] = true
	}
	for _, d := range topo {
		if _, inStorage := notInTopo[d]; !inStorage {
			dirs = append(dirs, d)
		}
		notInTopo[d] = false
	}
	sort.Strings(dirs)
	return dirs, notInTopo
}

// openTopology opens the topology the flags name
// (--topo-global-server-address, as a tablet's flag file has it), saying
// where it is; nil when they name none.
func (s *session) openTopology() (*topo.Server, string, error) {
	flag := func(name string) string { return s.o.flags.Lookup(name).Value.String() }
	impl, addr, root := flag("topo-implementation"), flag("topo-global-server-address"), flag("topo-global-root")
	if addr == "" {
		return nil, "", nil
	}
	where := fmt.Sprintf("the topology (--topo-implementation=%s --topo-global-server-address=%s --topo-global-root=%s)", impl, addr, root)
	ts, err := topo.OpenServer(impl, addr, root)
	if err != nil {
		return nil, "", fmt.Errorf("cannot open %s: %v", where, err)
	}
	return ts, where, nil
}

// copyTeller says whether a listed backup is another's, copied or renamed
// by hand (splitstorage.Handle.Copied).
type copyTeller interface{ Copied() bool }

// ownBackups counts bhs but the backups copied there by hand, which Vitess
// does not list (GetBackups), nor its retention count.
func ownBackups(bhs []backupstorage.BackupHandle) int {
	n := 0
	for _, bh := range bhs {
		if c, ok := bh.(copyTeller); !ok || !c.Copied() {
			n++
		}
	}
	return n
}

// shardStatus reads one backup directory: its complete backups (the
// newest's MANIFEST and its chain's, every test restore record) and the
// others. It returns the records and the work of restoring the newest
// (nil: not this engine's, or its chain is not all there).
func (s *session) shardStatus(ctx context.Context, st fleetLister, dir string) (ShardStatus, []testrestore.Record, *fifobackupengine.RestoreWork) {
	sh := ShardStatus{}
	sh.Keyspace, sh.Shard, _ = strings.Cut(dir, "/")
	bhs, inc, err := st.ListShard(ctx, dir)
	if err != nil {
		sh.Problems, sh.Unread = append(sh.Problems, "cannot list its backups: "+errtext.Line(err)), true
		return sh, nil, nil
	}
	sh.Backups = ownBackups(bhs)
	var newestWork *fifobackupengine.RestoreWork
	if newest, i := restoresPick(ctx, bhs); i >= 0 {
		sh.Newest, sh.Time, sh.ChainLength = newest.Name, backupTime(newest), newest.ChainLength
		sh.NewestLock, sh.NewestLockedUntil = newest.Lock, newest.LockedUntil
		newestWork = chainWorkIn(ctx, bhs[:i+1], newest)
		sh.PassedOver = len(bhs) - 1 - i
	} else {
		sh.PassedOver = len(bhs)
	}
	var recs []testrestore.Record
	for i := len(bhs) - 1; i >= 0; i-- {
		rec, err := testrestore.Load(ctx, bhs[i])
		if err != nil || rec == nil {
			continue
		}
		recs = append(recs, *rec)
		if rec.Outcome == testrestore.Failed {
			sh.TestRestoreFailed++
		}
		if rec.Outcome == testrestore.Passed && sh.NewestProven == "" {
			// The same clock as the newest's: the MANIFEST's time.
			sh.NewestProven, sh.NewestProvenTime = bhs[i].Name(), backupTime(describe(ctx, bhs[i]))
		}
	}
	for _, b := range inc {
		switch {
		case b.Quarantined != "":
			sh.Quarantined++
		case len(b.RetiredFor) == 0:
			sh.Incomplete++
		}
	}
	return sh, recs, newestWork
}

// restoresPick is the newest of bhs (a shard's complete backups, oldest
// first) that a restore takes, described, and its index: the newer ones
// are passed over by every restore, their MANIFEST proven damaged or
// another backup's copied there (what a tablet's restore passes over too).
// One that could not be read is taken: nothing says it does not restore.
// -1: every one is passed over.
func restoresPick(ctx context.Context, bhs []backupstorage.BackupHandle) (BackupInfo, int) {
	for i := len(bhs) - 1; i >= 0; i-- {
		if b := describe(ctx, bhs[i]); (!b.damaged && !b.elsewhere) || ctx.Err() != nil {
			return b, i
		}
	}
	return BackupInfo{}, -1
}

// backupTime is when a backup was taken: its MANIFEST's time, else the
// time in its name (Vitess names backups date.time.tablet, in UTC).
func backupTime(b BackupInfo) time.Time {
	if t, err := time.Parse(time.RFC3339, b.Time); err == nil {
		return t
	}
	if len(b.Name) >= 17 {
		if t, err := time.Parse("2006-01-02.150405", b.Name[:17]); err == nil {
			return t
		}
	}
	return time.Time{}
}

// problems are what c's checks find in sh at now.
func (c fleetCheck) problems(sh ShardStatus, now time.Time) []string {
	var out []string
	for _, k := range []struct {
		limit      time.Duration
		name       string
		at         time.Time
		what, flag string
		none       string
	}{
		{c.maxAge, sh.Newest, sh.Time, "newest backup", "max-age", "no complete backup"},
		{c.maxUnprovenAge, sh.NewestProven, sh.NewestProvenTime, "newest proven backup", "max-unproven-age", "no backup passed a test restore"},
	} {
		switch {
		case k.limit <= 0:
		case k.name == "":
			out = append(out, k.none)
		case now.Sub(k.at) > k.limit:
			out = append(out, fmt.Sprintf("%s %s old (--%s %s)", k.what, age(now, k.at), k.flag, flagvalue.FormatAge(k.limit)))
		}
	}
	return out
}

// ageUnits are age's units, largest first.
var ageUnits = []struct {
	d    time.Duration
	name string
}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}

// age is how long ago t was, for people (shortDuration).
func age(now, t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return shortDuration(now.Sub(t))
}

// shortDuration is d for people, in its two largest units: "3d4h",
// "5h12m", "2m40s", "40s", "3d".
func shortDuration(d time.Duration) string {
	d = max(d.Round(time.Second), 0)
	for i, u := range ageUnits[:len(ageUnits)-1] {
		if d < u.d {
			continue
		}
		next := ageUnits[i+1]
		if rest := d % u.d / next.d; rest > 0 {
			return fmt.Sprintf("%d%s%d%s", d/u.d, u.name, rest, next.name)
		}
		return fmt.Sprintf("%d%s", d/u.d, u.name)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}
