// Package testrestore proves a fifo backup restorable by starting it: the
// backup restored and prepared into a scratch directory, a throwaway mysqld
// started on it (its own socket, no network, no replication, no events),
// CHECK TABLE and a row count on every table, mysqld stopped and the scratch
// directory removed. The outcome is a Record, which the caller stores beside
// the backup's MANIFEST (vtfifo test-restore, vtbackup
// --fifo-backup-test-restore).
package testrestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"vitess.io/vitess/go/sqlescape"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// RecordName is the name of the verification record beside the MANIFEST.
const RecordName = "verification"

// Outcomes of a Record.
const (
	Passed = "passed"
	Failed = "failed"
)

// Record is what a test restore found: written as JSON beside the backup.
type Record struct {
	Version  int       `json:"version"`
	Backup   string    `json:"backup"`
	Outcome  string    `json:"outcome"`
	Error    string    `json:"error,omitempty"`
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
	Host     string    `json:"host,omitempty"`
	// Tool prepared the files; Server is the throwaway mysqld's VERSION().
	Tool   string `json:"tool,omitempty"`
	Server string `json:"server,omitempty"`
	// Bytes restored; Tables checked with CHECK TABLE (Uncheckable: their
	// engine has no CHECK, counted only); Rows counted in all of them.
	Bytes        int64    `json:"bytes"`
	Tables       int      `json:"tables"`
	Uncheckable  int      `json:"uncheckable,omitempty"`
	TablesFailed []string `json:"tables_failed,omitempty"`
	Rows         int64    `json:"rows"`
}

// ParseRecord reads a stored record.
func ParseRecord(doc []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(doc, &r); err != nil {
		return r, fmt.Errorf("verification record: %w", err)
	}
	if r.Version != 1 || (r.Outcome != Passed && r.Outcome != Failed) {
		return r, fmt.Errorf("verification record: unknown version %d or outcome %q", r.Version, r.Outcome)
	}
	return r, nil
}

// Summary is the record in a few words, as `vtfifo ls` shows it.
func (r Record) Summary() string {
	s := fmt.Sprintf("%s %s", r.Outcome, r.Started.UTC().Format("2006-01-02T15:04Z"))
	if r.Outcome == Passed {
		return s + fmt.Sprintf(" (%d tables, %d rows)", r.Tables, r.Rows)
	}
	return s
}

// Options configures Run.
type Options struct {
	// Restore configures the restore; it always prepares.
	Restore fifobackupengine.RestoreDirOptions
	// ScratchParent holds the scratch directory (default: os.TempDir()). It
	// needs room for the whole restored backup.
	ScratchParent string
	// MysqldPath is the server binary; empty looks for mysqld, then mariadbd,
	// under $VT_MYSQL_ROOT, in PATH and in /usr/sbin.
	MysqldPath string
	// MysqldFlags are added to the throwaway mysqld's command line (e.g.
	// --lower-case-table-names=1, which MySQL 8 needs as it was at initialize).
	MysqldFlags []string
	// BufferPool is the throwaway mysqld's --innodb-buffer-pool-size.
	BufferPool int64
	// StartTimeout bounds mysqld's start (crash recovery included).
	StartTimeout time.Duration
	// CheckConcurrency is how many tables are checked at once.
	CheckConcurrency int
	// Inspect, if set, is called with the throwaway server once its tables
	// are checked (vtfifo selftest compares them with their source); its
	// error fails the test restore.
	Inspect func(ctx context.Context, db *sql.DB) error
	// OnPhase, if set, is called as each phase begins: the restore's
	// (Restore.OnPhase: download, prepare), then PhaseStart (the throwaway
	// mysqld) and PhaseCheck (CHECK TABLE and the row counts).
	OnPhase func(phase string)
	Logger  logutil.Logger
}

// The phases of a test restore after those of the restore.
const (
	PhaseStart = "start"
	PhaseCheck = "check"
)

// Run test-restores bh and returns its record. A failed check is a record
// with Outcome Failed (and a nil error). The error is for a run that reached
// no verdict on the backup, so that nothing is recorded: no server binary,
// one of another flavor than the backup's, ctx cancelled, no scratch
// directory, and a restore that failed because something could not be
// read, reached or accessed (go/internal/unreadable: a part it may not
// read, a timeout, this host lacking the backup's encryption keys). The scratch
// directory is removed and mysqld stopped before Run returns, whatever
// happened.
func Run(ctx context.Context, bh backupstorage.BackupHandle, opts Options) (Record, error) {
	if opts.Logger == nil {
		opts.Logger = logutil.NewConsoleLogger()
	}
	if opts.BufferPool <= 0 {
		opts.BufferPool = 128 << 20
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 15 * time.Minute
	}
	if opts.CheckConcurrency <= 0 {
		opts.CheckConcurrency = 4
	}
	rec := Record{Version: 1, Backup: bh.Directory() + "/" + bh.Name(), Started: time.Now().UTC()}
	rec.Host, _ = os.Hostname()
	srv, err := serverFor(ctx, bh, opts.MysqldPath)
	if err != nil {
		return rec, fmt.Errorf("test restore of %s: %w", rec.Backup, err)
	}
	err = run(ctx, bh, opts, srv, &rec)
	rec.Duration = time.Since(rec.Started).Round(time.Second).String()
	if ctx.Err() != nil {
		return rec, fmt.Errorf("test restore of %s interrupted: %w", rec.Backup, ctx.Err())
	}
	if errors.Is(err, errCouldNotRun) {
		return rec, fmt.Errorf("test restore of %s could not run, nothing is recorded: %w", rec.Backup, err)
	}
	rec.Outcome = Passed
	if err != nil {
		rec.Outcome, rec.Error = Failed, err.Error()
	}
	return rec, nil
}

// errCouldNotRun marks a run that reached no verdict on the backup.
var errCouldNotRun = errors.New("no verdict on the backup")

func couldNotRun(err error) error { return fmt.Errorf("%w (%w)", err, errCouldNotRun) }

// serverFor finds the server binary that can start bh: of the backup's
// flavor (MariaDB or MySQL).
func serverFor(ctx context.Context, bh backupstorage.BackupHandle, path string) (*server, error) {
	mysqld, err := mysqlinstall.FindMysqld(path)
	if err != nil {
		return nil, err
	}
	version, mariadb, err := mysqlinstall.ServerVersion(ctx, mysqld)
	if err != nil {
		return nil, err
	}
	m, err := fifobackupengine.ReadManifest(ctx, bh)
	if err != nil {
		return nil, err
	}
	// The data's flavor: the server it was taken from (a stand-in presents
	// mariabackup's data as Percona's).
	if want := strings.Contains(m.MySQLVersion, "MariaDB") || m.ToolFlavor == fifobackupengine.FlavorMariabackup; want != mariadb {
		return nil, fmt.Errorf("the backup was taken with %s from %s, but %s is %s: give a server of its flavor", m.ToolFlavor, m.MySQLVersion, mysqld, version)
	}
	return &server{bin: mysqld, mariadb: mariadb}, nil
}

func run(ctx context.Context, bh backupstorage.BackupHandle, opts Options, srv *server, rec *Record) error {
	logger := opts.Logger
	parent := opts.ScratchParent
	if parent == "" {
		parent = os.TempDir()
	}
	scratch, err := os.MkdirTemp(parent, "vtfifo-test-restore-")
	if err != nil {
		return couldNotRun(fmt.Errorf("cannot create the scratch directory: %w", err))
	}
	defer func() {
		if err := os.RemoveAll(scratch); err != nil {
			logger.Warningf("test restore: cannot remove %s: %v", scratch, err)
		}
	}()
	runAs, err := mysqlinstall.ServerUser(scratch)
	if err != nil {
		return err
	}
	dataDir := filepath.Join(scratch, "data")
	ro := opts.Restore
	ro.Prepare = true
	ro.CheckTables = true // where the tool has it: the structure, before mysqld checks the tables
	if ro.Logger == nil {
		ro.Logger = logger
	}
	phase := func(string) {}
	if opts.OnPhase != nil {
		phase = opts.OnPhase
		ro.OnPhase = phase
	}
	logger.Infof("test restore: restoring %s into %s", rec.Backup, dataDir)
	rep, err := fifobackupengine.RestoreToDir(ctx, bh, dataDir, ro)
	if unreadable.Is(err) {
		return couldNotRun(err)
	}
	if err != nil {
		return err
	}
	rec.Tool, rec.Bytes = rep.Tool, rep.Bytes
	if err := os.Mkdir(filepath.Join(scratch, "tmp"), 0o750); err != nil {
		return err
	}
	if runAs != nil {
		if err := mysqlinstall.ChownTree(scratch, runAs); err != nil {
			return err
		}
	}
	srv.dir, srv.dataDir, srv.runAs, srv.logger = scratch, dataDir, runAs, logger
	args, err := srv.args(opts)
	if err != nil {
		return err
	}
	logger.Infof("test restore: starting %s on %s (socket only, no replication, no events)", srv.bin, dataDir)
	phase(PhaseStart)
	db, err := srv.start(ctx, args, opts.StartTimeout)
	if err != nil {
		return err
	}
	defer srv.stop()
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&rec.Server); err != nil {
		return fmt.Errorf("SELECT VERSION(): %w", err)
	}
	phase(PhaseCheck)
	if err := checkTables(ctx, db, opts.CheckConcurrency, rec, logger); err != nil {
		return err
	}
	if err := checkPresent(ctx, db, dataDir, srv.mariadb); err != nil || opts.Inspect == nil {
		return err
	}
	return opts.Inspect(ctx, db)
}

// server is the throwaway mysqld.
type server struct {
	bin, dir, dataDir string
	mariadb           bool
	runAs             *user.User
	logger            logutil.Logger

	cmd  *exec.Cmd
	done chan struct{}
}

// socket is the throwaway server's socket: in its scratch directory, or,
// where that path is too long for a Unix socket (108 bytes with its NUL; a
// deep --scratch-dir), a name in the system's temp dir derived from the
// scratch directory, which is unique.
func (s *server) socket() string {
	p := filepath.Join(s.dir, "mysqld.sock")
	if len(p) < maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(s.dir))
	return filepath.Join(os.TempDir(), fmt.Sprintf("vtfifo-%x.sock", sum[:8]))
}

// maxSocketPath is the longest socket path the servers take (sun_path less
// its NUL: MariaDB refuses more than 107).
const maxSocketPath = 107

func (s *server) errorLog() string { return filepath.Join(s.dir, "mysqld.err") }

// args is the command line: nothing read from the host's option files;
// the InnoDB geometry from the backup's backup-my.cnf; no listener but the
// socket, no grants, no replica threads, no events, no binary log.
func (s *server) args(opts Options) ([]string, error) {
	args := []string{
		"--no-defaults",
		"--datadir=" + s.dataDir,
		"--socket=" + s.socket(),
		"--pid-file=" + filepath.Join(s.dir, "mysqld.pid"),
		"--log-error=" + s.errorLog(),
		"--tmpdir=" + filepath.Join(s.dir, "tmp"),
		"--skip-networking",
		"--skip-grant-tables",
		"--event-scheduler=DISABLED",
		fmt.Sprintf("--innodb-buffer-pool-size=%d", opts.BufferPool),
	}
	keep := []string{"innodb_page_size", "innodb_data_file_path"}
	if s.mariadb {
		args = append(args, "--skip-slave-start")
		keep = append(keep, "innodb_undo_tablespaces")
	} else {
		args = append(args, "--skip-replica-start", "--skip-log-bin", "--mysqlx=OFF")
	}
	cnf, err := readBackupCnf(filepath.Join(s.dataDir, "backup-my.cnf"))
	if err != nil {
		return nil, err
	}
	for _, k := range keep {
		if v, ok := cnf[k]; ok {
			args = append(args, "--"+strings.ReplaceAll(k, "_", "-")+"="+v)
		}
	}
	// The backup's encryption plugin with the restoring host's keys
	// (Restore.DefaultsFile), as its prepare read them.
	keys, err := fifobackupengine.KeySettings(filepath.Join(s.dataDir, "backup-my.cnf"), opts.Restore.DefaultsFile)
	if err != nil {
		return nil, err
	}
	if s.mariadb && len(keys) > 0 {
		// An option file, not arguments: the plugin's variables may hold
		// a key (file_key_management_filekey), which /proc shows in argv.
		p := filepath.Join(s.dir, "encryption.cnf")
		if err := os.WriteFile(p, []byte("[mysqld]\n"+strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
		if s.runAs != nil {
			if err := mysqlinstall.ChownTree(p, s.runAs); err != nil {
				return nil, err
			}
		}
		args[0] = "--defaults-file=" + p
	}
	if s.runAs != nil {
		args = append(args, "--user="+s.runAs.Username)
	}
	return append(args, opts.MysqldFlags...), nil
}

// readBackupCnf reads the [mysqld] options of the tool's backup-my.cnf.
func readBackupCnf(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the prepared backup has no readable backup-my.cnf: %w", err)
	}
	out := map[string]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[':
			section = strings.Trim(line, "[] ")
		case section == "mysqld":
			k, v, _ := strings.Cut(line, "=")
			out[strings.ReplaceAll(strings.TrimSpace(k), "-", "_")] = strings.TrimSpace(v)
		}
	}
	return out, nil
}

// start starts mysqld and waits until it answers on its socket.
func (s *server) start(ctx context.Context, args []string, timeout time.Duration) (*sql.DB, error) {
	cmd := exec.Command(s.bin, args...)
	// Its own process group: a ^C on the terminal reaches us, and we stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", s.bin, err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.done) }()

	c := mysql.NewConfig()
	c.User, c.Net, c.Addr = "root", "unix", s.socket()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("mysqld exited while starting (%v); its error log ends:\n%s", cmd.ProcessState, s.logTail())
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := os.Stat(c.Addr); err != nil {
			if time.Now().After(deadline) {
				s.stop()
				return nil, fmt.Errorf("mysqld did not open its socket within %v; its error log ends:\n%s", timeout, s.logTail())
			}
			continue
		}
		db, err := sql.Open("mysql", c.FormatDSN())
		if err != nil {
			s.stop()
			return nil, err
		}
		if err = db.PingContext(ctx); err == nil {
			return db, nil
		}
		db.Close()
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("mysqld did not answer within %v: %v; its error log ends:\n%s", timeout, err, s.logTail())
		}
	}
}

// stop shuts mysqld down (SIGTERM: a clean shutdown), killing it after 5 minutes.
func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Minute):
		s.logger.Warningf("test restore: mysqld did not stop within 5m of SIGTERM: killing it")
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	if sock := s.socket(); !strings.HasPrefix(sock, s.dir+string(filepath.Separator)) {
		os.Remove(sock) // outside the scratch directory: a killed server leaves it
	}
}

func (s *server) logTail() string {
	b, err := os.ReadFile(s.errorLog())
	if err != nil {
		return fmt.Sprintf("(no error log: %v)", err)
	}
	if len(b) > 4<<10 {
		b = b[len(b)-4<<10:]
	}
	return string(b)
}

// checkTables runs CHECK TABLE and counts the rows of every table.
func checkTables(ctx context.Context, db *sql.DB, workers int, rec *Record, logger logutil.Logger) error {
	rows, err := db.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "+
		"WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') AND TABLE_SCHEMA NOT IN ('information_schema', 'performance_schema') "+
		"ORDER BY TABLE_SCHEMA, TABLE_NAME")
	if err != nil {
		return fmt.Errorf("listing the tables: %w", err)
	}
	var tables []string
	for rows.Next() {
		var schema, name string
		if err := rows.Scan(&schema, &name); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, sqlescape.EscapeID(schema)+"."+sqlescape.EscapeID(name))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("listing the tables: %w", err)
	}
	logger.Infof("test restore: checking %d tables", len(tables))

	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	ch := make(chan string)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				ok, checked, n, err := checkTable(ctx, db, t)
				mu.Lock()
				switch {
				case err != nil:
					rec.TablesFailed = append(rec.TablesFailed, err.Error())
				case !ok:
					rec.TablesFailed = append(rec.TablesFailed, t)
				}
				rec.Tables++
				if !checked {
					rec.Uncheckable++
				}
				rec.Rows += n
				mu.Unlock()
			}
		}()
	}
	for _, t := range tables {
		select {
		case ch <- t:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(ch)
	wg.Wait()
	sort.Strings(rec.TablesFailed)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case len(rec.TablesFailed) > 0:
		return fmt.Errorf("CHECK TABLE failed on %d of %d tables: %s", len(rec.TablesFailed), len(tables), strings.Join(first(rec.TablesFailed, 10), ", "))
	case len(tables) == 0:
		return errors.New("the restored server has no table at all")
	}
	return nil
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// checkTable runs CHECK TABLE (ok: no error and a final status OK; checked:
// the engine supports it) and counts the table's rows.
func checkTable(ctx context.Context, db *sql.DB, table string) (ok, checked bool, n int64, err error) {
	rows, err := db.QueryContext(ctx, "CHECK TABLE "+table)
	if err != nil {
		return false, false, 0, fmt.Errorf("CHECK TABLE %s: %w", table, err)
	}
	ok, checked = true, true
	status := ""
	for rows.Next() {
		var tbl, op, typ, text sql.NullString
		if err := rows.Scan(&tbl, &op, &typ, &text); err != nil {
			rows.Close()
			return false, false, 0, fmt.Errorf("CHECK TABLE %s: %w", table, err)
		}
		switch strings.ToLower(typ.String) {
		case "error":
			ok = false
		case "note":
			if strings.Contains(text.String, "doesn't support check") {
				checked = false
			}
		case "status":
			status = text.String
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, false, 0, fmt.Errorf("CHECK TABLE %s: %w", table, err)
	}
	if checked && status != "OK" && status != "Table is already up to date" {
		ok = false
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		return false, checked, 0, fmt.Errorf("counting the rows of %s: %w", table, err)
	}
	return ok, checked, n, nil
}
