package tableimport

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"vitess.io/vitess/go/sqlescape"
	"vitess.io/vitess/go/vt/logutil"
)

// A MariaDB SEQUENCE is a one-row table the server keeps its own way: its
// rows cannot be copied in (INSERT ... SELECT into a sequence gives another
// table), so it is made as one: CREATE SEQUENCE from its definition under
// the reserved work name, SETVAL to where the backup's sequence was (the
// next value it had not handed out, as after a restart of the server that
// took the backup), and RENAME TABLE to the target, through the binary log
// unless Options.Unreplicated. A db.* run makes its sequences first, before
// the tables whose defaults use them.

// Sequence is a source sequence's state, read from the restored files.
type Sequence struct {
	Create string // SHOW CREATE SEQUENCE
	Next   int64  // next_not_cached_value
	Round  int64  // cycle_count
}

// ReadSequence returns db.table's sequence state on server; nil when the
// table is not a sequence.
func ReadSequence(ctx context.Context, server *sql.DB, db, table string) (*Sequence, error) {
	var typ string
	err := server.QueryRowContext(ctx, "SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, table).Scan(&typ)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && typ != "SEQUENCE") {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	name := sqlescape.EscapeID(db) + "." + sqlescape.EscapeID(table)
	var s Sequence
	var n string
	if err := server.QueryRowContext(ctx, "SHOW CREATE SEQUENCE "+name).Scan(&n, &s.Create); err != nil {
		return nil, fmt.Errorf("reading sequence %s.%s: %w", db, table, err)
	}
	if err := server.QueryRowContext(ctx, "SELECT next_not_cached_value, cycle_count FROM "+name).Scan(&s.Next, &s.Round); err != nil {
		return nil, fmt.Errorf("reading sequence %s.%s: %w", db, table, err)
	}
	return &s, nil
}

// ImportSequence makes src (src.Sequence set) as to.
func ImportSequence(ctx context.Context, db *sql.DB, src Source, to Target, opts Options, logger logutil.Logger) (res Result, err error) {
	seq := src.Sequence
	head := "CREATE SEQUENCE " + sqlescape.EscapeID(src.Table) + " "
	if seq == nil || !strings.HasPrefix(seq.Create, head) {
		return res, fmt.Errorf("%s.%s: not a sequence whose definition starts with %q", src.DB, src.Table, head)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return res, err
	}
	defer conn.Close()
	defer restoreSession(conn)
	work := workName(to)
	if err := logged(ctx, conn, !opts.Unreplicated); err != nil {
		return res, err
	}
	for _, t := range []Target{to, work} {
		if err := absent(ctx, conn, t); err != nil {
			return res, err
		}
	}
	if err := stmt(ctx, conn, "CREATE SEQUENCE "+quoted(work)+" "+seq.Create[len(head):]); err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			err = dropCopy(ctx, db, work, err)
		}
	}()
	// SETVAL takes literals only (no placeholders).
	if err = stmt(ctx, conn, fmt.Sprintf("SELECT SETVAL(%s, %d, 0, %d)", quoted(work), seq.Next, seq.Round)); err != nil {
		return res, err
	}
	var next int64
	if err = conn.QueryRowContext(ctx, "SELECT next_not_cached_value FROM "+quoted(work)).Scan(&next); err != nil {
		return res, err
	}
	if next != seq.Next {
		return res, fmt.Errorf("sequence %s: next value %d after SETVAL, the backup's %d", work, next, seq.Next)
	}
	if err = rename(ctx, conn, work, to); err != nil {
		return res, err
	}
	return Result{Rows: 1, Check: "OK", Notes: []string{fmt.Sprintf("a sequence: its next value is %d, the first the backup's had not handed out", next)}}, nil
}
