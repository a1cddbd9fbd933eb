package testrestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// server is the throwaway mysqld.
type server struct {
	bin, dir, dataDir string
	mariadb           bool
	// version is the binary's --version; backupVersion the backup's
	// server's (its MANIFEST), "" where not known.
	version, backupVersion string
	runAs                  *user.User
	logger                 logutil.Logger

	cmd    *exec.Cmd
	done   chan struct{}
	output outputTail // what it writes before its error log is open
}

// outputTail keeps the last 4 KiB a process writes.
type outputTail struct {
	mu sync.Mutex
	b  []byte
}

func (o *outputTail) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b = append(o.b, p...)
	if len(o.b) > 4<<10 {
		o.b = o.b[len(o.b)-4<<10:]
	}
	return len(p), nil
}

func (o *outputTail) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b = nil
}

func (o *outputTail) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.TrimSpace(string(o.b))
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
	args := append([]string{"--no-defaults"}, s.placeArgs()...)
	args = append(args,
		"--skip-networking",
		"--skip-grant-tables",
		"--event-scheduler=DISABLED",
		fmt.Sprintf("--innodb-buffer-pool-size=%d", opts.BufferPool),
	)
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
	return append(args, opts.MysqldFlags...), nil
}

// placeArgs are the arguments that place the server's files, all in its
// scratch directory (the socket where its path fits).
func (s *server) placeArgs() []string {
	return []string{
		"--datadir=" + s.dataDir,
		"--socket=" + s.socket(),
		"--pid-file=" + filepath.Join(s.dir, "mysqld.pid"),
		"--log-error=" + s.errorLog(),
		"--tmpdir=" + filepath.Join(s.dir, "tmp"),
	}
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

// notStarted is why a server still starting at the start timeout is no
// proof about the backup: a long crash recovery, or a slow host.
const notStarted = "its mysqld was still starting at the start timeout"

// command is the server binary run with args, as the user the scratch
// directory is for, its output kept.
func (s *server) command(args []string) *exec.Cmd {
	cmd := exec.Command(s.bin, args...)
	// Its own process group: a ^C on the terminal reaches us, and we stop it.
	// Pdeathsig: the throwaway server dies with the process that started
	// it, even a killed one (kill -9 runs no Close).
	// The kernel clears it when a process changes its user, so as root the
	// server is started as the mysql user (not with --user, which would
	// have it switch itself).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if s.runAs != nil {
		uid, _ := strconv.ParseUint(s.runAs.Uid, 10, 32)
		gid, _ := strconv.ParseUint(s.runAs.Gid, 10, 32)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	s.output.reset() // another start's output is not this one's
	cmd.Stdout, cmd.Stderr = &s.output, &s.output
	return cmd
}

// start starts mysqld and waits until it answers on its socket.
func (s *server) start(ctx context.Context, args []string, timeout time.Duration) (*sql.DB, error) {
	cmd := s.command(args)
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
			tail := s.logTail()
			return nil, unreadable.ProgramFailed(fmt.Errorf("mysqld exited while starting (%v); its error log ends:\n%s", cmd.ProcessState, tail),
				cmd.ProcessState, tail)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := os.Stat(c.Addr); err != nil {
			if time.Now().After(deadline) {
				s.stop()
				return nil, unreadable.Host(fmt.Errorf("mysqld did not open its socket within %v; its error log ends:\n%s", timeout, s.logTail()),
					notStarted)
			}
			continue
		}
		connector, err := mysql.NewConnector(c)
		if err != nil {
			s.stop()
			return nil, err
		}
		db := sql.OpenDB(boundedConnector{connector, s})
		if err = db.PingContext(ctx); err == nil {
			return db, nil
		}
		db.Close()
		if time.Now().After(deadline) {
			s.stop()
			return nil, unreadable.Host(fmt.Errorf("mysqld did not answer within %v: %v; its error log ends:\n%s", timeout, err, s.logTail()), notStarted)
		}
	}
}

// lostGrace is how long a failed check waits for the server's exit to
// show: its connections fail a moment before its process is reaped.
const lostGrace = 2 * time.Second

// lost returns err, a failed check of the started server, with why when
// the server is gone: killed from outside (the kernel's OOM killer, an
// operator), its connections failed, which is this host's (no verdict);
// one that ended by itself (a crash on what it read) is the verdict it
// was, its error log's end said. A server still running leaves err as it
// is.
func (s *server) lost(err error) error {
	if err == nil || s.cmd == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err // no check failed: the run was stopped
	}
	select {
	case <-s.done:
	case <-time.After(lostGrace):
		return err
	}
	state, tail := s.cmd.ProcessState, s.logTail()
	return unreadable.ProgramFailed(fmt.Errorf("%w; mysqld exited during the check (%v); its error log ends:\n%s", err, state, tail), state, tail)
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
		return fmt.Sprintf("(no error log: %v); its output:\n%s", err, s.output.String())
	}
	if len(b) > 4<<10 {
		b = b[len(b)-4<<10:]
	}
	return string(b)
}
