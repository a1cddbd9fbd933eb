// Package tableimport imports InnoDB tables that a tool exported
// (xtrabackup or mariabackup --prepare --export: an .ibd and a .cfg per table
// or partition) into a live server on this host, under their own name or
// another: the table created from its definition under a reserved name, its
// tablespace discarded, the files copied in, imported, then CHECK TABLE and
// a row count, and the target's name given by one RENAME TABLE
// (reserved.go). Nothing else in the server is touched: an existing table
// is never replaced, and what an import created is dropped again when it
// fails. The statements are
// not written to the binary log (sql_log_bin=0): the table is restored on
// this server only, and replicas do not try to import files they lack.
//
// MariaDB 10.11 (run here): a table with DISCARD/IMPORT TABLESPACE; a
// partitioned table one partition at a time through a placeholder table and
// EXCHANGE PARTITION, as MariaDB's own tests do (10.11 cannot import a
// partitioned table at once). MySQL 8 (written from its manual, "Importing
// InnoDB Tables", not run here): the whole partitioned table with one
// DISCARD and one IMPORT, every partition's files named <table>#p#<part>.
//
// MariaDB's Aria, MyISAM and CSV tables are their files: those are copied
// in under the target's name, the .frm last, and the server opens them
// (importFiles). Aria files must first be made movable (Movable).
package tableimport

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"vitess.io/vitess/go/sqlescape"
	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/mysqlfilename"
)

// Source is one exported table.
type Source struct {
	DB, Table string
	// Dir is the restore's directory; Files the table's exported files in
	// it, relative (db/t.ibd, db/t.cfg, db/t#P#p0.ibd, ...).
	Dir   string
	Files []string
	// Create is the table's definition (SHOW CREATE TABLE).
	Create string
	// Triggers are its triggers (ReadTriggers), created with it.
	Triggers []Trigger
	// Sequence is set when the table is a MariaDB SEQUENCE (ReadSequence):
	// it is made as one (ImportSequence).
	Sequence *Sequence
}

// Target names the table to create in the live server.
type Target struct{ DB, Table string }

// Options say what an import may do beyond the default.
type Options struct {
	// Unreplicated allows the import into a server that writes a binary log
	// or that replicas or binlog streams read: the imported
	// table is not in the binary log, so it exists on this server only, and
	// a later statement on it that is logged (a RENAME, a DROP, an UPDATE)
	// stops every replica. Without it such a server is refused before
	// anything is created.
	Unreplicated bool
	// DropKeysWithoutParent imports a table without those of its foreign
	// keys whose parent the live server does not have (and Importing does
	// not name), saying so; without it such a table is refused.
	DropKeysWithoutParent bool
	// Importing are the other tables the caller imports in the same run:
	// parents among them count as there.
	Importing []Target
	// withoutForeignKeys creates the table without its foreign keys (the
	// local copy of ImportReplicated, whose target has them).
	withoutForeignKeys bool
	// Local makes the local copy ImportReplicated copies the target from
	// (nil: Import of the files; FromServer: the rows a throwaway server
	// reads from them).
	Local LocalCopy
	// Pace, if set, is called after each batch copied into the target
	// through the binary log; its error stops the copy (Replicas).
	Pace func(ctx context.Context) error
	// Resume lets ImportReplicated go on with a copy that was stopped (the
	// command killed): where the target and its local copy both exist, the
	// copy continues after the target's last row.
	Resume bool
	// DurableTimeout bounds the wait for InnoDB's checkpoint to pass the
	// import (durable.go); 0: 10 minutes.
	DurableTimeout time.Duration
}

func (t Target) String() string { return t.DB + "." + t.Table }

// Result is what the imported table holds.
type Result struct {
	Rows     int64
	Check    string // CHECK TABLE's last message ("OK")
	Checksum string // CHECKSUM TABLE
	// Notes say what the import changed from the backup's definition
	// (foreign keys renamed, pointed at their parent, dropped).
	Notes []string
}

// ErrExists is returned when the target table exists: it is never replaced.
var ErrExists = errors.New("a table of that name exists in the live server")

// ErrFileInTheWay is returned when the live server's database directory
// holds a file of the target's name that is no table's: it is never
// written over.
var ErrFileInTheWay = errors.New("a file of that name exists in the live server's database directory")

// Misfit reports whether err is the live server refusing the files for the
// table it built (ER_TABLE_SCHEMA_MISMATCH, 1808: a tablespace of another
// page size, row format or column layout than the server makes): its
// configuration or version against the backup's server, never proof of
// damage, which the files' checksums would have shown before.
func Misfit(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1808
}

// ErrReplicated is returned for a server that writes a binary log or that
// replicas or binlog streams read, unless Options.Unreplicated.
var ErrReplicated = errors.New("the live server writes a binary log that replicas may read")

// Import imports src into the live server db (whose data directory must be
// on this host) as to: built under a reserved name (workName), checked,
// made durable, then renamed to to in one statement (reserved.go). On
// failure what it built is dropped, and the error says whether that was
// checked.
func Import(ctx context.Context, db *sql.DB, src Source, to Target, opts Options, logger logutil.Logger) (res Result, err error) {
	if logger == nil {
		logger = logutil.NewConsoleLogger()
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return res, err
	}
	defer conn.Close()
	im := &importer{ctx: ctx, db: db, conn: conn, src: src, to: to, work: workName(to), logger: logger}
	spaces, err := im.check(opts)
	if err != nil {
		return res, err
	}
	// The connection goes back to the caller's pool: it must not keep the
	// binary log off for whoever uses it next.
	defer restoreSession(conn)
	for _, q := range []string{"SET SESSION sql_log_bin = 0", "SET SESSION foreign_key_checks = 0"} {
		if err := im.exec(q); err != nil {
			return res, err
		}
	}
	for _, t := range []Target{to, im.work, partName(to)} {
		if err := absent(ctx, conn, t); err != nil {
			return res, err
		}
	}
	if err := noFilesOf(im.dbDir, to); err != nil {
		return res, err
	}
	// From here on, what failed is undone: the tables created are dropped,
	// the files copied in that remain are removed.
	defer func() {
		if err != nil {
			err = im.undo(err)
		}
	}()
	if res, err = im.build(spaces); err != nil {
		return res, err
	}
	if err = createTriggers(ctx, conn, im.work, src.Triggers); err != nil {
		return res, err
	}
	if spaces != nil {
		if err = im.durable(opts); err != nil {
			return res, err
		}
	}
	if err = rename(ctx, conn, im.work, to); err != nil {
		return res, err
	}
	im.created = nil
	res.Notes = append(im.notes, triggerNotes(src.Triggers)...)
	return res, nil
}

// build makes the work table from src's files and verifies it.
func (im *importer) build(spaces []tablespace) (Result, error) {
	var err error
	switch {
	case spaces == nil:
		err = im.files()
	case spaces[0].partition == "":
		err = im.whole(spaces[0])
	case im.mariadb:
		err = im.mariadbPartitions(spaces)
	default:
		err = im.mysqlPartitions(spaces)
	}
	if err != nil {
		return Result{}, err
	}
	return verify(im.ctx, im.conn, im.work)
}

// rename gives the table built under from its target's name, in one
// statement: the only one of a run that makes the target exist.
func rename(ctx context.Context, conn *sql.Conn, from, to Target) error {
	if err := absent(ctx, conn, to); err != nil {
		return err
	}
	return stmt(ctx, conn, "RENAME TABLE "+quoted(from)+" TO "+quoted(to))
}

// durable returns once a crash can no longer take the import back
// (makeDurable); a server that cannot tell (MySQL 8) is said to.
func (im *importer) durable(opts Options) error {
	err := makeDurable(im.ctx, im.conn, cmp.Or(opts.DurableTimeout, defaultDurableTimeout), im.logger)
	if errors.Is(err, errNoLSNStatus) {
		im.logger.Warningf("import of %s: the server shows no Innodb_lsn_* status, so the import is not known to be checkpointed: restart the server "+
			"cleanly before relying on it surviving a crash", im.to)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s imported, but not durable: %w", im.to, err)
	}
	return nil
}

// importer is one Import: the live server's connection and what the
// import created there, to undo on failure.
type importer struct {
	ctx     context.Context
	db      *sql.DB // for the undo: conn is closed when a statement is cancelled
	conn    *sql.Conn
	src     Source
	to      Target
	work    Target // what the table is built as, renamed to to at the end
	logger  logutil.Logger
	mariadb bool
	dbDir   string
	owner   os.FileInfo // of dbDir: the files copied in take its owner
	create  string      // the table's definition under the work name
	file    string      // the work table's file name, without extension
	notes   []string    // Result.Notes

	created []Target
	copied  []string
}

func (im *importer) exec(q string) error { return stmt(im.ctx, im.conn, q) }

// execHook, when set (tests), runs before each statement an import sends
// to the live server; its error stops the import as the statement's would.
var execHook func(q string) error

// stmt runs one statement of an import on the live server.
func stmt(ctx context.Context, conn *sql.Conn, q string, args ...any) error {
	_, err := execResult(ctx, conn, q, args...)
	return err
}

func execResult(ctx context.Context, conn *sql.Conn, q string, args ...any) (sql.Result, error) {
	if execHook != nil {
		if err := execHook(q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	r, err := conn.ExecContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	return r, nil
}

// check reads the live server and refuses what cannot be imported safely,
// before anything is created; it returns the source's tablespaces (nil: a
// table of files, importer.files).
func (im *importer) check(opts Options) ([]tablespace, error) {
	var version, dataDir string
	if err := im.conn.QueryRowContext(im.ctx, "SELECT VERSION(), @@datadir").Scan(&version, &dataDir); err != nil {
		return nil, err
	}
	im.mariadb = strings.Contains(version, "MariaDB")
	dbFile, err := fileName(im.to.DB)
	if err != nil {
		return nil, err
	}
	if im.file, err = fileName(im.work.Table); err != nil {
		return nil, err
	}
	im.dbDir = filepath.Join(dataDir, dbFile)
	if im.owner, err = os.Stat(im.dbDir); err != nil {
		return nil, fmt.Errorf("the live server's database directory %s is not on this host (%v): run the import on the server's host", im.dbDir, err)
	}
	if err := roomFor(im.ctx, im.conn, dataDir, im.src, 1, false); err != nil {
		return nil, err
	}
	create, notes, err := definition(im.ctx, im.conn, im.src, im.to, opts)
	if err != nil {
		return nil, err
	}
	im.create, im.notes = renamedTo(create, im.to, im.work), notes
	if err := importable(im.src); err != nil {
		return nil, err
	}
	if err := triggersAbsent(im.ctx, im.conn, im.to.DB, im.src.Triggers); err != nil {
		return nil, err
	}
	if !opts.Unreplicated {
		if err := unreplicated(im.ctx, im.conn); err != nil {
			return nil, err
		}
	}
	return tablespaces(im.src)
}

// NoFilesOf fails with ErrExists when the live server's database directory
// of to, where this host can see it, holds a file of to's name that is no
// table of the server's (Import refuses it: RENAME TABLE would write over
// it): for a caller to check before it restores anything.
func NoFilesOf(ctx context.Context, db *sql.DB, to Target) error {
	var dataDir string
	if err := db.QueryRowContext(ctx, "SELECT @@datadir").Scan(&dataDir); err != nil {
		return err
	}
	dbFile, err := fileName(to.DB)
	if err != nil {
		return err
	}
	dbDir := filepath.Join(dataDir, dbFile)
	if _, err := os.Stat(dbDir); err != nil {
		return nil // not on this host: Import says so
	}
	return noFilesOf(dbDir, to)
}

// noFilesOf fails with ErrExists when dbDir holds a file of to's name (a
// table's file the server does not know): RENAME TABLE would write over it.
func noFilesOf(dbDir string, to Target) error {
	file, err := fileName(to.Table)
	if err != nil {
		return err
	}
	for _, pattern := range []string{file + ".*", file + "#*"} {
		m, err := filepath.Glob(filepath.Join(dbDir, pattern))
		if err != nil {
			return err
		}
		if len(m) > 0 {
			return fmt.Errorf("%s: %w: %s, no table's of the server's; move it away or choose another name (--as)", to, ErrFileInTheWay, m[0])
		}
	}
	return nil
}

// renamedTo is create (a definition of to) creating as instead.
func renamedTo(create string, to, as Target) string {
	return "CREATE TABLE " + quoted(as) + strings.TrimPrefix(create, "CREATE TABLE "+quoted(to))
}

// undo drops the tables created and removes the files copied in, on a
// connection and a context of its own (the run's may be cancelled, and the
// driver closes a connection whose statement was: the server finishes that
// statement, and the DROP waits for it), and returns cause with what it
// checked: that nothing of the import is left, or what may be.
func (im *importer) undo(cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(im.ctx), undoTimeout)
	defer cancel()
	var failed error
	for i := len(im.created) - 1; i >= 0; i-- {
		if err := Drop(ctx, im.db, im.created[i], false); err != nil {
			failed = err
		}
	}
	for _, p := range im.copied {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			failed = err
		}
	}
	for _, t := range im.created {
		if failed == nil {
			failed = Absent(ctx, im.db, t)
		}
	}
	if failed != nil {
		return fmt.Errorf("%w; undoing it failed too (%v): the reserved tables %s may be left, which the next run for %s drops", cause, failed,
			reservedNames(im.created), im.to)
	}
	return fmt.Errorf("%w; undone: nothing of it is left in the live server", cause)
}

// undoTimeout bounds an undo after the run was stopped (it may wait for a
// cancelled statement the server finishes).
const undoTimeout = 5 * time.Minute

func reservedNames(ts []Target) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return strings.Join(names, ", ")
}

// createWork creates the work table from the source's definition.
func (im *importer) createWork() error {
	if err := im.exec(im.create); err != nil {
		return err
	}
	im.created = append(im.created, im.work)
	return nil
}

// copyIn copies a tablespace's .ibd and .cfg (and the .cfp of an encrypted
// one: PXB xtrabackup.cc, xtrabackup_prepare_func, writes it beside the .cfg
// with the tablespace key) in as the file name to.
func (im *importer) copyIn(from tablespace, to string) error {
	for _, ext := range []string{".ibd", ".cfg", ".cfp"} {
		srcPath := filepath.Join(im.src.Dir, filepath.FromSlash(from.base+ext))
		if _, err := os.Stat(srcPath); ext == ".cfp" && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		dst := filepath.Join(im.dbDir, to+ext)
		if err := copyFile(srcPath, dst, im.owner); err != nil {
			return err
		}
		im.copied = append(im.copied, dst)
	}
	return nil
}

// importTablespace runs IMPORT TABLESPACE; any warning fails it (MariaDB
// warns "Index ... not found or corrupt" and imports a table whose next
// write can stop the server). After an import the .ibd is the table's, and
// the .cfg is not needed (the server may leave it behind).
func (im *importer) importTablespace(t Target) error {
	if err := im.exec("ALTER TABLE " + quoted(t) + " IMPORT TABLESPACE"); err != nil {
		return err
	}
	if err := noWarnings(im.ctx, im.conn, "IMPORT TABLESPACE of "+t.String()); err != nil {
		return err
	}
	for _, p := range im.copied {
		if strings.HasSuffix(p, ".cfg") {
			os.Remove(p)
		}
	}
	im.copied = nil
	return nil
}

// whole imports a table of one tablespace.
func (im *importer) whole(sp tablespace) error {
	if err := im.createWork(); err != nil {
		return err
	}
	if err := im.exec("ALTER TABLE " + quoted(im.work) + " DISCARD TABLESPACE"); err != nil {
		return err
	}
	if err := im.copyIn(sp, im.file); err != nil {
		return err
	}
	return im.importTablespace(im.work)
}

// mariadbPartitions imports each partition into a placeholder table, then
// exchanges it into the work table (MariaDB imports no partition in place).
func (im *importer) mariadbPartitions(spaces []tablespace) error {
	if err := im.createWork(); err != nil {
		return err
	}
	placeholder := partName(im.to)
	placeholderFile, err := fileName(placeholder.Table)
	if err != nil {
		return err
	}
	for _, sp := range spaces {
		if err := im.exec("CREATE TABLE " + quoted(placeholder) + " LIKE " + quoted(im.work)); err != nil {
			return err
		}
		im.created = append(im.created, placeholder)
		for _, q := range []string{"ALTER TABLE " + quoted(placeholder) + " REMOVE PARTITIONING", "ALTER TABLE " + quoted(placeholder) + " DISCARD TABLESPACE"} {
			if err := im.exec(q); err != nil {
				return err
			}
		}
		if err := im.copyIn(sp, placeholderFile); err != nil {
			return err
		}
		if err := im.importTablespace(placeholder); err != nil {
			return err
		}
		for _, q := range []string{
			"ALTER TABLE " + quoted(im.work) + " EXCHANGE PARTITION " + sqlescape.EscapeID(mysqlfilename.Decode(sp.partition)) + " WITH TABLE " + quoted(placeholder),
			"DROP TABLE " + quoted(placeholder),
		} {
			if err := im.exec(q); err != nil {
				return err
			}
		}
		im.created = im.created[:len(im.created)-1]
	}
	return nil
}

// mysqlPartitions imports every partition at once: MySQL 8 discards and
// imports a partitioned table's tablespaces together.
func (im *importer) mysqlPartitions(spaces []tablespace) error {
	if err := im.createWork(); err != nil {
		return err
	}
	if err := im.exec("ALTER TABLE " + quoted(im.work) + " DISCARD TABLESPACE"); err != nil {
		return err
	}
	for _, sp := range spaces {
		if err := im.copyIn(sp, im.file+"#p#"+sp.partition); err != nil {
			return err
		}
	}
	return im.importTablespace(im.work)
}

// verify runs CHECK TABLE, counts the rows and takes the checksum.
func verify(ctx context.Context, conn *sql.Conn, to Target) (res Result, err error) {
	rows, err := conn.QueryContext(ctx, "CHECK TABLE "+quoted(to))
	if err != nil {
		return res, err
	}
	for rows.Next() {
		var table, op, typ, msg string
		if err := rows.Scan(&table, &op, &typ, &msg); err != nil {
			rows.Close()
			return res, err
		}
		if typ == "error" || (typ == "status" && msg != "OK") {
			rows.Close()
			return res, fmt.Errorf("CHECK TABLE %s: %s: %s", to, typ, msg)
		}
		res.Check = msg
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return res, err
	}
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoted(to)).Scan(&res.Rows); err != nil {
		return res, err
	}
	var name string
	var sum sql.NullString
	if err := conn.QueryRowContext(ctx, "CHECKSUM TABLE "+quoted(to)).Scan(&name, &sum); err != nil {
		return res, err
	}
	res.Checksum = sum.String
	return res, checkIndexes(ctx, conn, to, res.Rows)
}

// Absent fails with ErrExists when to exists in db: what an import checks
// first, for a caller to check before it restores anything.
func Absent(ctx context.Context, db *sql.DB, to Target) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return absent(ctx, conn, to)
}

// absent fails with ErrExists when to exists.
func absent(ctx context.Context, conn *sql.Conn, to Target) error {
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND "+
		"TABLE_NAME = ?", to.DB, to.Table).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%s: %w: nothing was changed; choose another name (--as) or drop it first", to, ErrExists)
	}
	return nil
}

// definition is src's definition creating to, its foreign keys by the rule
// of foreignkeys.go, and what that changed.
func definition(ctx context.Context, conn *sql.Conn, src Source, to Target, opts Options) (string, []string, error) {
	create, err := renamed(src, to)
	if err != nil {
		return "", nil, err
	}
	return foreignKeys(ctx, conn, src, to, create, opts)
}

// renamed is src's definition creating to.
func renamed(src Source, to Target) (string, error) {
	head := "CREATE TABLE " + sqlescape.EscapeID(src.Table) + " "
	if !strings.HasPrefix(src.Create, head) {
		return "", fmt.Errorf("%s.%s: the definition does not start with %q", src.DB, src.Table, head)
	}
	if strings.Contains(strings.ToUpper(src.Create), "DATA DIRECTORY") {
		return "", fmt.Errorf("%s.%s: its definition has a DATA DIRECTORY: import it by hand", src.DB, src.Table)
	}
	return "CREATE TABLE " + quoted(to) + " " + src.Create[len(head):], nil
}

// tablespace is one exported .ibd (with its .cfg) of a table.
type tablespace struct {
	base      string // its path in the restore without the extension
	partition string // its partition's name as in its file name; "" for a table
}

// tablespaces returns src's exported tablespaces from its files' names,
// partitions after '#P#' (MariaDB) or '#p#' (MySQL), none when src is not
// InnoDB; subpartitions are refused.
func tablespaces(src Source) ([]tablespace, error) {
	var out []tablespace
	for _, f := range src.Files {
		if !strings.HasSuffix(f, ".ibd") {
			continue
		}
		sp := tablespace{base: strings.TrimSuffix(f, ".ibd")}
		name := filepath.Base(sp.base)
		i := strings.Index(name, "#P#")
		if i < 0 {
			i = strings.Index(name, "#p#")
		}
		if i >= 0 {
			sp.partition = name[i+3:]
			if strings.Contains(strings.ToUpper(sp.partition), "#SP#") {
				return nil, fmt.Errorf("%s.%s: subpartitioned tables are not imported: import its files by hand", src.DB, src.Table)
			}
		}
		out = append(out, sp)
	}
	if len(out) == 0 {
		return nil, nil // not InnoDB: importFiles
	}
	if len(out) > 1 && slices.ContainsFunc(out, func(sp tablespace) bool { return sp.partition == "" }) {
		return nil, fmt.Errorf("%s.%s: a table's .ibd beside partitions' in %v", src.DB, src.Table, src.Files)
	}
	return out, nil
}

// fileName is the file name of a target's database or table name.
func fileName(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty table or database name")
	}
	return mysqlfilename.Encode(name)
}

func quoted(t Target) string { return sqlescape.EscapeID(t.DB) + "." + sqlescape.EscapeID(t.Table) }

// copyFile copies src to a new file dst (never over one: a file in the way
// is an error and stays as it was), synced, owned as owner is. A dst it
// created and could not finish is removed.
func copyFile(src, dst string, owner os.FileInfo) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o660)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(dst)
		}
	}()
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if st, ok := owner.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		if err := out.Chown(int(st.Uid), int(st.Gid)); err != nil {
			return err
		}
	}
	return out.Close()
}
