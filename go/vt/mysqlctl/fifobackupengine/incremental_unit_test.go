package fifobackupengine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/mysql/replication"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

const (
	mariaTool    = "mariabackup based on MariaDB server 10.11.6-MariaDB"
	mysqlVersion = "10.11.6-MariaDB"
)

func mariaPos(t *testing.T, seq int) replication.Position {
	p, err := replication.ParsePosition("MariaDB", fmt.Sprintf("0-1-%d", seq))
	require.NoError(t, err)
	return p
}

// mysqlPos is a MySQL GTID set: transactions 1..n of one server.
func mysqlPos(t *testing.T, n int) replication.Position {
	p, err := replication.ParsePosition(replication.Mysql56FlavorID, fmt.Sprintf("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-%d", n))
	require.NoError(t, err)
	return p
}

// chainManifest is a backup of a chain as the engine writes its MANIFEST.
func chainManifest(t *testing.T, name string, base *Manifest, at time.Time, seq int, lineage string) *Manifest {
	m := &Manifest{Source: SourceStdout, ToolFlavor: FlavorMariabackup, ToolVersion: mariaTool, Lineage: lineage,
		LSN: LSNs{BackupType: "full-backuped", From: "0", To: fmt.Sprint(1000 * seq)}}
	m.BackupMethod, m.BackupName, m.MySQLVersion = engineName, name, mysqlVersion
	m.Position, m.PurgedPosition = mariaPos(t, seq), mariaPos(t, seq)
	m.StartTime = mysqlctl.FormatRFC3339(at.Add(-time.Minute))
	m.BackupTime, m.FinishedTime = mysqlctl.FormatRFC3339(at), mysqlctl.FormatRFC3339(at.Add(time.Minute))
	m.Lanes = []LaneInfo{{File: laneFileName(0, "")}}
	if base != nil {
		m.BaseBackup, m.FullBackup, m.ChainLength = base.BackupName, base.FullBackup, base.ChainLength+1
		if base.FullBackup == "" {
			m.FullBackup = base.BackupName
		}
		m.LSN.BackupType, m.LSN.From = "incremental", base.LSN.To
	}
	require.NoError(t, m.check())
	return m
}

// TestChooseBase: a delta is taken on the newest full (differential, the
// default) or the newest backup of its chain (latest), and a full instead,
// with the reason, in every case the issue names.
func TestChooseBase(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	full := chainManifest(t, "a", nil, now.Add(-3*day), 1, "L1")
	d1 := chainManifest(t, "b", full, now.Add(-2*day), 2, "L1")
	d2 := chainManifest(t, "c", d1, now.Add(-day), 3, "L1")
	tool := &backupTool{Flavor: FlavorMariabackup, Version: mariaTool}
	choice := func(mutate func(*baseChoice)) *baseChoice {
		cfg := validConfig()
		cfg.FullInterval = 7 * day
		cfg.IncrementalBase = defaultFlagConfig().IncrementalBase
		c := &baseChoice{cfg: &cfg, now: now, tool: tool, mysqlVersion: mysqlVersion, pos: mariaPos(t, 10), here: lineage{Instance: "L1"}, dir: "ks/0"}
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	// nil: another engine's backup, or an unreadable MANIFEST.
	backups := []*Manifest{full, d1, nil, d2}

	require.Equal(t, BaseFull, defaultFlagConfig().IncrementalBase, "differential by default")
	latest := func(c *baseChoice) { c.cfg.IncrementalBase = BaseLatest }
	base, why := choice(latest).chooseBase(backups)
	require.Empty(t, why)
	assert.Equal(t, "c", base.BackupName, "latest: the newest of the chain")
	base, why = choice(nil).chooseBase(backups)
	require.Empty(t, why)
	assert.Equal(t, "a", base.BackupName, "full (the default): differential")
	base, why = choice(func(c *baseChoice) { latest(c); c.here = lineage{Instance: "L9", Restored: []string{"a", "b"}} }).chooseBase([]*Manifest{full, d1})
	require.Empty(t, why, "restored from the chain")
	assert.Equal(t, "b", base.BackupName)
	base, why = choice(func(c *baseChoice) { c.here = lineage{Instance: "L9", Restored: []string{"a", "b"}} }).chooseBase([]*Manifest{full, d1})
	require.Empty(t, why, "restored from a differential on the full")
	assert.Equal(t, "a", base.BackupName)

	// Differentials count against the chain's length as deltas do: after
	// --fifo-backup-max-chain-length of them on one full, a full.
	x1 := chainManifest(t, "x1", full, now.Add(-2*day), 2, "L1")
	x2 := chainManifest(t, "x2", full, now.Add(-day), 3, "L1")
	base, why = choice(func(c *baseChoice) { c.cfg.MaxChainLength = 3 }).chooseBase([]*Manifest{full, x1, x2})
	require.Empty(t, why)
	assert.Equal(t, "a", base.BackupName)
	base, why = choice(func(c *baseChoice) { c.cfg.MaxChainLength = 2 }).chooseBase([]*Manifest{full, x1, x2})
	assert.Nil(t, base)
	assert.Equal(t, "a delta on a would be number 3 after the full a, more than --fifo-backup-max-chain-length=2", why)

	for _, tc := range []struct {
		name    string
		backups []*Manifest
		mutate  func(*baseChoice)
		why     string
	}{
		{"no full", []*Manifest{nil, nil}, nil, "no complete fifo full backup in ks/0"},
		{"full due", backups, func(c *baseChoice) { c.cfg.FullInterval = 3 * day }, "the last full backup a is 72h0m0s old: a full is due every 72h0m0s"},
		{"chain at its length", backups, func(c *baseChoice) { c.cfg.MaxChainLength = 2 }, "number 3 after the full a, more than --fifo-backup-max-chain-length=2"},
		{"tool changed", backups, func(c *baseChoice) {
			c.tool = &backupTool{Flavor: FlavorMariabackup, Version: "mariabackup based on MariaDB server 10.11.7-MariaDB"}
		}, "the base c was taken with mariabackup (" + mariaTool + "), the tool here is mariabackup (mariabackup based on MariaDB server 10.11.7"},
		{"server changed", backups, func(c *baseChoice) { c.mysqlVersion = "10.11.7-MariaDB" }, "the base c was taken on MySQL 10.11.6-MariaDB, the " +
			"server here is 10.11.7-MariaDB"},
		{"another data directory", backups, func(c *baseChoice) { c.here = lineage{Instance: "L2"} }, "this data directory does not descend from the base c"},
		{"restored from an older backup of the chain", backups, func(c *baseChoice) { c.here = lineage{Instance: "L2", Restored: []string{"a", "b"}} },
			"does not descend from the base c"},
		{"server behind the base", backups, func(c *baseChoice) { c.pos = mariaPos(t, 2) }, "the server's position 0-1-2 does not contain the base c's 0-1-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, why := choice(func(c *baseChoice) { // on the chain's newest, c
				latest(c)
				if tc.mutate != nil {
					tc.mutate(c)
				}
			}).chooseBase(tc.backups)
			assert.Nil(t, base)
			assert.Contains(t, why, tc.why)
		})
	}
}

// TestPrepareArgsOfAChain: Percona XtraBackup prepares every backup of a
// chain but the last with --apply-log-only, each delta with
// --incremental-dir; mariabackup has no --apply-log-only.
func TestPrepareArgsOfAChain(t *testing.T) {
	cfg := validConfig()
	percona := &backupTool{Flavor: FlavorXtrabackup}
	args, err := percona.prepareArgs(&cfg, prepareStep{TargetDir: "/t", RedoOnly: true})
	require.NoError(t, err)
	assert.Contains(t, args, "--apply-log-only")
	assert.NotContains(t, fmt.Sprint(args), "--incremental-dir")
	args, err = percona.prepareArgs(&cfg, prepareStep{TargetDir: "/t", DeltaDir: "/d1", RedoOnly: true})
	require.NoError(t, err)
	assert.Contains(t, args, "--apply-log-only")
	assert.Contains(t, args, "--incremental-dir=/d1")
	args, err = percona.prepareArgs(&cfg, prepareStep{TargetDir: "/t", DeltaDir: "/d2"})
	require.NoError(t, err)
	assert.NotContains(t, args, "--apply-log-only")
	assert.Contains(t, args, "--incremental-dir=/d2")
	assert.NotContains(t, args, "--export")
	// A table restore exports at the chain's last step only.
	args, err = percona.prepareArgs(&cfg, prepareStep{TargetDir: "/t", DeltaDir: "/d2", Export: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"--no-defaults", "--prepare", "--target-dir=/t", "--export", "--incremental-dir=/d2"}, args[:5])
	maria := &backupTool{Flavor: FlavorMariabackup}
	args, err = maria.prepareArgs(&cfg, prepareStep{TargetDir: "/t", DeltaDir: "/d1", RedoOnly: true})
	require.NoError(t, err)
	assert.NotContains(t, args, "--apply-log-only")
	assert.Contains(t, args, "--incremental-dir=/d1")
}

// TestPITRNeverOvershoots runs Vitess's own path finders on fifo manifests
// followed by Vitess's binlog backups: the backup a restore to a time starts
// from (full or delta: every fifo backup is full in Vitess's sense) is one
// whose consistent point, BackupTime, is at or before the time, even where
// it started (StartTime, the time in its name) before it; by position, the
// newest whose position the target holds.
func TestPITRNeverOvershoots(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	// On MySQL, as the engine records them: the position at the consistent
	// point, and the server's gtid_purged.
	onMySQL := func(m *Manifest, seq int) *Manifest {
		m.Position, m.PurgedPosition = mysqlPos(t, 10*seq), mysqlPos(t, 1)
		return m
	}
	full := onMySQL(chainManifest(t, "a", nil, t0, 1, "L1"), 1)
	d1 := onMySQL(chainManifest(t, "b", full, t0.Add(time.Hour), 2, "L1"), 2)
	d2 := onMySQL(chainManifest(t, "c", d1, t0.Add(2*time.Hour), 3, "L1"), 3)
	// Vitess's binlog backups from each fifo backup's position to the next.
	binlog := func(from, to int, first, last time.Time) *mysqlctl.BackupManifest {
		return &mysqlctl.BackupManifest{BackupMethod: "builtin", BackupName: fmt.Sprintf("binlog-%d", to), Incremental: true,
			FromPosition: mysqlPos(t, 10*from), Position: mysqlPos(t, 10*to), PurgedPosition: mysqlPos(t, 1),
			BackupTime: mysqlctl.FormatRFC3339(last), FinishedTime: mysqlctl.FormatRFC3339(last),
			IncrementalDetails: &mysqlctl.IncrementalBackupDetails{FirstTimestamp: mysqlctl.FormatRFC3339(first), LastTimestamp: mysqlctl.FormatRFC3339(last)}}
	}
	ms := []*mysqlctl.BackupManifest{&full.BackupManifest, &d1.BackupManifest, &d2.BackupManifest,
		binlog(1, 2, t0, t0.Add(time.Hour)), binlog(2, 3, t0.Add(time.Hour), t0.Add(2*time.Hour)), binlog(3, 4, t0.Add(2*time.Hour), t0.Add(3*time.Hour))}

	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{t0.Add(30 * time.Minute), "a"},
		// b started (StartTime) a minute before, but its data is from t0+1h.
		{t0.Add(time.Hour - 30*time.Second), "a"},
		{t0.Add(time.Hour), "b"},
		{t0.Add(90 * time.Minute), "b"},
		{t0.Add(150 * time.Minute), "c"},
	} {
		path, err := mysqlctl.FindPITRToTimePath(tc.at, ms)
		require.NoError(t, err, "restore to %v", tc.at)
		require.NotEmpty(t, path)
		assert.Equal(t, tc.want, path[0].BackupName, "restore to %v", tc.at)
		assert.False(t, path[0].Incremental)
		start, err := mysqlctl.ParseRFC3339(path[0].BackupTime)
		require.NoError(t, err)
		assert.False(t, start.After(tc.at), "restore to %v starts from data of %v", tc.at, start)
	}
	_, err := mysqlctl.FindPITRToTimePath(t0.Add(-time.Second), ms)
	assert.Error(t, err, "no backup's data is from before the first one's consistent point")

	for n, want := range map[int]string{10: "a", 15: "a", 20: "b", 29: "b", 30: "c", 35: "c"} {
		path, err := mysqlctl.FindPITRPath(mysqlPos(t, n).GTIDSet, ms)
		require.NoError(t, err)
		assert.Equal(t, want, path[0].BackupName, "restore to position 1-%d", n)
	}
}

// TestLineageFollowsTheDataDirectory: the lineage file is for one data
// directory; the same path made again is another one.
func TestLineageFollowsTheDataDirectory(t *testing.T) {
	cnf := &mysqlctl.Mycnf{DataDir: filepath.Join(t.TempDir(), "data")}
	require.NoError(t, os.Mkdir(cnf.DataDir, 0o750))
	l, fresh, err := loadLineage(cnf)
	require.NoError(t, err)
	assert.NotEmpty(t, fresh)
	again, fresh, err := loadLineage(cnf)
	require.NoError(t, err)
	assert.Empty(t, fresh)
	assert.Equal(t, l.Instance, again.Instance)

	require.NoError(t, restoredLineage(cnf, []string{"a", "b"}))
	r, fresh, err := loadLineage(cnf)
	require.NoError(t, err)
	assert.Empty(t, fresh)
	assert.NotEqual(t, l.Instance, r.Instance, "a restore starts a new lineage")
	assert.True(t, r.descendsFrom(&Manifest{BackupManifest: mysqlctl.BackupManifest{BackupName: "b"}}))

	// The directory removed and made again (another engine's restore).
	require.NoError(t, os.RemoveAll(cnf.DataDir))
	require.NoError(t, os.Mkdir(cnf.DataDir, 0o750))
	n, fresh, err := loadLineage(cnf)
	require.NoError(t, err)
	assert.Contains(t, fresh, "the data directory was replaced")
	assert.False(t, n.descendsFrom(&Manifest{BackupManifest: mysqlctl.BackupManifest{BackupName: "b"}}))
}

// sizedHandle is a backup handle whose StoredSize gives sizes or err.
type sizedHandle struct {
	backupstorage.BackupHandle
	sizes map[string]int64
	err   error
}

func (h sizedHandle) StoredSize(_ context.Context, file string) (int64, error) {
	return h.sizes[file], h.err
}

// TestAChainIsJudgedByWhatItsErrorsSay: a lane whose stored size could not
// be read, or a base that could not be opened or read, is said not read,
// never damaged or missing (and stays unreadable); a size that differs, a
// base not there or whose MANIFEST does not parse, is judged.
func TestAChainIsJudgedByWhatItsErrorsSay(t *testing.T) {
	m := &Manifest{BackupManifest: mysqlctl.BackupManifest{BackupName: "b"}, Lanes: []LaneInfo{{File: "lane-000.xbstream.zst", StoredBytes: 10}}}
	err := checkLanesStored(context.Background(), member{bh: sizedHandle{err: fmt.Errorf("HEAD: %w", fs.ErrPermission)}, m: m})
	assert.EqualError(t, err, "backup b: the size of lane lane-000.xbstream.zst could not be read: HEAD: permission denied")
	assert.True(t, unreadable.Is(err))
	err = checkLanesStored(context.Background(), member{bh: sizedHandle{sizes: map[string]int64{"lane-000.xbstream.zst": 9}}, m: m})
	assert.EqualError(t, err, "backup b is damaged: lane lane-000.xbstream.zst has 9 bytes stored, its MANIFEST says 10")
	assert.False(t, unreadable.Is(err))

	notRead := baseUnusable(fmt.Errorf("GET: %w", context.DeadlineExceeded), "d", "b", "is damaged")
	assert.EqualError(t, notRead, "backup d: its base b could not be read: GET: context deadline exceeded")
	assert.True(t, unreadable.Is(notRead))
	damaged := baseUnusable(errors.New("checksum mismatch"), "d", "b", "is damaged")
	assert.EqualError(t, damaged, "backup d: its base b is damaged: checksum mismatch")
	assert.False(t, unreadable.Is(damaged))
}
