package selftest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	vtconfig "vitess.io/vitess/config"
	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/vt/dbconfigs"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/internal/vtusers"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// scratchServer is a server laid out and initialised as a Vitess tablet's
// (mysqlctl: its my.cnf, directories and init SQL), under its own root and
// socket, with no TCP port: the engine backs it up as it would a tablet's.
type scratchServer struct {
	root     string
	external string // where the DATA DIRECTORY table lives
	uid      uint32
	mysqld   *mysqlctl.Mysqld
	cnf      *mysqlctl.Mycnf
	db       *sql.DB
}

// startScratchServer initialises and starts the server under root. As root
// it runs as the mysql user (mysqld refuses root). mysqldLines are added to
// its my.cnf's [mysqld].
func startScratchServer(ctx context.Context, root, mysqldLines string) (*scratchServer, error) {
	if err := os.Chmod(root, 0o755); err != nil {
		return nil, err
	}
	// mysqlctl reads both from the environment.
	os.Setenv("VTDATAROOT", root)
	// MySQL 8 opens a DATA DIRECTORY only under innodb_directories.
	external := filepath.Join(root, "external")
	if err := os.Mkdir(external, 0o750); err != nil {
		return nil, err
	}
	// No TCP port at all: the self-test reaches the server by its socket,
	// nothing else on the host can reach it, and no port can clash with the
	// host's own servers. MySQL 8's X Plugin (port 33060) is off with
	// mysqlx=0 (MySQL 8.0/8.4 manual, 22.5.2 "Disabling X Plugin"; not run
	// here); MariaDB has no such option, hence loose-.
	extra := "[mysqld]\ninnodb_buffer_pool_size=128M\nskip-networking\nloose-mysqlx=0\nloose-innodb_directories=" + external + "\n" + mysqldLines
	owner, err := mysqlinstall.ServerUser(root)
	if err != nil {
		return nil, err
	}
	if owner != nil {
		extra += "user=" + owner.Username + "\n"
	}
	extraCnf := filepath.Join(root, "extra.cnf")
	if err := os.WriteFile(extraCnf, []byte(extra), 0o644); err != nil {
		return nil, err
	}
	os.Setenv("EXTRA_MY_CNF", extraCnf)
	vtusers.UseDefaults()

	s := &scratchServer{root: root, external: external, uid: uint32(100 + rand.IntN(9000))}
	socket := filepath.Join(root, fmt.Sprintf("vt_%010d", s.uid), "mysql.sock")
	dbconfigs.GlobalDBConfigs.Socket = socket
	if s.mysqld, s.cnf, err = mysqlctl.CreateMysqldAndMycnf(s.uid, socket, 0, collations.MySQL8()); err != nil {
		return nil, err
	}
	if err := s.mysqld.InitConfig(s.cnf); err != nil {
		return nil, err
	}
	if owner != nil {
		if err := mysqlinstall.ChownTree(root, owner); err != nil {
			return nil, err
		}
	}
	initFile, err := writeInitSQL(ctx, root)
	if err != nil {
		return nil, err
	}
	if err := s.mysqld.Init(ctx, s.cnf, initFile); err != nil {
		return s, fmt.Errorf("initialising the scratch server: %w; its log ends:\n%s", err, s.errorLog())
	}
	return s, s.connect()
}

// connect opens the DBA pool over the socket.
func (s *scratchServer) connect() error {
	if s.db != nil {
		s.db.Close()
	}
	c := mysql.NewConfig()
	c.User, c.Passwd = dbconfigs.GlobalDBConfigs.Dba.User, dbconfigs.GlobalDBConfigs.Dba.Password
	c.Net, c.Addr = "unix", s.cnf.SocketFile
	c.MultiStatements, c.InterpolateParams = true, true
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		return err
	}
	s.db = db
	return db.Ping()
}

// reach says how the server can be reached besides its socket, as it says
// itself: "no TCP port" when it listens on none, as it is configured to.
func (s *scratchServer) reach() string {
	var off int
	if err := s.db.QueryRow("SELECT @@skip_networking").Scan(&off); err != nil {
		return fmt.Sprintf("TCP unknown (%v)", err)
	}
	if off != 1 {
		return fmt.Sprintf("TCP port %d", s.cnf.MysqlPort)
	}
	return "no TCP port"
}

// stop shuts the server down and returns once none of its processes is
// left: through Vitess's shutdown, waiting as a tablet's restore waits
// (fifobackupengine.StopMysqld: an interrupted start leaves mysqld_safe
// starting a mysqld that has no socket yet, which a shutdown alone returns
// at once for, and whose accounts may not be made yet), then with SIGTERM
// (fifobackupengine.EndMysqld); an error names what is still running.
func (s *scratchServer) stop(logger logutil.Logger) error {
	if s.db != nil {
		s.db.Close()
	}
	if s.mysqld == nil {
		return nil
	}
	defer s.mysqld.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shutdown := func(ctx context.Context) error { return s.mysqld.Shutdown(ctx, s.cnf, true, 15*time.Second) }
	if err := fifobackupengine.StopMysqld(ctx, s.cnf, 15*time.Second, shutdown, logger); err != nil {
		logger.Warningf("selftest: the scratch server did not stop (%v): ending it with SIGTERM", err)
		return fifobackupengine.EndMysqld(s.cnf, 30*time.Second)
	}
	return nil
}

func (s *scratchServer) errorLog() string {
	b, err := os.ReadFile(s.cnf.ErrorLogPath)
	if err != nil {
		return fmt.Sprintf("(no error log: %v)", err)
	}
	return string(b[max(0, len(b)-4096):])
}

// writeInitSQL writes Vitess's init SQL for the server's flavor: MariaDB
// has no super_read_only.
func writeInitSQL(ctx context.Context, root string) (string, error) {
	version, err := mysqlctl.GetVersionString()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(vtconfig.DefaultInitDB, "\n") {
		if strings.Contains(version, "MariaDB") && strings.Contains(strings.ToLower(line), "super_read_only") {
			continue
		}
		b.WriteString(line)
	}
	p := filepath.Join(root, "init_db.sql")
	return p, os.WriteFile(p, []byte(b.String()), 0o644)
}

// scratchPrefix names the self-test's scratch directories, each owned by a
// record (fifobackupengine.MkdirClaimed) while its run lives.
const scratchPrefix = "vtfifo-selftest-"

// removeDeadScratch removes a scratch directory that a run killed with
// SIGKILL left (fifobackupengine.SweepStale: its owner record names a
// process that is gone). Its scratch server, which Vitess starts through
// mysqld_safe, out of reach of any parent-death signal, may still run on
// it: it is ended first (fifobackupengine.EndMysqld).
func removeDeadScratch(dir string) error {
	cnfs, err := filepath.Glob(filepath.Join(dir, "vt_*", "my.cnf"))
	if err != nil {
		return err
	}
	for _, p := range cnfs {
		cnf := &mysqlctl.Mycnf{Path: p, PidFile: filepath.Join(filepath.Dir(p), "mysql.pid")}
		if err := fifobackupengine.EndMysqld(cnf, 30*time.Second); err != nil {
			return err
		}
	}
	return removeScratch(dir, 30*time.Second)
}
