// Package selftest proves the fifo engine and the split storage on the host
// it runs on, with no Vitess cluster and no network (vtfifo selftest): a
// scratch server laid out as a tablet's, a shaped data set written to while
// it is backed up (a full backup, then two incremental ones) through the real
// engine into a split storage, then every backup verified, the chain
// restored, prepared and started, every table compared with its source, one
// table restored into the scratch server, and the stream extracted with the
// tool's own extractor. Each step is timed and reported; what the host cannot
// run is skipped with the reason.
package selftest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"vitess.io/vitess/go/vt/dbconfigs"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/servenv"

	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/vtversion"
)

// Options configures Run.
type Options struct {
	// WorkDir holds the scratch directory (default: the system's temp dir).
	WorkDir string
	// ToolPath is the backup tool (default: xtrabackup, then mariabackup, in PATH).
	ToolPath string
	// MysqldPath is the server binary (default: as test-restore finds it).
	MysqldPath string
	// Scale is the number of small tables (default 200).
	Scale int
	// Lanes is the engine's lanes (default 4).
	Lanes int
	// HostCnf is the host's server option file whose settings that shape
	// the files the scratch server takes (hostSettings); "" takes none.
	HostCnf string
	// Storage is where the backups go (a scratch bucket, say); nil keeps
	// them in the scratch directory. The run's backups get a shard of their
	// own there, and are removed at the end unless Keep.
	Storage *splitstorage.Config
	// Keep leaves the scratch directory (server stopped) and the backups
	// for a bug report.
	Keep   bool
	Logger logutil.Logger
	// AfterBackups, if set, is called with the storage once the backups
	// are taken (tests damage a part there).
	AfterBackups func(storage splitstorage.Config) error
}

// Step statuses.
const (
	Passed  = "passed"
	Failed  = "failed"
	Skipped = "skipped"
)

// Step is one step of the self-test.
type Step struct {
	Name    string  `json:"name"`
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
	Detail  string  `json:"detail,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// Report is what a self-test found: the thing an operator attaches to a bug.
type Report struct {
	Versions   map[string]string `json:"versions"`
	Host       map[string]string `json:"host"`
	Steps      []Step            `json:"steps"`
	Passed     bool              `json:"passed"`
	FirstError string            `json:"first_error,omitempty"`
	// HostFault says why the failure was this host's (its disk full, out of
	// memory or open files, a program it cannot start), not the product's.
	HostFault string `json:"host_fault,omitempty"`
	Kept      string `json:"kept,omitempty"`
}

// Run runs the self-test and returns its report; Passed only when every
// step that ran passed. Everything it started is stopped before it returns,
// and its scratch directory removed unless Keep.
func Run(ctx context.Context, opts Options) Report {
	if opts.Logger == nil {
		opts.Logger = logutil.NewConsoleLogger()
	}
	opts.Scale = cmp.Or(opts.Scale, 200)
	opts.Lanes = cmp.Or(opts.Lanes, 4)
	r := &runner{ctx: ctx, opts: opts, rep: Report{Versions: buildVersions(), Host: hostFacts()}}
	defer keepProcessState()()
	r.run()
	r.rep.Passed = r.rep.FirstError == ""
	return r.rep
}

// runner carries the state the steps share.
type runner struct {
	ctx    context.Context
	opts   Options
	rep    Report
	failed bool

	tool    fifobackupengine.ToolInfo
	mysqld  string
	mariadb bool
	scratch string
	unclaim func() // removes the scratch directory's owner record
	shard   string // this run's, so its backups stand apart in any storage
	srv     *scratchServer
	keyring *keyring
	// keyringSkip says why no table is encrypted.
	keyringSkip string
	store       *store
	sums        map[string]string // the source at the last backup's position
}

// step runs one step unless an earlier one failed.
func (r *runner) step(name string, fn func() (string, error)) bool {
	if r.failed {
		r.skip(name, "an earlier step failed")
		return false
	}
	r.opts.Logger.Infof("selftest: %s", name)
	start := time.Now()
	detail, err := fn()
	s := Step{Name: name, Status: Passed, Seconds: time.Since(start).Seconds(), Detail: detail}
	if err != nil {
		s.Status, s.Error = Failed, err.Error()
		// This host running out of something (its disk, memory, open files)
		// is said first: the product did not fail, the host could not run it.
		if why := cmp.Or(unreadable.HostFault(err), unreadable.InOutput(err.Error())); why != "" {
			s.Error = "this host could not finish it (" + why + "): " + s.Error
			r.rep.HostFault = cmp.Or(r.rep.HostFault, why)
		}
		r.failed = true
		if r.rep.FirstError == "" {
			r.rep.FirstError = name + ": " + s.Error
		}
	}
	r.rep.Steps = append(r.rep.Steps, s)
	return err == nil
}

func (r *runner) skip(name, reason string) {
	r.rep.Steps = append(r.rep.Steps, Step{Name: name, Status: Skipped, Detail: reason})
}

func (r *runner) run() {
	defer r.cleanUp()
	r.step("find the backup tool", r.findTool)
	r.step("find the server", r.findServer)
	r.step("start a scratch server", r.startServer)
	r.step("load the data set", r.load)
	if r.keyringSkip != "" {
		r.skip("an encrypted table", r.keyringSkip)
	}
	r.backups()
	if r.opts.AfterBackups != nil && !r.failed {
		r.step("test hook after the backups", func() (string, error) { return "", r.opts.AfterBackups(r.store.cfg) })
	}
	r.step("verify every backup", r.verify)
	r.step("restore the chain, prepare, start and compare every table", r.restoreAndCompare)
	r.step("restore one table into the scratch server", r.restoreTable)
	if !r.failed && r.tool.Extractor == "" {
		r.skip("export and extract with the tool's extractor", "neither xbstream nor mbstream was found beside the tool or in PATH")
	} else {
		r.step("export and extract with the tool's extractor", r.exportAndExtract)
	}
}

func (r *runner) findTool() (string, error) {
	info, err := fifobackupengine.DescribeTool(r.ctx, fifobackupengine.Config{ToolPath: r.opts.ToolPath})
	if err != nil {
		return "", err
	}
	r.tool = info
	r.rep.Versions["tool"] = info.Version
	return fmt.Sprintf("%s (%s), FIFO streams: %t, --check-tables: %t, extractor: %s", info.Path, info.Flavor, info.FIFOStreams, info.CheckTables,
		cmp.Or(info.Extractor, "none")), nil
}

func (r *runner) findServer() (string, error) {
	bin, err := mysqlinstall.FindMysqld(r.opts.MysqldPath)
	if err != nil {
		return "", err
	}
	version, mariadb, err := mysqlinstall.ServerVersion(r.ctx, bin)
	if err != nil {
		return "", err
	}
	if want := r.tool.Flavor == fifobackupengine.FlavorMariabackup; want != mariadb && !strings.Contains(r.tool.Version, "stand-in") {
		return "", fmt.Errorf("the tool is %s but the server is %s: give a server and a tool of one flavor", r.tool.Flavor, version)
	}
	if r.opts.MysqldPath != "" && os.Getenv("VT_MYSQL_ROOT") == "" {
		// Vitess's mysqlctl finds the server under $VT_MYSQL_ROOT.
		os.Setenv("VT_MYSQL_ROOT", filepath.Dir(filepath.Dir(bin)))
	}
	r.mysqld, r.mariadb = bin, mariadb
	r.rep.Versions["server"] = version
	return bin, nil
}

func (r *runner) startServer() (string, error) {
	parent := cmp.Or(r.opts.WorkDir, os.TempDir())
	fifobackupengine.SweepStale(parent, scratchPrefix, removeDeadScratch, r.opts.Logger)
	dir, unclaim, err := fifobackupengine.MkdirClaimed(parent, scratchPrefix)
	if err != nil {
		return "", err
	}
	r.scratch, r.unclaim = dir, unclaim
	lines, taken, err := hostSettings(r.opts.HostCnf)
	if err != nil {
		return "", err
	}
	kr, why, err := planKeyring(r.opts.HostCnf, r.mysqld, dir, r.mariadb)
	if err != nil {
		return "", err
	}
	if kr != nil {
		r.keyring, lines = kr, lines+kr.mysqldLines
		taken = strings.TrimPrefix(taken+", a keyring of its kind ("+kr.kind+")", ", ")
	} else {
		r.keyringSkip = why
	}
	r.srv, err = startScratchServer(r.ctx, dir, lines)
	if err != nil {
		return "", err
	}
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root, cfg.PartSize = filepath.Join(dir, "storage"), 32<<20
	if r.opts.Storage != nil {
		cfg = *r.opts.Storage
	}
	r.shard = fmt.Sprintf("%s-%08x", time.Now().UTC().Format("20060102T150405"), rand.Uint32())
	if r.store, err = openStore(cfg, r.shard); err != nil {
		return "", fmt.Errorf("the storage %s: %w", cfg.Location(), err)
	}
	return fmt.Sprintf("%s, socket %s, %s; from the host's option file: %s; backups into %s, %s", r.srv.cnf.DataDir, r.srv.cnf.SocketFile,
		r.srv.reach(), cmp.Or(taken, "nothing"), cfg.Location(), r.store.dir), nil
}

// hostSettings are the settings of the host's server that change the files
// a backup carries and a restore lays out, which the scratch server takes
// from the host's option file (paths are not taken: the scratch server has
// its own directories).
func hostSettings(path string) (lines, taken string, err error) {
	if path == "" {
		return "", "", nil
	}
	names := []string{"innodb_page_size", "innodb_undo_tablespaces", "innodb_file_per_table", "innodb_checksum_algorithm", "lower_case_table_names",
		"innodb_log_file_size", "innodb_redo_log_capacity"}
	vals, err := fifobackupengine.ServerOptions(path, names...)
	if err != nil {
		return "", "", err
	}
	var l, t []string
	for _, n := range names {
		if v, ok := vals[n]; ok && v != "" {
			l = append(l, n+"="+v)
			t = append(t, n+"="+v)
		}
	}
	if len(l) == 0 {
		return "", "", nil
	}
	return strings.Join(l, "\n") + "\n", strings.Join(t, ", "), nil
}

func (r *runner) load() (string, error) {
	sh := shape{scale: r.opts.Scale, mariadb: r.mariadb, externalDir: r.srv.external}
	if r.keyring != nil {
		sh.encryption = r.keyring.tableOption
	}
	return loadData(r.ctx, r.srv.db, sh)
}

// cleanUp stops the server and removes the scratch directory (unless Keep).
func (r *runner) cleanUp() {
	var running error // the scratch server's processes still there
	if r.srv != nil {
		running = r.srv.stop(r.opts.Logger)
	}
	if r.store != nil {
		r.removeBackups()
		r.store.close()
	}
	if r.scratch == "" {
		return
	}
	if r.opts.Keep {
		// Kept with its server stopped: mysqld_safe's last lines too; and
		// unclaimed, so that no later run sweeps it.
		waitProcessesGone(r.scratch, 30*time.Second)
		r.rep.Kept = r.scratch
		r.unclaim()
		return
	}
	if running != nil {
		r.opts.Logger.Warningf("selftest: %v: %s is left as it is (the next self-test under %s stops and removes it)", running, r.scratch,
			filepath.Dir(r.scratch))
		return
	}
	if err := removeScratch(r.scratch, 30*time.Second); err != nil {
		r.opts.Logger.Warningf("selftest: cannot remove %s: %v", r.scratch, err)
		return
	}
	r.unclaim()
}

// removeScratch removes dir once no process started on it is left: mysqld's
// shutdown returns when its pid file is gone, and mysqld_safe, which
// started it, still writes its last lines into the directory after that (on
// a busy host, "directory not empty" half a second later). A process counts
// as started on dir when its command line names it (/proc; elsewhere none
// is seen). Removal is retried until timeout.
func removeScratch(dir string, timeout time.Duration) error {
	deadline := waitProcessesGone(dir, timeout)
	if n := processesUnder(dir); n > 0 {
		return fmt.Errorf("%d processes still run on it: it is left as it is", n)
	}
	for {
		err := os.RemoveAll(dir)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitProcessesGone waits, at most timeout, until no process started on
// dir is left (processesUnder), and returns the timeout's deadline.
func waitProcessesGone(dir string, timeout time.Duration) time.Time {
	deadline := time.Now().Add(timeout)
	for processesUnder(dir) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	return deadline
}

// processesUnder counts the processes whose command line names dir.
func processesUnder(dir string) int {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	n := 0
	for _, c := range cmdlines {
		b, err := os.ReadFile(c)
		if err == nil && strings.Contains(string(b), dir) && filepath.Base(filepath.Dir(c)) != strconv.Itoa(os.Getpid()) {
			n++
		}
	}
	return n
}

// removeBackups removes the run's backups from a storage the operator
// named (the scratch directory's goes with it), as a step of its own: a
// failure leaves objects in their storage, which they must hear of.
func (r *runner) removeBackups() {
	if r.opts.Storage == nil {
		return
	}
	name := "remove the self-test's backups from " + r.store.cfg.Location()
	if r.opts.Keep {
		r.skip(name, "kept for a bug report (--keep) in "+r.store.dir)
		return
	}
	start := time.Now()
	n, err := r.store.removeAll(context.WithoutCancel(r.ctx))
	s := Step{Name: name, Status: Passed, Seconds: time.Since(start).Seconds(),
		Detail: fmt.Sprintf("%d backups removed from %s", n, r.store.dir)}
	if err != nil {
		s.Status, s.Error = Failed, err.Error()
		if r.rep.FirstError == "" {
			r.rep.FirstError = s.Name + ": " + err.Error()
		}
	}
	r.rep.Steps = append(r.rep.Steps, s)
}

// keepProcessState saves what the self-test sets for Vitess's mysqlctl (its
// environment variables, the DBA socket) and returns the function that puts
// it back, so the process that ran it goes on as before.
func keepProcessState() (restore func()) {
	vars := []string{"VTDATAROOT", "EXTRA_MY_CNF", "VT_MYSQL_ROOT"}
	saved := make(map[string]*string, len(vars))
	for _, v := range vars {
		if val, ok := os.LookupEnv(v); ok {
			saved[v] = &val
		} else {
			saved[v] = nil
		}
	}
	socket := dbconfigs.GlobalDBConfigs.Socket
	return func() {
		for v, val := range saved {
			if val == nil {
				os.Unsetenv(v)
			} else {
				os.Setenv(v, *val)
			}
		}
		dbconfigs.GlobalDBConfigs.Socket = socket
	}
}

func buildVersions() map[string]string {
	// Vitess's own version constant, as its binaries' --version print it.
	v := map[string]string{"plugin": "(devel)", "vitess": servenv.AppVersion.ToStringMap()["version"], "vitess module": vtversion.Module(),
		"go": runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v["plugin"] = bi.Main.Version
	}
	return v
}

func hostFacts() map[string]string {
	h := map[string]string{"cpus": fmt.Sprint(runtime.NumCPU()), "os": runtime.GOOS + "/" + runtime.GOARCH}
	h["hostname"], _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h["kernel"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if line, _, ok := strings.Cut(string(b), "\n"); ok {
			h["memory"] = strings.Join(strings.Fields(strings.TrimPrefix(line, "MemTotal:")), " ")
		}
	}
	return h
}

// keyspace of the self-test's backups.
const keyspace = "vtfifo-selftest"
