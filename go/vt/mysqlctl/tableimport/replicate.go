package tableimport

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"vitess.io/vitess/go/sqlescape"
	"vitess.io/vitess/go/vt/logutil"
)

// On a server that writes a binary log, an imported table would exist on
// that server only (replicas have no files to import). So the table is
// imported under a local name without logging, then created under its
// target name and filled from the local one through the binary log, row by
// row in batches, and the local one dropped without logging: every replica
// gets the table and its rows as any other write.

// copyBatchRows is how many rows one logged INSERT ... SELECT copies.
const copyBatchRows = 2000

// LogsBinary reports whether the server writes a binary log.
func LogsBinary(ctx context.Context, db *sql.DB) (bool, error) {
	var on int
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.log_bin").Scan(&on); err != nil {
		return false, fmt.Errorf("cannot tell whether the live server writes a binary log: %w", err)
	}
	return on != 0, nil
}

// periodColumns names a system-versioned table's explicit row start and end
// columns in its definition; without them they are row_start and row_end.
var periodColumns = regexp.MustCompile("PERIOD FOR SYSTEM_TIME \\(`((?:[^`]|``)*)`, `((?:[^`]|``)*)`\\)")

// copyPlan is how a local table's rows are copied: the columns written
// (every stored one, INVISIBLE ones included, generated ones left to the
// server), the primary key to batch by (none: one statement), and a
// system-versioned table's history.
type copyPlan struct {
	columns   []string // quoted
	key       []string // quoted, primary key order
	versioned bool
	generated bool
}

func planCopy(ctx context.Context, conn *sql.Conn, local Target, create string) (copyPlan, error) {
	var p copyPlan
	rows, err := conn.QueryContext(ctx, "SELECT COLUMN_NAME, IS_GENERATED, COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND "+
		"TABLE_NAME = ? ORDER BY ORDINAL_POSITION", local.DB, local.Table)
	if err != nil {
		return p, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, generated, key string
		if err := rows.Scan(&name, &generated, &key); err != nil {
			return p, err
		}
		if generated == "NEVER" {
			p.columns = append(p.columns, sqlescape.EscapeID(name))
		} else {
			p.generated = true
		}
	}
	if err := rows.Err(); err != nil {
		return p, err
	}
	var typ string
	if err := conn.QueryRowContext(ctx, "SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", local.DB,
		local.Table).Scan(&typ); err != nil {
		return p, err
	}
	if p.versioned = typ == "SYSTEM VERSIONED"; p.versioned {
		start, end := "row_start", "row_end"
		if m := periodColumns.FindStringSubmatch(create); m != nil {
			start, end = strings.ReplaceAll(m[1], "``", "`"), strings.ReplaceAll(m[2], "``", "`")
		}
		p.columns = append(p.columns, sqlescape.EscapeID(start), sqlescape.EscapeID(end))
		return p, nil // history rows share a key: one statement
	}
	keys, err := conn.QueryContext(ctx, "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND "+
		"INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX", local.DB, local.Table)
	if err != nil {
		return p, err
	}
	defer keys.Close()
	for keys.Next() {
		var name string
		if err := keys.Scan(&name); err != nil {
			return p, err
		}
		p.key = append(p.key, sqlescape.EscapeID(name))
	}
	return p, keys.Err()
}

// Replicate copies local (src imported under that name, unlogged) into to
// through the binary log (row-based): it creates the copy under its
// reserved name (CopyName) from src's definition, copies the rows in
// batches by primary key, a system-versioned table with its history,
// checks the copy against local, creates src's triggers on it, and renames
// it to to, all logged; then drops local without logging. On failure the
// copy is dropped (through the log, so replicas drop it too) and local is
// left for the caller to drop. With opts.Resume the copy a stopped run
// left goes on after its last row. With opts.Unreplicated nothing is
// logged (a table for this server only).
func Replicate(ctx context.Context, db *sql.DB, src Source, local, to Target, opts Options, logger logutil.Logger) (res Result, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return res, err
	}
	defer conn.Close()
	defer restoreSession(conn)
	defer conn.ExecContext(context.Background(), "SET SESSION binlog_format = DEFAULT")
	plan, err := planCopy(ctx, conn, local, src.Create)
	if err != nil {
		return res, fmt.Errorf("reading %s's columns: %w", local, err)
	}
	def, notes, err := definition(ctx, conn, src, to, opts)
	if err != nil {
		return res, err
	}
	if err := triggersAbsent(ctx, conn, to.DB, src.Triggers); err != nil {
		return res, err
	}
	copied := CopyName(to)
	if err := logged(ctx, conn, !opts.Unreplicated, "SET SESSION binlog_format = ROW", "SET SESSION foreign_key_checks = 0"); err != nil {
		return res, err
	}
	if err := absent(ctx, conn, to); err != nil {
		return res, err
	}
	if !opts.Resume {
		if err := stmt(ctx, conn, renamedTo(def, to, copied)); err != nil {
			return res, err
		}
	}
	defer func() {
		if err != nil {
			err = dropCopy(ctx, db, copied, err)
		}
	}()
	if err = copyRows(ctx, conn, plan, local, copied, opts.Pace, logger); err != nil {
		return res, err
	}
	if err = sameRows(ctx, conn, plan, local, copied); err != nil {
		return res, err
	}
	if res, err = verify(ctx, conn, copied); err != nil {
		return res, err
	}
	if err = createTriggers(ctx, conn, copied, src.Triggers); err != nil {
		return res, err
	}
	if err = rename(ctx, conn, copied, to); err != nil {
		return res, err
	}
	res.Notes = append(notes, triggerNotes(src.Triggers)...)
	// The table is restored: its local copy is dropped even if the run is
	// stopped now, and where that fails the next run drops it.
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	if err := logged(cleanup, conn, false, "DROP TABLE "+quoted(local)); err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("its local copy %s is left (%v): the next run for %s drops it", local, err, to))
	}
	return res, nil
}

// logged sets whether conn's statements go to the binary log, then runs
// qs.
func logged(ctx context.Context, conn *sql.Conn, on bool, qs ...string) error {
	logBin := "SET SESSION sql_log_bin = 1"
	if !on {
		logBin = "SET SESSION sql_log_bin = 0"
	}
	for _, q := range append([]string{logBin}, qs...) {
		if err := stmt(ctx, conn, q); err != nil {
			return err
		}
	}
	return nil
}

// dropCopy drops a failed copy through the log (replicas have it), on a
// connection and a context of its own: the run's may be cancelled, and a
// connection whose statement was cancelled is closed by the driver (the
// server finishes that statement; the DROP waits for it). It returns cause
// with what it checked.
func dropCopy(ctx context.Context, db *sql.DB, copied Target, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	err := Drop(ctx, db, copied, true)
	if err == nil {
		err = Absent(ctx, db, copied)
	}
	if err != nil {
		return fmt.Errorf("%w; dropping its copy failed too (%v): %s may be left, which the next run drops or, with --resume, finishes", cause, err,
			copied)
	}
	return cause
}

// copyRows copies local into to in logged batches, each followed by pace
// (when set). Rows already in to (a stopped copy's) stay: the copy goes on
// after the last by primary key; a table copied in one statement (no
// primary key, system-versioned) is whole once it holds any.
func copyRows(ctx context.Context, conn *sql.Conn, p copyPlan, local, to Target, pace func(context.Context) error, logger logutil.Logger) error {
	cols := strings.Join(p.columns, ", ")
	from := quoted(local)
	if p.versioned {
		if _, err := conn.ExecContext(ctx, "SET SESSION system_versioning_insert_history = 1"); err != nil {
			return fmt.Errorf("a system-versioned table's history needs system_versioning_insert_history (MariaDB 10.11): %w", err)
		}
		defer conn.ExecContext(context.Background(), "SET SESSION system_versioning_insert_history = DEFAULT")
		from += " FOR SYSTEM_TIME ALL"
	}
	var copied int64
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoted(to)).Scan(&copied); err != nil {
		return err
	}
	insert := "INSERT INTO " + quoted(to) + " (" + cols + ") SELECT " + cols + " FROM " + from
	if len(p.key) == 0 {
		if copied > 0 {
			return nil
		}
		return stmt(ctx, conn, insert)
	}
	key := "(" + strings.Join(p.key, ", ") + ")"
	vars := make([]string, len(p.key))
	desc := make([]string, len(p.key))
	for i, k := range p.key {
		vars[i] = fmt.Sprintf("@vtfifo_k%d", i)
		desc[i] = k + " DESC"
	}
	order := " ORDER BY " + strings.Join(p.key, ", ") + fmt.Sprintf(" LIMIT %d", copyBatchRows)
	last := "SELECT " + strings.Join(p.key, ", ") + " INTO " + strings.Join(vars, ", ") + " FROM " + quoted(to) + " ORDER BY " + strings.Join(desc, ", ") +
		" LIMIT 1"
	after := copied > 0
	if after {
		logger.Infof("restore-table: %s holds %d rows of a stopped copy: copying the rest", to, copied)
	}
	for batch := 1; ; batch++ {
		q := insert + order
		if after {
			if err := stmt(ctx, conn, last); err != nil {
				return err
			}
			q = insert + " WHERE " + key + " > (" + strings.Join(vars, ", ") + ")" + order
		}
		r, err := execResult(ctx, conn, q)
		if err != nil {
			return fmt.Errorf("copying %s into %s: %w", local, to, err)
		}
		n, _ := r.RowsAffected()
		copied += n
		if n < copyBatchRows {
			logger.Infof("restore-table: %d rows of %s copied into %s through the binary log", copied, local, to)
			return nil
		}
		after = true
		if batch%50 == 0 {
			logger.Infof("restore-table: %d rows copied into %s so far", copied, to)
		}
		if pace != nil {
			if err := pace(ctx); err != nil {
				return fmt.Errorf("copying %s into %s: %w", local, to, err)
			}
		}
	}
}

// sameRows checks that to holds local's rows: their counts, and their
// CHECKSUM TABLE where no generated column makes it differ between equal
// tables.
func sameRows(ctx context.Context, conn *sql.Conn, p copyPlan, local, to Target) error {
	all := ""
	if p.versioned {
		all = " FOR SYSTEM_TIME ALL"
	}
	var a, b int64
	if err := conn.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM "+quoted(local)+all+"), (SELECT COUNT(*) FROM "+quoted(to)+all+")").
		Scan(&a, &b); err != nil {
		return err
	}
	if a != b {
		return fmt.Errorf("%s holds %d rows after the copy, %s %d", to, b, local, a)
	}
	if p.generated {
		return nil
	}
	sums := map[string]string{}
	rows, err := conn.QueryContext(ctx, "CHECKSUM TABLE "+quoted(local)+", "+quoted(to))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var sum sql.NullString
		if err := rows.Scan(&name, &sum); err != nil {
			return err
		}
		sums[name] = sum.String
	}
	if s1, s2 := sums[local.DB+"."+local.Table], sums[to.DB+"."+to.Table]; s1 != s2 {
		return fmt.Errorf("%s's CHECKSUM TABLE %s after the copy differs from the imported table's %s", to, s2, s1)
	}
	return rows.Err()
}

// ImportReplicated imports src as to on a server that writes a binary log:
// its local copy made under LocalName(to) without logging (opts.Local:
// Import of its files by default), then copied into to through the log
// (Replicate). On failure nothing of it is left: the local table is
// dropped without logging, the copy through the log. With opts.Resume (the
// caller found the local copy and the copy a stopped run left, Settle),
// the copy goes on.
func ImportReplicated(ctx context.Context, db *sql.DB, src Source, to Target, opts Options, logger logutil.Logger) (Result, error) {
	if logger == nil {
		logger = logutil.NewConsoleLogger()
	}
	local := LocalName(to)
	if !opts.Resume {
		if err := replicatedRoom(ctx, db, src, !opts.Unreplicated); err != nil {
			return Result{}, err
		}
		makeLocal := opts.Local
		if makeLocal == nil {
			makeLocal = fromFiles
		}
		if err := makeLocal(ctx, db, src, local, opts, logger); err != nil {
			return Result{}, err
		}
	}
	res, err := Replicate(ctx, db, src, local, to, opts, logger)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
		defer cancel()
		if derr := dropUnlogged(ctx, db, local); derr != nil {
			return res, fmt.Errorf("%w; dropping its local copy failed too (%v): %s may be left, which the next run for %s drops", err, derr, local, to)
		}
	}
	return res, err
}

// replicatedRoom is roomFor of an ImportReplicated: the table's bytes twice
// in the data directory (the local copy, the copy through the log) and,
// logged, once in the binary log.
func replicatedRoom(ctx context.Context, db *sql.DB, src Source, logged bool) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var dataDir string
	if err := conn.QueryRowContext(ctx, "SELECT @@datadir").Scan(&dataDir); err != nil {
		return err
	}
	return roomFor(ctx, conn, dataDir, src, 2, logged)
}

// dropUnlogged drops a table that only this server has, without logging.
func dropUnlogged(ctx context.Context, db *sql.DB, t Target) error { return Drop(ctx, db, t, false) }

// Drop drops a table an import created: through the binary log where it
// was made through it (ImportReplicated), so replicas drop it too, else
// without logging.
func Drop(ctx context.Context, db *sql.DB, t Target, logged bool) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer restoreSession(conn)
	if !logged {
		if _, err := conn.ExecContext(ctx, "SET SESSION sql_log_bin = 0"); err != nil {
			return err
		}
	}
	_, err = conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+quoted(t))
	return err
}
