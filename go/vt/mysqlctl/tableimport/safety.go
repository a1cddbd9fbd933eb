package tableimport

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"vitess.io/vitess/go/sqlescape"
)

// fulltextKey is a FULLTEXT index line of SHOW CREATE TABLE.
var fulltextKey = regexp.MustCompile("(?m)^\\s*FULLTEXT (?:KEY|INDEX) `((?:[^`]|``)*)`")

// innodbDefinition matches the table options of an InnoDB definition.
var innodbDefinition = regexp.MustCompile(`\) ENGINE=InnoDB\b`)

// Refusal says why a table's files cannot be imported safely, before
// anything is: such a table comes back as rows (FromServer).
func Refusal(src Source) error { return importable(src) }

// importable refuses, before anything is imported, a table an import
// cannot bring back whole: an InnoDB one with FULLTEXT indexes, whose auxiliary tables
// (FTS_*) an import does not carry. Tried on MariaDB 10.11: IMPORT
// TABLESPACE warned "Index ... not found or corrupt", a full-text query
// failed (ERROR 1764) and the first INSERT stopped the server on an InnoDB
// assertion.
func importable(src Source) error {
	if !innodbDefinition.MatchString(src.Create) {
		return nil // MyISAM's FULLTEXT index is in its .MYI, which is copied whole
	}
	if m := fulltextKey.FindAllStringSubmatch(src.Create, -1); len(m) > 0 {
		names := make([]string, len(m))
		for i, k := range m {
			names[i] = k[1]
		}
		return fmt.Errorf("%s.%s has FULLTEXT indexes (%s), whose auxiliary tables an import cannot bring back (the imported table would crash the "+
			"server on its next write); its rows are loaded instead (FromServer; restore-table --into-mysql/--into-tablet does)",
			src.DB, src.Table, strings.Join(names, ", "))
	}
	if hiddenDocID(src) {
		return fmt.Errorf("%s.%s has a hidden FTS_DOC_ID column (left by a FULLTEXT index dropped since), which a table created from its definition "+
			"cannot have: imported into a table made to match (a FULLTEXT index created and dropped again), MariaDB 10.11 stopped on the next INSERT; "+
			"its rows are loaded instead (FromServer; restore-table --into-mysql/--into-tablet does)", src.DB, src.Table)
	}
	return nil
}

// cfgDocIDColumn is how a .cfg names a column FTS_DOC_ID: the name's length
// with its NUL (4 bytes, big-endian), the name, the NUL (MariaDB and MySQL
// row0quiesce.cc, row_quiesce_write_table).
var cfgDocIDColumn = []byte("\x00\x00\x00\x0bFTS_DOC_ID\x00")

// hiddenDocID reports whether src's tablespaces hold an FTS_DOC_ID column
// its definition does not declare: InnoDB's hidden one.
func hiddenDocID(src Source) bool {
	if strings.Contains(src.Create, "`FTS_DOC_ID`") {
		return false
	}
	for _, f := range src.Files {
		if !strings.HasSuffix(f, ".cfg") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src.Dir, filepath.FromSlash(f)))
		if err == nil && bytes.Contains(b, cfgDocIDColumn) {
			return true
		}
	}
	return false
}

// unreplicated refuses a server that writes a binary log, or that replicas
// or binlog streams (Vitess's VReplication, CDC) read: an imported table is
// not in the binary log, so it exists on this server only, and the first
// logged statement on it stops every replica ("Table ... doesn't exist").
// The binary log, not only the readers of the moment: a replica that ran
// STOP SLAVE holds no binlog dump connection, and reads the statement when
// it starts again (every Vitess primary logs).
func unreplicated(ctx context.Context, conn *sql.Conn) error {
	var logBin, readers int
	err := conn.QueryRowContext(ctx, "SELECT @@GLOBAL.log_bin, (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%')").
		Scan(&logBin, &readers)
	if err != nil {
		return fmt.Errorf("cannot tell whether replicas read the live server: %w", err)
	}
	if logBin == 0 && readers == 0 {
		return nil
	}
	return fmt.Errorf("%w (log_bin=%s, %d binlog dump connections now; a stopped replica holds none): an imported table is not replicated and "+
		"exists on this server only, and a later statement on it that is logged stops every replica; import into a server that writes no binary "+
		"log, or pass --unreplicated for a table meant for this server only (docs/table-restore.md)", ErrReplicated, onOff(logBin), readers)
}

func onOff(v int) string {
	if v != 0 {
		return "ON"
	}
	return "OFF"
}

// noWarnings fails when the statement just run left warnings or errors.
func noWarnings(ctx context.Context, conn *sql.Conn, what string) error {
	rows, err := conn.QueryContext(ctx, "SHOW WARNINGS")
	if err != nil {
		return err
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var level, msg string
		var code int
		if err := rows.Scan(&level, &code, &msg); err != nil {
			return err
		}
		msgs = append(msgs, fmt.Sprintf("%s %d: %s", level, code, msg))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s left warnings, so the table may not be whole: %s", what, strings.Join(msgs, "; "))
	}
	return nil
}

// checkIndexes reads the table through each of its B-tree indexes and
// fails where one does not hold every row: CHECK TABLE alone passed an
// import whose index was unusable.
func checkIndexes(ctx context.Context, conn *sql.Conn, to Target, rows int64) error {
	q, err := conn.QueryContext(ctx, "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND "+
		"INDEX_TYPE = 'BTREE'", to.DB, to.Table)
	if err != nil {
		return err
	}
	var names []string
	for q.Next() {
		var n string
		if err := q.Scan(&n); err != nil {
			q.Close()
			return err
		}
		names = append(names, n)
	}
	q.Close()
	if err := q.Err(); err != nil {
		return err
	}
	for _, n := range names {
		var count int64
		stmt := "SELECT COUNT(*) FROM " + quoted(to) + " FORCE INDEX (" + sqlescape.EscapeID(n) + ")"
		if err := conn.QueryRowContext(ctx, stmt).Scan(&count); err != nil {
			return fmt.Errorf("index %s of %s is not usable: %w", n, to, err)
		}
		if count != rows {
			return fmt.Errorf("index %s of %s holds %d rows, the table %d", n, to, count, rows)
		}
	}
	return nil
}

// restoreSession puts back the session settings an import changed, or
// keeps the connection from its pool when it cannot.
func restoreSession(conn *sql.Conn) {
	if _, err := conn.ExecContext(context.Background(), "SET SESSION sql_log_bin = DEFAULT, foreign_key_checks = DEFAULT"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// ErrReplica is returned for a live server that is a replica, or
// read-only, which a restore must not write to.
var ErrReplica = errors.New("the live server must not be written to")

// Writable refuses a server that replicates from another (a replication
// channel is configured, running or not): a restore would write
// transactions under its own server id, which its primary's next write
// conflicts with (under gtid_strict_mode the replica stops, error 1950).
// It refuses a read_only (or super_read_only) server too, which a user with
// SUPER could still write to, unless standalone: the operator says it
// replicates from no one and is read-only only to keep clients out.
func Writable(ctx context.Context, db *sql.DB, standalone bool) error {
	channels, err := replicationChannels(ctx, db)
	if err != nil {
		return fmt.Errorf("cannot tell whether the live server is a replica: %w", err)
	}
	if len(channels) > 0 {
		return fmt.Errorf("%w: it is a replica (replicating from %s): a restore would write transactions under its own server id, which its "+
			"primary's next write conflicts with; restore into its primary, whose replicas get the table through the binary log", ErrReplica,
			strings.Join(channels, ", "))
	}
	var readOnly int
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.read_only").Scan(&readOnly); err != nil {
		return err
	}
	var superReadOnly sql.NullInt64 // MySQL only
	_ = db.QueryRowContext(ctx, "SELECT @@GLOBAL.super_read_only").Scan(&superReadOnly)
	if (readOnly != 0 || superReadOnly.Int64 != 0) && !standalone {
		return fmt.Errorf("%w: it is read-only (read_only=%s, super_read_only=%s), as Vitess keeps every tablet but the primary: restore into "+
			"the shard's primary; pass --standalone only for a server that replicates from no one and is read-only to keep clients out", ErrReplica,
			onOff(readOnly), onOff(int(superReadOnly.Int64)))
	}
	return nil
}

// replicationChannels names the replication channels configured on db,
// each as name (host:port): SHOW ALL SLAVES STATUS on MariaDB, SHOW
// REPLICA STATUS on MySQL 8 (written from its manual, not run here).
func replicationChannels(ctx context.Context, db *sql.DB) ([]string, error) {
	cols, rows, err := queryText(ctx, db, "SHOW ALL SLAVES STATUS")
	if err != nil {
		if cols, rows, err = queryText(ctx, db, "SHOW REPLICA STATUS"); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, row := range rows {
		v := map[string]string{}
		for i, c := range cols {
			v[c] = row[i]
		}
		name := cmp.Or(v["Connection_name"], v["Channel_Name"])
		addr := net.JoinHostPort(cmp.Or(v["Master_Host"], v["Source_Host"]), cmp.Or(v["Master_Port"], v["Source_Port"]))
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s", quotedChannel(name), addr)))
	}
	return out, nil
}

func quotedChannel(name string) string {
	if name == "" {
		return "the default channel,"
	}
	return "channel '" + name + "',"
}
