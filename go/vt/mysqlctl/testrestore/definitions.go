package testrestore

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"vitess.io/vitess/go/sqlescape"
	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// Definitions starts a throwaway mysqld on dataDir (Open) and returns each
// table's SHOW CREATE TABLE, keyed "db.table", with the server's VERSION().
// It is the definition at the backup's position, read from the backup's own
// files (the .frm on MariaDB, the data dictionary in mysql.ibd on MySQL 8),
// whatever the live server holds now. The server is stopped, and its
// scratch directory removed, before Definitions returns.
func Definitions(ctx context.Context, dataDir string, tables [][2]string, opts Options) (defs map[string]string, version string, err error) {
	s, err := Open(ctx, dataDir, "the tables' definitions", opts)
	if err != nil {
		return nil, "", err
	}
	defer s.Close()
	defs, err = s.Definitions(ctx, tables)
	return defs, s.Version, err
}

// Scratch is a throwaway mysqld on a table restore's prepared subset (the
// system tablespace and the tables' files), which reads it and changes
// nothing: InnoDB read-only on MariaDB; on MySQL 8 a server on a copy of the
// data dictionary alone, which has the definitions and none of the rows.
type Scratch struct {
	DB      *sql.DB
	Version string // SELECT VERSION()
	MariaDB bool
	srv     *server
	release func() // removes the scratch directory and its owner record
}

// Open starts a Scratch on dataDir, saying what for in its log line. As at
// any start, MariaDB runs Aria's recovery from the backup's Aria log, which
// brings Aria tables copied online to the backup's end; its clean stop
// (Close) leaves them closed. As root, the server runs as the mysql user,
// which gets dataDir.
func Open(ctx context.Context, dataDir, what string, opts Options) (_ *Scratch, err error) {
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
	bin, err := mysqlinstall.FindMysqld(opts.MysqldPath)
	if err != nil {
		return nil, err
	}
	_, mariadb, err := mysqlinstall.ServerVersion(ctx, bin)
	if err != nil {
		return nil, err
	}
	parent := opts.ScratchParent
	if parent == "" {
		parent = os.TempDir()
	}
	// Owned by a record beside it: one a killed process left is swept by
	// the next Open (fifobackupengine.NewWorkDir).
	scratch, release, err := fifobackupengine.NewWorkDir(parent, "vtfifo-definitions-", logger)
	if err != nil {
		return nil, fmt.Errorf("cannot create a scratch directory: %w", err)
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	if err := os.Mkdir(filepath.Join(scratch, "tmp"), 0o750); err != nil {
		return nil, err
	}
	runAs, err := mysqlinstall.ServerUser(scratch)
	if err != nil {
		return nil, err
	}
	if runAs != nil {
		for _, d := range []string{scratch, dataDir} {
			if err := mysqlinstall.ChownTree(d, runAs); err != nil {
				return nil, err
			}
		}
	}
	srv := &server{bin: bin, dir: scratch, dataDir: dataDir, mariadb: mariadb, runAs: runAs, logger: logger}
	mode := "InnoDB read-only"
	if !mariadb {
		// MySQL 8.0.30+ will not start --innodb-read-only without redo files,
		// and the prepare leaves #innodb_redo empty (PXB xtrabackup.cc,
		// xtrabackup_close_temp_log; mysql-test innodb log_read_only). The
		// definitions are in the data dictionary (mysql.ibd): a server that
		// may write starts on a copy of the dictionary alone, and the exported
		// tablespaces are not in its data directory at all.
		if srv.dataDir, err = dictionaryCopy(dataDir, filepath.Join(scratch, "dictionary")); err != nil {
			return nil, err
		}
		if runAs != nil {
			if err := mysqlinstall.ChownTree(srv.dataDir, runAs); err != nil {
				return nil, err
			}
		}
		mode = "on a copy of the data dictionary"
	}
	args, err := srv.args(opts)
	if err != nil {
		return nil, err
	}
	if mariadb {
		// The exported tablespaces stay as the tool left them.
		args = append(args, "--innodb-read-only=1")
	}
	logger.Infof("restore-table: starting %s (%s) on %s for %s", bin, mode, dataDir, what)
	db, started, err := srv.startLoaded(ctx, args, opts.Plugins, opts.StartTimeout)
	if err != nil {
		// Its control starts as it did, less the read-only mode, in which
		// no server starts on an empty directory.
		return nil, srv.controlled(ctx, slices.DeleteFunc(started, func(a string) bool { return a == "--innodb-read-only=1" }), opts,
			unreadable.InText(err))
	}
	s := &Scratch{DB: db, MariaDB: mariadb, srv: srv, release: release}
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&s.Version); err != nil {
		s.Close()
		return nil, fmt.Errorf("SELECT VERSION(): %w", err)
	}
	return s, nil
}

// Close stops the server cleanly and removes its scratch directory.
func (s *Scratch) Close() {
	s.DB.Close()
	s.srv.stop()
	s.release()
}

// Definitions returns each table's SHOW CREATE TABLE, keyed "db.table",
// its row format made explicit.
func (s *Scratch) Definitions(ctx context.Context, tables [][2]string) (map[string]string, error) {
	defs := map[string]string{}
	for _, t := range tables {
		var name, create string
		q := "SHOW CREATE TABLE " + sqlescape.EscapeID(t[0]) + "." + sqlescape.EscapeID(t[1])
		if err := s.DB.QueryRowContext(ctx, q).Scan(&name, &create); err != nil {
			return nil, fmt.Errorf("%s.%s: the restored files give no definition (%s: %v); the server's log ends:\n%s", t[0], t[1], q, err, s.srv.logTail())
		}
		if !strings.HasPrefix(create, "CREATE TABLE ") {
			return nil, fmt.Errorf("%s.%s: SHOW CREATE TABLE gave no CREATE TABLE: %.80q", t[0], t[1], create)
		}
		var err error
		if create, err = withRowFormat(ctx, s.DB, t, create); err != nil {
			return nil, err
		}
		defs[t[0]+"."+t[1]] = create
	}
	return defs, nil
}

// dictionaryCopy makes dst a data directory with what a MySQL 8 server needs
// to start and answer SHOW CREATE TABLE from its data dictionary: the system
// tablespace (ibdata*), the dictionary (mysql.ibd), the undo tablespaces,
// backup-my.cnf (its settings are the server's), an empty #innodb_redo for
// the server to create its redo in, and an empty directory per database.
// No table's tablespace is copied: the server reports them missing and
// leaves them alone.
func dictionaryCopy(dataDir, dst string) (string, error) {
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(dst, 0o750); err != nil {
		return "", err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
			if err := os.Mkdir(filepath.Join(dst, name), 0o750); err != nil {
				return "", err
			}
		case e.Type().IsRegular() && dictionaryFile(name):
			if err := copyRegular(filepath.Join(dataDir, name), filepath.Join(dst, name)); err != nil {
				return "", fmt.Errorf("cannot copy %s for the definitions server: %w", name, err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(dst, "#innodb_redo"), 0o750); err != nil {
		return "", err
	}
	return dst, nil
}

// dictionaryFile: the top-level files dictionaryCopy takes.
func dictionaryFile(name string) bool {
	return strings.HasPrefix(name, "ibdata") || name == "mysql.ibd" || name == "backup-my.cnf" ||
		strings.HasSuffix(name, ".ibu") || undoTablespace.MatchString(name)
}

var undoTablespace = regexp.MustCompile(`^undo_[0-9]{3}$`)

// copyRegular copies one file, which dst must not be.
func copyRegular(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// withRowFormat makes an InnoDB definition's row format explicit where SHOW
// CREATE TABLE leaves it out (the table took the server's default when it
// was created): a live server whose default differs would create another
// format than the tablespace has, and IMPORT TABLESPACE fails ("Schema
// mismatch"). The format is the backup's own, as the server on its files
// reads it.
func withRowFormat(ctx context.Context, db *sql.DB, t [2]string, create string) (string, error) {
	if strings.Contains(create, "ROW_FORMAT=") || !strings.Contains(create, ") ENGINE=InnoDB") {
		return create, nil
	}
	var format sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT ROW_FORMAT FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", t[0], t[1]).
		Scan(&format); err != nil {
		return "", fmt.Errorf("%s.%s: its row format: %w", t[0], t[1], err)
	}
	// DYNAMIC, every server's default since MariaDB 10.2 and MySQL 5.7,
	// stays implicit: the definition is then the server's own.
	switch f := strings.ToUpper(format.String); f {
	case "COMPACT", "REDUNDANT":
		// At the end of the table options' line, before any PARTITION BY.
		at := strings.Index(create, ") ENGINE=InnoDB")
		end := strings.IndexByte(create[at:], '\n')
		if end < 0 {
			end = len(create) - at
		}
		return create[:at+end] + " ROW_FORMAT=" + f + create[at+end:], nil
	}
	return create, nil
}
