package tableimport

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"vitess.io/vitess/go/sqlescape"
)

// A table's triggers come back with it: read from the restored files
// (ReadTriggers, on the throwaway server), created on the table under its
// reserved name once its rows are in (so that the copy fires none of them),
// and carried to the target's name by its RENAME TABLE. MariaDB keeps them
// in a .TRG beside the .frm, which is never copied in; MySQL 8 in its data
// dictionary (not run here).

// Trigger is one trigger of a source table, as information_schema.TRIGGERS
// shows it.
type Trigger struct {
	Name, Timing, Event, Statement string
	Definer                        string // user@host
	SQLMode, Charset, Collation    string // the session it was created in
}

// ErrTriggerExists is returned when a trigger's name is taken in the
// target's database: trigger names are unique per database.
var ErrTriggerExists = errors.New("a trigger of that name exists in the live server")

// ReadTriggers returns the triggers of db.table on server, in the order
// they fire.
func ReadTriggers(ctx context.Context, server *sql.DB, db, table string) ([]Trigger, error) {
	rows, err := server.QueryContext(ctx, "SELECT TRIGGER_NAME, ACTION_TIMING, EVENT_MANIPULATION, ACTION_STATEMENT, DEFINER, SQL_MODE, "+
		"CHARACTER_SET_CLIENT, COLLATION_CONNECTION FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? "+
		"ORDER BY ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER", db, table)
	if err != nil {
		return nil, fmt.Errorf("reading the triggers of %s.%s: %w", db, table, err)
	}
	defer rows.Close()
	var out []Trigger
	for rows.Next() {
		var t Trigger
		if err := rows.Scan(&t.Name, &t.Timing, &t.Event, &t.Statement, &t.Definer, &t.SQLMode, &t.Charset, &t.Collation); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// triggersAbsent fails with ErrTriggerExists when a trigger of triggers is
// named in db already.
func triggersAbsent(ctx context.Context, conn *sql.Conn, db string, triggers []Trigger) error {
	for _, t := range triggers {
		var on string
		err := conn.QueryRowContext(ctx, "SELECT EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND TRIGGER_NAME = ?",
			db, t.Name).Scan(&on)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			return fmt.Errorf("trigger %s.%s (on %s): %w: a restored table's triggers keep their names; drop it first, or pass --skip-triggers to "+
				"restore the table without its triggers", db, t.Name, on, ErrTriggerExists)
		}
	}
	return nil
}

// createTriggers creates triggers on t, each in the session settings it
// was created in, which are put back after.
func createTriggers(ctx context.Context, conn *sql.Conn, t Target, triggers []Trigger) error {
	if len(triggers) == 0 {
		return nil
	}
	var mode, charset, collation string
	if err := conn.QueryRowContext(ctx, "SELECT @@SESSION.sql_mode, @@SESSION.character_set_client, @@SESSION.collation_connection").
		Scan(&mode, &charset, &collation); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION sql_mode = ?, character_set_client = ?, collation_connection = ?", mode, charset,
		collation)
	for _, tr := range triggers {
		if err := stmt(ctx, conn, "SET SESSION sql_mode = ?, character_set_client = ?, collation_connection = ?", tr.SQLMode, tr.Charset,
			tr.Collation); err != nil {
			return err
		}
		if err := stmt(ctx, conn, createTrigger(tr, t)); err != nil {
			return err
		}
	}
	return nil
}

// createTrigger is the statement that creates tr on t.
func createTrigger(tr Trigger, t Target) string {
	definer := ""
	if user, host, ok := cutLast(tr.Definer, "@"); ok {
		definer = "DEFINER=" + sqlescape.EscapeID(user) + "@" + sqlescape.EscapeID(host) + " "
	}
	return "CREATE " + definer + "TRIGGER " + sqlescape.EscapeID(t.DB) + "." + sqlescape.EscapeID(tr.Name) + " " + tr.Timing + " " + tr.Event +
		" ON " + quoted(t) + " FOR EACH ROW " + tr.Statement
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// triggerNotes say which triggers came back with the table.
func triggerNotes(triggers []Trigger) []string {
	if len(triggers) == 0 {
		return nil
	}
	names := make([]string, len(triggers))
	for i, t := range triggers {
		names[i] = t.Name
	}
	return []string{"its triggers restored with it: " + strings.Join(names, ", ")}
}
