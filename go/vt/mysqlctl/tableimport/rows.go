package tableimport

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/logutil"
)

// A table whose files an import cannot take (Refusal: FULLTEXT indexes, a
// hidden FTS_DOC_ID) comes back as rows: a throwaway server reads them from
// the restored files and they are inserted into the local table, created
// from the definition (so its FULLTEXT indexes are built by the inserts);
// ImportReplicated then copies the local table into the target as it does
// any other.

// LocalCopy makes src's local copy, the table local, on db without
// logging. ImportReplicated copies the target from it.
type LocalCopy func(ctx context.Context, db *sql.DB, src Source, local Target, opts Options, logger logutil.Logger) error

// fromFiles is the LocalCopy that imports src's files (Import).
func fromFiles(ctx context.Context, db *sql.DB, src Source, local Target, opts Options, logger logutil.Logger) error {
	opts.Unreplicated, opts.withoutForeignKeys = true, true
	src.Triggers = nil // the target gets them, once its rows are in
	_, err := Import(ctx, db, src, local, opts, logger)
	return err
}

// rowsBatchBytes bounds one INSERT of rows read from the throwaway server
// (the server's max_allowed_packet is 16 MiB by default).
const rowsBatchBytes = 4 << 20

// packetRoom is what an INSERT needs beside its values.
const packetRoom = 64 << 10

// maxPlaceholders is the most ? one prepared statement may hold.
const maxPlaceholders = 65535

// FromServer is the LocalCopy that reads src's rows from scratch, a
// throwaway server on the restored files (testrestore.Open), and inserts
// them into the local table in batches; then compares the two tables' row
// counts and CHECKSUM TABLE. Values travel in the binary protocol and as
// bytes (SET NAMES binary, time zone +00:00), so each comes back as stored.
func FromServer(scratch *sql.DB) LocalCopy {
	return func(ctx context.Context, db *sql.DB, src Source, local Target, opts Options, logger logutil.Logger) (err error) {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		defer discardSession(conn) // its character set, time zone and sql_mode are this copy's
		read, err := scratch.Conn(ctx)
		if err != nil {
			return err
		}
		defer read.Close()
		exec := func(c *sql.Conn, q string) error {
			if _, err := c.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
			return nil
		}
		if err := exec(conn, "SET SESSION sql_log_bin = 0, foreign_key_checks = 0"); err != nil {
			return err
		}
		create, _, err := definition(ctx, conn, src, local, Options{withoutForeignKeys: true})
		if err != nil {
			return err
		}
		if err := absent(ctx, conn, local); err != nil {
			return err
		}
		if err := exec(conn, create); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				_ = exec(conn, "DROP TABLE IF EXISTS "+quoted(local))
			}
		}()
		// The definition is created in the connection's own character set;
		// the rows travel as bytes.
		for _, q := range []string{"SET NAMES binary", "SET SESSION time_zone = '+00:00'",
			"SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION'"} {
			if err := exec(conn, q); err != nil {
				return err
			}
			if err := exec(read, q); err != nil {
				return err
			}
		}
		from := Target{src.DB, src.Table}
		plan, err := planCopy(ctx, read, from, src.Create)
		if err != nil {
			return fmt.Errorf("reading %s's columns from the restored files: %w", from, err)
		}
		if plan.versioned {
			if err := exec(conn, "SET SESSION system_versioning_insert_history = 1"); err != nil {
				return fmt.Errorf("a system-versioned table's history needs system_versioning_insert_history (MariaDB 10.11): %w", err)
			}
		}
		var maxPacket int64
		if err := conn.QueryRowContext(ctx, "SELECT @@SESSION.max_allowed_packet").Scan(&maxPacket); err != nil {
			return err
		}
		n, err := insertRows(ctx, read, conn, plan, from, local, maxPacket)
		if err != nil {
			return fmt.Errorf("loading %s's rows from the restored files into %s: %w", from, local, err)
		}
		logger.Infof("restore-table: %d rows of %s read from the restored files into %s", n, from, local)
		return sameAcross(ctx, read, conn, plan, from, local)
	}
}

// insertRows reads from's rows on read (a prepared statement: the binary
// protocol, exact floats) and inserts them into to on conn in batches.
// A row larger than the live server's max_allowed_packet (less room for
// the statement) fails before it is sent, naming its size and the setting.
func insertRows(ctx context.Context, read, conn *sql.Conn, p copyPlan, from, to Target, maxPacket int64) (int64, error) {
	batchBytes := min(rowsBatchBytes, maxPacket/2)
	cols := strings.Join(p.columns, ", ")
	q := "SELECT " + cols + " FROM " + quoted(from)
	if p.versioned {
		q += " FOR SYSTEM_TIME ALL"
	}
	stmt, err := read.PrepareContext(ctx, q)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	rows, err := stmt.QueryContext(ctx)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	width := len(p.columns)
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
	head := "INSERT INTO " + quoted(to) + " (" + cols + ") VALUES "
	var args []any
	var size, total int64
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		n := len(args) / width
		if _, err := conn.ExecContext(ctx, head+strings.TrimSuffix(strings.Repeat(row+", ", n), ", "), args...); err != nil {
			return err
		}
		total += int64(n)
		args, size = args[:0], 0
		return nil
	}
	vals := make([]any, width)
	ptrs := make([]any, width)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return total, err
		}
		var rowSize int64
		for _, v := range vals {
			if b, ok := v.([]byte); ok {
				rowSize += int64(len(b))
			}
			rowSize += 8
		}
		if rowSize+packetRoom > maxPacket {
			return total, fmt.Errorf("row %d of %s is %d bytes, more than the live server's max_allowed_packet (%d) lets one INSERT carry: raise it "+
				"(SET GLOBAL max_allowed_packet, for new connections) above %d and run again", total+int64(len(args)/width)+1, from, rowSize, maxPacket,
				rowSize+packetRoom)
		}
		if size+rowSize > batchBytes {
			if err := flush(); err != nil {
				return total, err
			}
		}
		size += rowSize
		args = append(args, vals...)
		if size >= batchBytes || len(args)+width > maxPlaceholders || len(args)/width >= copyBatchRows {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return total, err
	}
	return total, flush()
}

// sameAcross checks that to (on conn) holds from's rows (on read): their
// counts, and their CHECKSUM TABLE where no generated column makes it
// differ between equal tables.
func sameAcross(ctx context.Context, read, conn *sql.Conn, p copyPlan, from, to Target) error {
	all := ""
	if p.versioned {
		all = " FOR SYSTEM_TIME ALL"
	}
	var a, b int64
	if err := read.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoted(from)+all).Scan(&a); err != nil {
		return err
	}
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoted(to)+all).Scan(&b); err != nil {
		return err
	}
	if a != b {
		return fmt.Errorf("%s holds %d rows after the load, the restored files %d", to, b, a)
	}
	if p.generated {
		return nil
	}
	sum := func(c *sql.Conn, t Target) (string, error) {
		var name string
		var v sql.NullString
		err := c.QueryRowContext(ctx, "CHECKSUM TABLE "+quoted(t)).Scan(&name, &v)
		return v.String, err
	}
	s1, err := sum(read, from)
	if err != nil {
		return err
	}
	s2, err := sum(conn, to)
	if err != nil {
		return err
	}
	if s1 != s2 {
		return fmt.Errorf("%s's CHECKSUM TABLE %s after the load differs from the restored files' %s", to, s2, s1)
	}
	return nil
}

// discardSession keeps a connection whose session settings were changed
// from going back to its pool.
func discardSession(conn *sql.Conn) { _ = conn.Raw(func(any) error { return driver.ErrBadConn }) }
