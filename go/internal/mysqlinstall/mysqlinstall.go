// Package mysqlinstall finds the local MySQL or MariaDB installation a
// throwaway server runs from (the test restore, restore-table's definitions
// server, vtfifo selftest) and the user it runs as.
package mysqlinstall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// FindMysqld resolves the server binary: path, else mysqld or mariadbd
// under $VT_MYSQL_ROOT, in PATH or /usr/sbin.
func FindMysqld(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("mysqld %s: %w", path, err)
		}
		return p, nil
	}
	for _, name := range []string{"mysqld", "mariadbd"} {
		if p, ok := FindTool(name); ok {
			return p, nil
		}
	}
	return "", errors.New("no mysqld or mariadbd found (under $VT_MYSQL_ROOT, in PATH or /usr/sbin): give its path")
}

// FindTool finds a program of the server's installation by name (mysqld,
// mariadbd, aria_chk): under $VT_MYSQL_ROOT (bin, sbin, libexec), in PATH,
// then in /usr/sbin, /usr/local/sbin and /usr/local/mysql/bin.
func FindTool(name string) (string, bool) {
	var dirs []string
	if root := os.Getenv("VT_MYSQL_ROOT"); root != "" {
		dirs = append(dirs, filepath.Join(root, "bin"), filepath.Join(root, "sbin"), filepath.Join(root, "libexec"))
	}
	for _, d := range dirs {
		if p, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return p, true
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, d := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin"} {
		if p, err := exec.LookPath(filepath.Join(d, name)); err == nil {
			return p, true
		}
	}
	return "", false
}

// ServerVersion is the server binary's --version line, and whether it is
// MariaDB's.
func ServerVersion(ctx context.Context, mysqld string) (version string, mariadb bool, err error) {
	out, err := exec.CommandContext(ctx, mysqld, "--version").CombinedOutput()
	if err != nil {
		return "", false, fmt.Errorf("%s --version: %v: %s", mysqld, err, strings.TrimSpace(string(out)))
	}
	version = strings.TrimSpace(string(out))
	return version, strings.Contains(version, "MariaDB"), nil
}

// ServerUser is the user a throwaway mysqld runs as: nil (ourselves), or,
// as root (which mysqld refuses), the mysql user, who must be able to reach
// scratch.
func ServerUser(scratch string) (*user.User, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		return nil, fmt.Errorf("running as root, mysqld must run as the mysql user: %w", err)
	}
	for d := filepath.Dir(scratch); d != "/" && d != "."; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return nil, err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return nil, fmt.Errorf("the mysql user cannot reach the scratch directory %s: %s is not traversable by others; choose another scratch directory", scratch, d)
		}
	}
	return u, nil
}

// ChownTree gives dir and everything under it to u.
func ChownTree(dir string, u *user.User) error {
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return Chown(p, u)
	})
}

// Chown gives p (a link itself, not what it names) to u.
func Chown(p string, u *user.User) error {
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Lchown(p, uid, gid)
}
