// Package cluster starts and drives a real Vitess cluster for end-to-end tests and the demo:
// etcd, vtctld, MariaDB tablets (mysqlctl + vttablet) and vtbackup runs, each a real process
// on 127.0.0.1 with free ports, all under one temporary directory. Every process it starts is
// stopped by its own PID on Teardown.
//
// When the caller is root, every Vitess process and mysqld run as an unprivileged user
// (default "mysql", override with VTFIFO_RUN_AS): mysqld refuses to run as root, and running
// vttablet/vtbackup as the same user as mysqld keeps the files a restore writes readable by
// mysqld.
package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// binaries are what the cluster runs from BinDir: ours, Vitess's own
// mysqlctl and vtctldclient, and Vitess's own vttablet under stock/ (a
// tablet with Stock set runs it).
var binaries = []string{"vttablet", "vtbackup", "vtctld", "mysqlctl", "vtctldclient", "vtfifo", "stock/vttablet"}

// Paths says where the binaries and generated files are. Zero fields are found by Discover.
type Paths struct {
	BinDir    string // vttablet, vtbackup, vtctld, mysqlctl, vtctldclient
	ToolsDir  string // versitygw, fake-gcs-server (only for S3/GCS storage)
	InitDBSQL string // Vitess's init_db.sql without the super_read_only lines
}

// ErrPrereq wraps every "something needed is not there" error, so tests can skip on it
// unless VTFIFO_E2E=require.
var ErrPrereq = errors.New("end-to-end prerequisite missing")

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// VitessVersion reads the pinned vitess.io/vitess version from go.mod.
func VitessVersion(repoRoot string) (string, error) {
	f, err := os.Open(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[0] == "require" && fields[1] == "vitess.io/vitess" {
			return fields[2], nil
		}
		if len(fields) >= 2 && fields[0] == "vitess.io/vitess" && strings.HasPrefix(fields[1], "v") {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("vitess.io/vitess not found in go.mod")
}

// Discover fills the zero fields of p from VTFIFO_BIN_DIR / VTFIFO_TOOLS_DIR /
// VTFIFO_INIT_DB_SQL (the Makefile exports them) or the build/ layout the Makefile uses, and
// checks that everything exists. Missing pieces give an error wrapping ErrPrereq that says
// which `make` target builds them.
func Discover(p Paths) (Paths, error) {
	root, rerr := RepoRoot()
	version := ""
	if rerr == nil {
		version, _ = VitessVersion(root)
	}
	pick := func(cur, env, rel string) string {
		if cur != "" {
			return cur
		}
		if v := os.Getenv(env); v != "" {
			return v
		}
		if rerr != nil || version == "" {
			return ""
		}
		return filepath.Join(root, strings.ReplaceAll(rel, "{v}", version))
	}
	p.BinDir = pick(p.BinDir, "VTFIFO_BIN_DIR", "build/vitess-{v}/bin")
	p.ToolsDir = pick(p.ToolsDir, "VTFIFO_TOOLS_DIR", "build/tools")
	p.InitDBSQL = pick(p.InitDBSQL, "VTFIFO_INIT_DB_SQL", "build/vitess-{v}/init_db_mariadb.sql")
	var missing []string
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(p.BinDir, b)); err != nil {
			missing = append(missing, filepath.Join(p.BinDir, b)+" (make build)")
		}
	}
	if _, err := os.Stat(p.InitDBSQL); err != nil {
		missing = append(missing, p.InitDBSQL+" (make build)")
	}
	for _, b := range []string{"mariadbd", "mariabackup", "mbstream", "etcd"} {
		if _, err := lookPath(b); err != nil {
			missing = append(missing, b+" (make setup)")
		}
	}
	if len(missing) > 0 {
		return p, fmt.Errorf("%w: %s", ErrPrereq, strings.Join(missing, ", "))
	}
	return p, nil
}

// lookPath finds a binary in PATH or the sbin directories (mariadbd lives in /usr/sbin).
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// runAs is the unprivileged user the cluster runs as, nil when not root.
type runAs struct {
	name     string
	uid, gid int
}

func (r *runAs) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if r != nil {
		attr.Credential = &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid), NoSetGroups: true}
	}
	return attr
}

func (r *runAs) chown(path string) error {
	if r == nil {
		return nil
	}
	return os.Lchown(path, r.uid, r.gid)
}

// mkdir creates dir (and parents) owned by the cluster user.
func (r *runAs) mkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return r.chown(dir)
}

func (r *runAs) writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.WriteFile(path, data, mode); err != nil {
		return err
	}
	return r.chown(path)
}

func lookupRunAs() (*runAs, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	name := os.Getenv("VTFIFO_RUN_AS")
	if name == "" {
		name = "mysql"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: running as root needs an unprivileged user to run mysqld and the tablets as (VTFIFO_RUN_AS, default mysql; "+
			"mariadb-server creates it): %v", ErrPrereq, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &runAs{name: name, uid: uid, gid: gid}, nil
}

// reachableByOthers reports whether a non-owner can traverse to and execute path.
func reachableByOthers(path string) bool {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	st, err := os.Stat(abs)
	if err != nil {
		return false
	}
	perm := st.Mode().Perm()
	if perm&0o004 == 0 || perm&0o100 != 0 && perm&0o001 == 0 {
		return false // others cannot read it, or cannot run an executable
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if err != nil || st.Mode().Perm()&0o001 == 0 {
			return false
		}
		if dir == "/" {
			return true
		}
	}
}

// stageFile makes src reachable by the cluster user under dstDir: a hard link when possible,
// a copy otherwise. Used when the checkout lives under a private directory such as /root.
func stageFile(src, dstDir string, r *runAs) (string, error) {
	if r == nil || reachableByOthers(src) {
		return src, nil
	}
	dst := filepath.Join(dstDir, filepath.Base(src))
	if err := os.Link(src, dst); err == nil {
		return dst, nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		return "", err
	}
	return dst, nil
}
