// Package tabletdb starts, for tests, the mysqld of a Vitess tablet the way
// vttablet does it: Vitess's own mysqlctl code (Mycnf, Mysqld.Init, Start,
// Shutdown) from the pinned module, on a real MariaDB. It works as root by
// running mysqld as the mysql user.
package tabletdb

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/go/testutil/freeport"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"
	"github.com/vtfifo/vtfifo/go/testutil/tier"

	vtconfig "vitess.io/vitess/config"
	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/vt/dbconfigs"
	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/internal/procident"
	"github.com/vtfifo/vtfifo/go/internal/vtusers"
)

// Tablet is a running tablet mysqld.
type Tablet struct {
	Mysqld *mysqlctl.Mysqld
	Cnf    *mysqlctl.Mycnf
	// Root is VTDATAROOT.
	Root string
	UID  uint32

	mu         sync.Mutex
	lastBackup time.Time // the BackupTime last handed out
}

// BackupTime is the time to give this tablet's next backup: now, or the
// start of the next second where a backup of it was given this second.
// Vitess names a backup by its tablet and the second it starts, and the
// storage refuses a name it holds: two backups under a second apart (a
// small data set, a fast host) would collide.
func (tb *Tablet) BackupTime() time.Time {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	now := time.Now()
	if last := tb.lastBackup.Truncate(time.Second); !now.Truncate(time.Second).After(last) {
		time.Sleep(time.Until(last.Add(time.Second)))
		now = time.Now()
	}
	tb.lastBackup = now
	return now
}

// SetupHint says how to install what these tests need.
const SetupHint = "run `make setup` (installs mariadb-server and mariadb-backup)"

// Start initialises and starts a tablet mysqld under a fresh VTDATAROOT and
// stops it and removes everything at the end of the test. It sets the
// VTDATAROOT and EXTRA_MY_CNF environment variables for the test.
func Start(t testing.TB) *Tablet {
	t.Helper()
	return StartIn(t, "")
}

// StartIn is Start with the fresh VTDATAROOT created under parent (Start:
// the system's temp dir), e.g. on a file system the test controls.
func StartIn(t testing.TB, parent string) *Tablet {
	t.Helper()
	return StartWith(t, parent, "")
}

// TestDurability is the [mysqld] lines by which test servers give up some of
// Vitess's my.cnf durability, as Vitess's own test-suite.cnf gives up more:
// commits reach the OS at once but are not fsynced, which a killed mysqld
// survives and only a host crash would not. It spares the tests thousands of
// fsyncs.
const TestDurability = "innodb_flush_log_at_trx_commit=2\nsync_binlog=0\n"

// StartWith is StartIn with more [mysqld] lines in the tablet's my.cnf
// (EXTRA_MY_CNF), such as a server setting fixed at initialisation
// (innodb_page_size=32k).
func StartWith(t testing.TB, parent, mysqldLines string) *Tablet {
	t.Helper()
	tier.Integration(t, "a MariaDB tablet")
	if _, err := os.Stat("/usr/sbin/mariadbd"); err != nil {
		t.Fatalf("tabletdb: MariaDB is not installed: %s", SetupHint)
	}
	sweepLeftovers(cmp.Or(parent, os.TempDir()))
	root, err := os.MkdirTemp(parent, "tabletdb-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(root, 0o755))
	t.Cleanup(func() { removeRoot(root) })
	owner, err := json.Marshal(procident.Self())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, ownerFile), owner, 0o644))
	t.Setenv("VTDATAROOT", root)

	uid, gid := -1, -1
	extra := "[mysqld]\ninnodb_buffer_pool_size=128M\n" + TestDurability + mysqldLines
	if os.Geteuid() == 0 {
		// mysqld refuses to run as root.
		u, err := user.Lookup("mysql")
		require.NoError(t, err, "tabletdb: running as root needs the mysql user: %s", SetupHint)
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		extra += "user=mysql\n"
	}
	extraCnf := filepath.Join(root, "extra.cnf")
	require.NoError(t, os.WriteFile(extraCnf, []byte(extra), 0o644))
	t.Setenv("EXTRA_MY_CNF", extraCnf)

	// Vitess's init_db.sql without super_read_only, which MariaDB lacks.
	var initSQL strings.Builder
	for _, line := range strings.SplitAfter(vtconfig.DefaultInitDB, "\n") {
		if !strings.Contains(strings.ToLower(line), "super_read_only") {
			initSQL.WriteString(line)
		}
	}
	initFile := filepath.Join(root, "init_db.sql")
	require.NoError(t, os.WriteFile(initFile, []byte(initSQL.String()), 0o644))

	// Without flag parsing the users are empty: use Vitess's flag defaults.
	vtusers.UseDefaults()
	tabletUID := uint32(100 + rand.IntN(9000))
	// The global DB config keeps the first socket it sees: point it at this
	// tablet's, so several tablets in one test binary each get their own.
	socket := filepath.Join(root, fmt.Sprintf("vt_%010d", tabletUID), "mysql.sock")
	dbconfigs.GlobalDBConfigs.Socket = socket
	mysqld, cnf, err := mysqlctl.CreateMysqldAndMycnf(tabletUID, socket, freePort(t), collations.MySQL8())
	require.NoError(t, err)
	tb := &Tablet{Mysqld: mysqld, Cnf: cnf, Root: root, UID: tabletUID}

	// Lay out the directories and the cnf first, so they can be handed to
	// the mysql user before mysqld starts.
	require.NoError(t, mysqld.InitConfig(cnf))
	if uid >= 0 {
		require.NoError(t, chownTree(root, uid, gid))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := mysqld.Shutdown(ctx, cnf, true, 30*time.Second); err != nil {
			t.Logf("tabletdb: shutdown failed (%v); killing mysqld", err)
			killByPidFile(cnf.PidFile)
		}
		mysqld.Close()
	})
	require.NoError(t, mysqld.Init(ctx, cnf, initFile), "mysqlctl Init failed; mysqld log:\n%s", tb.ErrorLog())
	return tb
}

// DB opens a connection pool as the DBA user over the socket; database may be "".
func (tb *Tablet) DB(t testing.TB, database string) *sql.DB {
	t.Helper()
	c := mysql.NewConfig()
	c.User = dbconfigs.GlobalDBConfigs.Dba.User
	c.Passwd = dbconfigs.GlobalDBConfigs.Dba.Password
	c.Net = "unix"
	c.Addr = tb.Cnf.SocketFile
	c.DBName = database
	c.MultiStatements = true
	c.InterpolateParams = true
	db, err := sql.Open("mysql", c.FormatDSN())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// ErrorLog returns the tail of mysqld's error log.
func (tb *Tablet) ErrorLog() string {
	b, err := os.ReadFile(tb.Cnf.ErrorLogPath)
	if err != nil {
		return fmt.Sprintf("(no error log: %v)", err)
	}
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// ownerFile, in a tablet's VTDATAROOT, names the test process that made it.
const ownerFile = "tabletdb-owner.json"

// removeRoot removes a tablet's VTDATAROOT once its server is down
// (cleanups run last-registered first). mysqld_safe outlives mysqld by a
// moment and writes its last line ("mysqld ... ended") to the error log,
// which could recreate a file under a tree RemoveAll had emptied: the tree
// is removed again until it stays gone, for up to 10 s.
func removeRoot(root string) {
	for range 100 {
		if err := os.RemoveAll(root); err == nil {
			if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sweepLeftovers stops the servers and removes the VTDATAROOTs under parent
// that test processes left when they died without their cleanups (go
// test's own timeout panics past them; a kill): a mysqld started through
// mysqld_safe outlives the process that started it. Only a directory whose
// owner record names a process provably gone is touched.
func sweepLeftovers(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "tabletdb-*"))
	self := procident.Self()
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		var o procident.Owner
		if err != nil || json.Unmarshal(b, &o) != nil || o.PID <= 0 || !self.Outlived(o) {
			continue
		}
		pidFiles, _ := filepath.Glob(filepath.Join(d, "vt_*", "mysql.pid"))
		for _, p := range pidFiles {
			if runsIn(p, d) { // a pid file outlives its process, and pids are reused
				killByPidFile(p)
			}
		}
		_ = os.RemoveAll(d)
	}
}

// runsIn reports whether the process of pidFile was started on dir (its
// command line names it).
func runsIn(pidFile, dir string) bool {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/cmdline")
	return err == nil && strings.Contains(string(cmdline), dir+"/")
}

// killByPidFile kills the mysqld of the pid file and the mysqld_safe that
// would restart it, so a failed shutdown leaves no server behind.
func killByPidFile(pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// The parent is field 4, after the parenthesised command name.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
			if f := strings.Fields(string(stat)[i+1:]); len(f) > 1 {
				if ppid, err := strconv.Atoi(f[1]); err == nil && ppid > 1 {
					if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", ppid)); strings.Contains(string(comm), "mysqld_safe") {
						_ = syscall.Kill(ppid, syscall.SIGKILL)
					}
				}
			}
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

func chownTree(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func freePort(t testing.TB) int {
	p, err := freeport.Get()
	require.NoError(t, err)
	return p
}
