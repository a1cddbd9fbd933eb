package tableimport

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ErrNotAllowed is returned when the live server refuses a statement an
// import needs: to its user, or for its own state or settings.
var ErrNotAllowed = errors.New("the live server refuses what a restore needs")

// Probe runs, before anything is downloaded, the kinds of statement an
// import into db runs, on a probe table of a reserved name that it drops
// again: SET sql_log_bin (SUPER or BINLOG ADMIN), SET GLOBAL
// innodb_max_dirty_pages_pct to its own value (SUPER), CREATE, INSERT,
// ALTER, RENAME and DROP, unlogged. (Not CREATE TRIGGER: which tables have
// triggers is known after the download, and a user need not be allowed
// them otherwise.) The server itself says what its user may do, roles included;
// a refusal fails with ErrNotAllowed naming the statement. Call it under
// Claim: a probe table a stopped run left is Settle's.
func Probe(ctx context.Context, db *sql.DB, in string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer restoreSession(conn)
	probe := reserved("probe", Target{DB: in})
	renamed := reserved("probe2", Target{DB: in})
	for _, t := range []Target{probe, renamed} {
		if err := absent(ctx, conn, t); err != nil {
			return err
		}
	}
	qs := []string{
		"SET SESSION sql_log_bin = 0",
		"SET GLOBAL innodb_max_dirty_pages_pct = @@GLOBAL.innodb_max_dirty_pages_pct",
		"CREATE TABLE " + quoted(probe) + " (id INT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO " + quoted(probe) + " VALUES (1)",
		"ALTER TABLE " + quoted(probe) + " ADD COLUMN v INT",
	}
	qs = append(qs, "RENAME TABLE "+quoted(probe)+" TO "+quoted(renamed))
	var failed error
	for _, q := range qs {
		if failed = stmt(ctx, conn, q); failed != nil {
			break
		}
	}
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	for _, t := range []Target{probe, renamed} {
		if err := stmt(cleanup, conn, "DROP TABLE IF EXISTS "+quoted(t)); err != nil && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		return fmt.Errorf("%w: %w: nothing was downloaded", ErrNotAllowed, failed)
	}
	return nil
}
