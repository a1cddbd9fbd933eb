package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"vitess.io/vitess/go/mysql"
	"vitess.io/vitess/go/sqltypes"
)

// Tablet is one MariaDB instance (started by mysqlctl) and its vttablet.
type Tablet struct {
	c         *Cluster
	UID       int
	Alias     string // e.g. zone1-0000000100
	MySQLPort int
	HTTPPort  int
	GRPCPort  int
	Dir       string // $VTDATAROOT/vt_0000000100
	Vttablet  *Proc
	// Engine is this tablet's default backup engine; the cluster's unless set before Start.
	Engine Engine
	// ExtraArgs are added to vttablet's command line.
	ExtraArgs []string
	// Stock runs Vitess's own vttablet, built from the pinned module
	// without our plugin, in place of ours.
	Stock bool
	// Storage, when set, is this tablet's backup storage in place of the
	// cluster's (its flags and environment).
	Storage *Storage
}

// NewTablet reserves ports for a tablet with the given UID (it starts nothing).
func (c *Cluster) NewTablet(uid int) (*Tablet, error) {
	t := &Tablet{c: c, UID: uid, Engine: c.Engine}
	t.Alias = fmt.Sprintf("%s-%010d", c.Cell, uid)
	t.Dir = filepath.Join(c.DataRoot, fmt.Sprintf("vt_%010d", uid))
	var err error
	for _, p := range []*int{&t.MySQLPort, &t.HTTPPort, &t.GRPCPort} {
		if *p, err = FreePort(); err != nil {
			return nil, err
		}
	}
	c.tablets = append(c.tablets, t)
	return t, nil
}

func (t *Tablet) mysqlctl(ctx context.Context, action string, extra ...string) error {
	args := []string{
		fmt.Sprintf("--tablet-uid=%d", t.UID),
		fmt.Sprintf("--mysql-port=%d", t.MySQLPort),
		"--log-format=text", "--logtostderr",
		"--config-file-not-found-handling=ignore",
	}
	args = append(args, extra...)
	args = append(args, action)
	_, err := t.c.run(ctx, fmt.Sprintf("mysqlctl-%d", t.UID), nil, t.c.Bin("mysqlctl"), args...)
	return err
}

// InitMySQL runs `mysqlctl init` (a fresh datadir with Vitess's users and databases) and
// leaves mysqld running.
func (t *Tablet) InitMySQL(ctx context.Context) error {
	return t.mysqlctl(ctx, "init", "--init-db-sql-file="+t.c.initSQL)
}

// StartOptions for vttablet.
type StartOptions struct {
	// RestoreFromBackup starts vttablet with --restore-from-backup on a fresh
	// mysqld (InitMySQL): Start returns once the restore is over.
	RestoreFromBackup bool
	// WaitForType waits until the topology shows this tablet type ("" = REPLICA).
	WaitForType string
}

// Start starts vttablet and waits for it to answer and to reach the wanted tablet type.
func (t *Tablet) Start(ctx context.Context, o StartOptions) error {
	args := append([]string{}, t.c.TopoFlags()...)
	args = append(args,
		"--tablet-path="+t.Alias,
		"--tablet-hostname=127.0.0.1",
		"--init-keyspace="+t.c.Keyspace,
		"--init-shard="+t.c.Shard,
		"--init-tablet-type=replica",
		fmt.Sprintf("--port=%d", t.HTTPPort),
		fmt.Sprintf("--grpc-port=%d", t.GRPCPort),
		"--bind-address=127.0.0.1",
		"--grpc-bind-address=127.0.0.1",
		"--service-map=grpc-queryservice,grpc-tabletmanager,grpc-updatestream",
		"--health-check-interval=1s",
		"--pid-file="+filepath.Join(t.c.TmpDir, fmt.Sprintf("vttablet-%d.pid", t.UID)),
		"--log-format=text", "--logtostderr",
		"--config-file-not-found-handling=ignore",
		"--backup-engine-implementation="+t.Engine.Name,
	)
	storage, bin := t.c.Storage, t.c.Bin("vttablet")
	if t.Storage != nil {
		storage = *t.Storage
	}
	if t.Stock {
		bin = t.c.Bin("stock/vttablet")
	}
	args = append(args, t.Engine.Flags...)
	args = append(args, storage.Flags...)
	if o.RestoreFromBackup {
		args = append(args, "--restore-from-backup")
	}
	args = append(args, t.ExtraArgs...)
	var err error
	t.Vttablet, err = t.c.start(fmt.Sprintf("vttablet-%d", t.UID), storage.Env, bin, args...)
	if err != nil {
		return err
	}
	timeout := 3 * time.Minute
	if o.RestoreFromBackup {
		timeout = 10 * time.Minute
	}
	if err := t.c.waitHTTP(ctx, t.Vttablet, t.URL("/debug/status"), timeout); err != nil {
		return err
	}
	want := o.WaitForType
	if want == "" {
		want = "REPLICA"
	}
	if o.RestoreFromBackup {
		if err := t.waitRestored(ctx, want, timeout); err != nil {
			return err
		}
	}
	return t.WaitForType(ctx, want, timeout)
}

// declinedRestore is what vttablet logs where its mysqld holds data already
// (tabletmanager/restore.go, restoreStateManager.start): it never turns RESTORE.
const declinedRestore = "Attempting to restore, but mysqld already contains data"

// waitRestored waits until the tablet itself says it has been RESTORE and is
// want again. The topology alone cannot say it: vttablet records the tablet
// as its init type before it turns RESTORE, and publishes that change
// asynchronously, so a restore just begun can read as want there.
func (t *Tablet) waitRestored(ctx context.Context, want string, timeout time.Duration) error {
	want = strings.ToLower(want)
	err := waitFor(ctx, timeout, t.Alias+" to restore and be "+want, func() (bool, error) {
		if done, werr := t.Vttablet.Exited(); done {
			return false, fatal(fmt.Errorf("vttablet exited: %v", werr))
		}
		if strings.Contains(readFileString(t.Vttablet.LogPath), declinedRestore) {
			return false, fatal(errors.New("vttablet found data in its mysqld and did not restore (a restore starts on a fresh one: InitMySQL)"))
		}
		vars, err := t.DebugVars(ctx)
		if err != nil {
			return false, err
		}
		var typ string
		var counts map[string]int64
		_ = json.Unmarshal(vars["TabletType"], &typ)
		_ = json.Unmarshal(vars["TabletTypeCount"], &counts)
		return counts["restore"] > 0 && typ == want, fmt.Errorf("type %q, times in each type %v", typ, counts)
	})
	if err != nil {
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, t.Vttablet.LogPath, t.Vttablet.Tail(4000))
	}
	return nil
}

// URL of a path on the tablet's HTTP port.
func (t *Tablet) URL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", t.HTTPPort, path)
}

// Type returns the tablet type recorded in the topology (e.g. "PRIMARY", "REPLICA").
func (t *Tablet) Type(ctx context.Context) (string, error) {
	out, err := t.c.Vtctldclient(ctx, "GetTablet", t.Alias)
	if err != nil {
		return "", err
	}
	var tab struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal([]byte(out), &tab); err != nil {
		return "", fmt.Errorf("parse GetTablet: %w\n%s", err, out)
	}
	s := strings.Trim(string(tab.Type), `"`)
	if n, err := strconv.Atoi(s); err == nil {
		names := map[int]string{1: "PRIMARY", 2: "REPLICA", 3: "RDONLY", 4: "SPARE", 5: "EXPERIMENTAL", 6: "BACKUP", 7: "RESTORE", 8: "DRAINED"}
		s = names[n]
	}
	return s, nil
}

// WaitForType waits until the topology shows the given tablet type, failing early if
// vttablet exits.
func (t *Tablet) WaitForType(ctx context.Context, want string, timeout time.Duration) error {
	err := waitFor(ctx, timeout, t.Alias+" to be "+want, func() (bool, error) {
		if t.Vttablet != nil {
			if done, werr := t.Vttablet.Exited(); done {
				return false, fatal(fmt.Errorf("vttablet exited: %v", werr))
			}
		}
		typ, err := t.Type(ctx)
		if err != nil {
			return false, err
		}
		return typ == want, fmt.Errorf("type is %s", typ)
	})
	if err != nil && t.Vttablet != nil {
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, t.Vttablet.LogPath, t.Vttablet.Tail(4000))
	}
	return err
}

// WaitServing waits until the tablet's query service reports SERVING.
func (t *Tablet) WaitServing(ctx context.Context, timeout time.Duration) error {
	return waitFor(ctx, timeout, t.Alias+" to serve", func() (bool, error) {
		vars, err := t.DebugVars(ctx)
		if err != nil {
			return false, err
		}
		var state string
		_ = json.Unmarshal(vars["TabletStateName"], &state)
		return state == "SERVING", fmt.Errorf("TabletStateName=%q", state)
	})
}

// DebugVars fetches /debug/vars.
func (t *Tablet) DebugVars(ctx context.Context) (map[string]json.RawMessage, error) {
	return fetchVars(ctx, t.URL("/debug/vars"))
}

func fetchVars(ctx context.Context, url string) (map[string]json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	vars := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &vars); err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return vars, nil
}

// Socket is the mysqld unix socket.
func (t *Tablet) Socket() string { return filepath.Join(t.Dir, "mysql.sock") }

// Exec runs SQL on the tablet's mysqld as vt_dba.
func (t *Tablet) Exec(ctx context.Context, query string) (*sqltypes.Result, error) {
	conn, err := mysql.Connect(ctx, &mysql.ConnParams{Uname: "vt_dba", UnixSocket: t.Socket()})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.Socket(), err)
	}
	defer conn.Close()
	res, err := conn.ExecuteFetch(query, 1_000_000, true)
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", query, t.Alias, err)
	}
	return res, nil
}

// ExecAll runs queries in order on one connection (so session settings
// such as sql_log_bin hold for those after them) and stops at the first
// error.
func (t *Tablet) ExecAll(ctx context.Context, queries ...string) error {
	conn, err := mysql.Connect(ctx, &mysql.ConnParams{Uname: "vt_dba", UnixSocket: t.Socket()})
	if err != nil {
		return fmt.Errorf("connect to %s: %w", t.Socket(), err)
	}
	defer conn.Close()
	for _, q := range queries {
		if _, err := conn.ExecuteFetch(q, 1_000_000, false); err != nil {
			return fmt.Errorf("%s on %s: %w", q, t.Alias, err)
		}
	}
	return nil
}

// MakePrimary promotes a lone tablet to a serving primary the way that works on MariaDB with
// Vitess v24: read_only off on its mysqld, then TabletExternallyReparented.
// (PlannedReparentShard fails on MariaDB: see docs/compatibility.md.)
func (t *Tablet) MakePrimary(ctx context.Context) error {
	if _, err := t.Exec(ctx, "SET GLOBAL read_only=OFF"); err != nil {
		return err
	}
	if _, err := t.c.Vtctldclient(ctx, "TabletExternallyReparented", t.Alias); err != nil {
		return err
	}
	if err := t.WaitForType(ctx, "PRIMARY", 2*time.Minute); err != nil {
		return err
	}
	return t.WaitServing(ctx, 2*time.Minute)
}

// StopVttablet stops vttablet only (mysqld keeps running).
func (t *Tablet) StopVttablet() {
	if t.Vttablet != nil {
		t.Vttablet.Stop(30 * time.Second)
	}
}

// Stop stops vttablet and mysqld.
func (t *Tablet) Stop() {
	t.StopVttablet()
	if _, err := os.Stat(t.Dir); err != nil {
		return
	}
	// The pid is read first: mysqld removes its pid file before it has
	// quite exited.
	pid := 0
	if data, err := os.ReadFile(filepath.Join(t.Dir, "mysql.pid")); err == nil {
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := t.mysqlctl(ctx, "shutdown"); err != nil {
		t.c.logf("mysqlctl shutdown of %s: %v", t.Alias, err)
	}
	// mysqld was started (through mysqlctl) for this tablet: make sure it is
	// gone before its directory is touched.
	if pid > 0 && !exited(pid, time.Minute) {
		t.c.logf("mysqld of %s (pid %d) still running after shutdown: killing it", t.Alias, pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		exited(pid, time.Minute)
	}
}

// exited waits up to wait for process pid to be gone (or a zombie: it may
// be nobody's to reap).
func exited(pid int, wait time.Duration) bool {
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if syscall.Kill(pid, 0) != nil || err != nil {
			return true
		}
		// pid (comm) state ...: the state follows the last ')'.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
			return true
		}
	}
	return false
}

// Destroy plays a disaster: stops vttablet and mysqld, deletes the tablet's data directory
// and removes the tablet from the topology (DeleteTablets --allow-primary).
func (t *Tablet) Destroy(ctx context.Context) error {
	t.Stop()
	// mysqld_safe outlives the mysqld it ran by a moment, to write "mysqld
	// ended" into error.log: a removal racing it finds the directory not
	// empty, and is tried again once that last line is written.
	err := os.RemoveAll(t.Dir)
	for i := 0; i < 50 && errors.Is(err, syscall.ENOTEMPTY); i++ {
		time.Sleep(100 * time.Millisecond)
		err = os.RemoveAll(t.Dir)
	}
	if err != nil {
		left, _ := os.ReadDir(t.Dir)
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		return fmt.Errorf("%w (left: %v)", err, names)
	}
	_, err = t.c.Vtctldclient(ctx, "DeleteTablets", "--allow-primary", t.Alias)
	return err
}
