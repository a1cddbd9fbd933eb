package testrestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"vitess.io/vitess/go/vt/logutil"
)

// Definitions starts a throwaway mysqld on dataDir (a table restore's
// prepared subset: the system tablespace and the tables' files), InnoDB
// read-only, and returns each table's SHOW CREATE TABLE, keyed "db.table",
// with the server's VERSION(). It is the definition at the backup's
// position, read from the backup's own files (the .frm on MariaDB, the data
// dictionary in mysql.ibd on MySQL 8), whatever the live server holds now.
// As at any start, MariaDB runs Aria's recovery from the backup's Aria log,
// which brings Aria tables copied online to the backup's end; its clean
// stop leaves them closed. The server is stopped, and its scratch directory
// removed, before Definitions returns. As root, the server runs as the
// mysql user, which gets dataDir.
func Definitions(ctx context.Context, dataDir string, tables [][2]string, opts Options) (defs map[string]string, version string, err error) {
	logger := opts.Logger
	if logger == nil {
		logger = logutil.NewConsoleLogger()
	}
	if opts.BufferPool <= 0 {
		opts.BufferPool = 64 << 20
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Minute
	}
	bin, err := findMysqld(opts.MysqldPath)
	if err != nil {
		return nil, "", err
	}
	_, mariadb, err := serverVersion(ctx, bin)
	if err != nil {
		return nil, "", err
	}
	parent := opts.ScratchParent
	if parent == "" {
		parent = os.TempDir()
	}
	scratch, err := os.MkdirTemp(parent, "vtfifo-definitions-")
	if err != nil {
		return nil, "", fmt.Errorf("cannot create a scratch directory: %w", err)
	}
	defer os.RemoveAll(scratch)
	if err := os.Mkdir(filepath.Join(scratch, "tmp"), 0o750); err != nil {
		return nil, "", err
	}
	runAs, err := serverUser(scratch)
	if err != nil {
		return nil, "", err
	}
	if runAs != nil {
		for _, d := range []string{scratch, dataDir} {
			if err := chownTree(d, runAs); err != nil {
				return nil, "", err
			}
		}
	}
	srv := &server{bin: bin, dir: scratch, dataDir: dataDir, mariadb: mariadb, runAs: runAs, logger: logger}
	args, err := srv.args(opts)
	if err != nil {
		return nil, "", err
	}
	// The exported tablespaces stay as the tool left them.
	args = append(args, "--innodb-read-only=1")
	logger.Infof("restore-table: starting %s (InnoDB read-only) on %s for the tables' definitions", bin, dataDir)
	db, err := srv.start(ctx, args, opts.StartTimeout)
	if err != nil {
		return nil, "", err
	}
	defer srv.stop()
	defer db.Close()
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return nil, "", fmt.Errorf("SELECT VERSION(): %w", err)
	}
	defs = map[string]string{}
	for _, t := range tables {
		var name, create string
		q := "SHOW CREATE TABLE " + quoteName(t[0]) + "." + quoteName(t[1])
		if err := db.QueryRowContext(ctx, q).Scan(&name, &create); err != nil {
			return nil, "", fmt.Errorf("%s.%s: the restored files give no definition (%s: %v); the server's log ends:\n%s", t[0], t[1], q, err, srv.logTail())
		}
		if !strings.HasPrefix(create, "CREATE TABLE ") {
			return nil, "", fmt.Errorf("%s.%s: SHOW CREATE TABLE gave no CREATE TABLE: %.80q", t[0], t[1], create)
		}
		defs[t[0]+"."+t[1]] = create
	}
	return defs, version, nil
}
