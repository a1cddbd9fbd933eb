// Package mariadbtest starts throwaway MariaDB 10.11 servers for tests, loads
// deterministic sample data into them, runs mariabackup against them and
// compares directory trees.
//
// Everything it starts is cleaned up at the end of the test that started it
// (processes are killed by their PID, directories removed). The tests of this
// project run as root in CI: mysqld refuses to run as root, so when the
// effective uid is 0 the server runs with --user=mysql and its directory is
// chowned to that user.
package mariadbtest

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/go/testutil/freeport"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"github.com/vtfifo/vtfifo/go/testutil/tier"
)

// SetupHint is appended to the failure raised when a MariaDB binary is missing.
const SetupHint = "install the MariaDB packages with the project's setup step " +
	"(apt-get install -y mariadb-server mariadb-backup)"

// Binaries the package needs; looked up in PATH and the usual sbin directories.
var (
	installDBBinary = "mariadb-install-db"
	serverBinary    = "mariadbd"
	backupBinary    = "mariabackup"
	mbstreamBinary  = "mbstream"
)

// LookPath finds a MariaDB binary in PATH, /usr/sbin or /usr/bin, or fails the
// test (it never skips) with a hint to run the project's setup step.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	tier.Integration(t, "MariaDB's "+name)
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("mariadbtest: %s not found: %s", name, SetupHint)
	return ""
}

// Option changes how Start configures the server.
type Option func(*config)

type config struct {
	extraArgs      []string
	initArgs       []string // for mariadb-install-db too
	bufferPoolSize string
	startTimeout   time.Duration
	parent         string // where the server's directory is made ("": the temp dir)
}

// WithArgs adds mysqld command line options (e.g. "--innodb-page-size=16k").
func WithArgs(args ...string) Option {
	return func(c *config) { c.extraArgs = append(c.extraArgs, args...) }
}

// WithPageSize makes the server's InnoDB page size size ("4k", "64k"),
// from its creation on.
func WithPageSize(size string) Option {
	return func(c *config) {
		arg := "--innodb-page-size=" + size
		c.extraArgs, c.initArgs = append(c.extraArgs, arg), append(c.initArgs, arg)
	}
}

// WithBufferPoolSize sets --innodb-buffer-pool-size (default "256M").
func WithBufferPoolSize(size string) Option {
	return func(c *config) { c.bufferPoolSize = size }
}

// WithStartTimeout sets how long Start waits for the server to answer (default 90s).
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) { c.startTimeout = d }
}

// WithParentDir makes the server's directory (data dir, socket, logs)
// under dir rather than the temp dir: a file system of the test's own (a
// full disk), without changing $TMPDIR for the rest of the process.
func WithParentDir(dir string) Option {
	return func(c *config) { c.parent = dir }
}

// Server is a running throwaway MariaDB server.
type Server struct {
	// Dir is the server's private directory (data dir, socket, logs).
	Dir string
	// DataDir is the server's --datadir.
	DataDir string
	// Socket is the unix socket path.
	Socket string
	// Port is the TCP port on 127.0.0.1.
	Port int
	// User and Password authenticate over the socket or TCP (root, empty password).
	User, Password string

	t       testing.TB
	cfg     config
	logPath string
	runAs   string // "mysql" when we are root, "" otherwise

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	db   *sql.DB
}

// Start creates a data directory with mariadb-install-db, starts mariadbd on a
// free 127.0.0.1 port and a unix socket, waits until it answers and registers
// cleanup (kill by PID, remove the directory) with t.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	cfg := config{bufferPoolSize: "256M", startTimeout: 90 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	installDB := LookPath(t, installDBBinary)
	LookPath(t, serverBinary)

	// t.TempDir's parents are mode 0700 and owned by root, which the mysql
	// user cannot traverse: use our own directory directly under the temp dir.
	dir, err := os.MkdirTemp(cfg.parent, "mariadbtest-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))

	s := &Server{
		Dir:     dir,
		DataDir: filepath.Join(dir, "data"),
		Socket:  filepath.Join(dir, "mysqld.sock"),
		User:    "root",
		t:       t,
		cfg:     cfg,
		logPath: filepath.Join(dir, "mysqld.err"),
	}
	// A server of its own temporary directory: mariadbd removes the #sql
	// files it finds in its tmpdir when it starts, and in a shared /tmp those
	// are another server's, mid-bootstrap or mid-query.
	require.NoError(t, os.Mkdir(s.DataDir, 0o750))
	require.NoError(t, os.Mkdir(s.tmpDir(), 0o750))
	if os.Geteuid() == 0 {
		// mysqld runs as the mysql user: every parent must be traversable.
		for d := filepath.Dir(dir); d != "/" && d != "."; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			require.NoError(t, err)
			if fi.Mode().Perm()&0o001 == 0 {
				t.Fatalf("mariadbtest: %s (a parent of the server directory) is not traversable by the mysql user; set TMPDIR to a directory under a "+
					"world-traversable path such as /tmp", d)
			}
		}
		s.runAs = "mysql"
		u, err := user.Lookup("mysql")
		require.NoError(t, err, "mariadbtest: running as root needs the 'mysql' system user: %s", SetupHint)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(dir, uid, gid))
		require.NoError(t, os.Chown(s.DataDir, uid, gid))
		require.NoError(t, os.Chown(s.tmpDir(), uid, gid))
	}

	args := []string{"--no-defaults", "--datadir=" + s.DataDir, "--tmpdir=" + s.tmpDir(),
		"--auth-root-authentication-method=normal", "--skip-test-db",
		"--skip-name-resolve"}
	if s.runAs != "" {
		args = append(args, "--user="+s.runAs)
	}
	args = append(args, cfg.initArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, installDB, args...).CombinedOutput()
	require.NoError(t, err, "mariadb-install-db failed:\n%s", out)

	s.Port = freePort(t)
	t.Cleanup(s.Stop)
	s.start()
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Get()
	require.NoError(t, err)
	return p
}

func (s *Server) tmpDir() string { return filepath.Join(s.Dir, "tmp") }

func (s *Server) args() []string {
	args := []string{
		"--no-defaults",
		"--datadir=" + s.DataDir,
		"--tmpdir=" + s.tmpDir(),
		"--socket=" + s.Socket,
		"--port=" + strconv.Itoa(s.Port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(s.Dir, "mysqld.pid"),
		"--log-error=" + s.logPath,
		"--skip-name-resolve",
		"--innodb-buffer-pool-size=" + s.cfg.bufferPoolSize,
		"--innodb-log-file-size=256M",
		// Loading sample data must be fast on 2 shared cores; durability of
		// a throwaway server does not matter.
		"--innodb-flush-log-at-trx-commit=0",
		"--innodb-doublewrite=0",
		"--innodb-flush-method=O_DIRECT",
		"--max-allowed-packet=64M",
	}
	if s.runAs != "" {
		args = append(args, "--user="+s.runAs)
	}
	return append(args, s.cfg.extraArgs...)
}

func (s *Server) start() {
	t := s.t
	t.Helper()
	cmd := exec.Command(LookPath(t, serverBinary), s.args()...)
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	// Own process group, so a ^C on the test does not reach it first and we
	// can kill exactly what we started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(s.cfg.startTimeout)
	for {
		select {
		case <-done:
			t.Fatalf("mariadbd exited during startup (%v): %s\nerror log:\n%s", cmd.ProcessState, stderr.String(), s.ErrorLog())
		default:
		}
		if db, err := sql.Open("mysql", s.DSN("")); err == nil {
			if err = db.Ping(); err == nil {
				s.mu.Lock()
				s.db = db
				s.mu.Unlock()
				return
			}
			_ = db.Close()
		}
		if time.Now().After(deadline) {
			s.kill()
			t.Fatalf("mariadbd did not answer within %v; error log:\n%s", s.cfg.startTimeout, s.ErrorLog())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// DSN returns a go-sql-driver DSN connecting over the unix socket to database
// db ("" for none), with multi statements enabled.
func (s *Server) DSN(db string) string {
	c := mysql.NewConfig()
	c.User = s.User
	c.Passwd = s.Password
	c.Net = "unix"
	c.Addr = s.Socket
	c.DBName = db
	c.MultiStatements = true
	c.InterpolateParams = true
	return c.FormatDSN()
}

// TCPAddr returns "127.0.0.1:port".
func (s *Server) TCPAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// DB returns a shared connection pool to the server (no default database).
func (s *Server) DB() *sql.DB {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		s.t.Fatalf("mariadbtest: server is not running")
	}
	return s.db
}

// Exec runs one or more SQL statements and fails the test on error.
func (s *Server) Exec(t testing.TB, query string, args ...any) {
	t.Helper()
	_, err := s.DB().Exec(query, args...)
	require.NoError(t, err, "query: %s", query)
}

// PID returns the server's process id, or 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// ErrorLog returns the server's error log (for failure messages).
func (s *Server) ErrorLog() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no error log: %v)", err)
	}
	const max = 8 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// Stop shuts the server down (SIGTERM, then SIGKILL after 60s). It is safe to
// call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done, db := s.cmd, s.done, s.db
	s.cmd, s.done, s.db = nil, nil, nil
	s.mu.Unlock()
	if db != nil {
		_ = db.Close()
	}
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (s *Server) kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		<-done
	}
}

// Crash kills the server with SIGKILL, as a power loss would leave its
// files (less what the OS had not written), and starts it again on the same
// port and data: InnoDB's crash recovery runs.
func (s *Server) Crash() {
	s.t.Helper()
	s.mu.Lock()
	db := s.db
	s.db = nil
	s.mu.Unlock()
	if db != nil {
		_ = db.Close()
	}
	s.kill()
	s.start()
}

// Restart stops the server and starts it again on the same port and data.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Query returns the first column of the first row of query as a string.
func (s *Server) Query(t testing.TB, query string, args ...any) string {
	t.Helper()
	var v sql.NullString
	err := s.DB().QueryRow(query, args...).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return ""
	}
	require.NoError(t, err, "query: %s", query)
	return v.String
}
