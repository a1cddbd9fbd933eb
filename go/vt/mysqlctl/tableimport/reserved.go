package tableimport

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// An import never builds a table under its target's name: it builds it
// under a reserved name, checks it, and the target's name appears by one
// atomic statement at the end (RENAME TABLE). Interrupted anywhere (the
// server killed, the command killed, Ctrl-C, a timeout, a full disk), the
// live server holds either the whole table or, under the target's database,
// only tables of the reserved prefix _vtfifo_, which the next run for that
// target finds (Leftovers) and finishes (--resume, where a copy was under
// way) or drops (Undo), saying which. Each reserved name is derived from
// the target's, short whatever the target's length (a table name is at
// most 64 characters):
//
//	_vtfifo_work_<h>   the table built from the files (Import), renamed to the target
//	_vtfifo_part_<h>   a MariaDB partition imported before its EXCHANGE into the work table
//	_vtfifo_local_<h>  the unlogged local copy a copy through the binary log reads
//	_vtfifo_copy_<h>   the logged copy (ImportReplicated), renamed to the target through the log
//	_vtfifo_probe_<h>  (and probe2) the table Probe checks the user's privileges on, per database
//
// A run holds a named lock per target (Claim) while it works, so the
// tables of a live run are never taken for a stopped run's.

// ReservedPrefix begins the name of every table an import makes before its
// last step.
const ReservedPrefix = "_vtfifo_"

// reserved is the table of role (work, part, local, copy) for to.
func reserved(role string, to Target) Target {
	sum := sha256.Sum256([]byte(to.Table))
	return Target{DB: to.DB, Table: ReservedPrefix + role + "_" + hex.EncodeToString(sum[:6])}
}

// LocalName is the name a table is imported under, unlogged, before a copy
// through the binary log reads it into to.
func LocalName(to Target) Target { return reserved("local", to) }

// CopyName is the name the copy through the binary log is built under
// before it is renamed to to.
func CopyName(to Target) Target { return reserved("copy", to) }

func workName(to Target) Target { return reserved("work", to) }
func partName(to Target) Target { return reserved("part", to) }

// reservedOf are every reserved table a run for to may leave, the copy
// last (it goes on where it can).
func reservedOf(to Target) []Target {
	local := LocalName(to)
	probeIn := Target{DB: to.DB}
	return []Target{workName(to), partName(to), workName(local), partName(local), reserved("probe", probeIn), reserved("probe2", probeIn), local,
		CopyName(to)}
}

// Leftovers are the reserved tables of to that the live server holds: what
// a stopped run for to left. Call it under Claim.
func Leftovers(ctx context.Context, db *sql.DB, to Target) ([]Target, error) {
	var out []Target
	for _, t := range reservedOf(to) {
		err := Absent(ctx, db, t)
		switch {
		case errors.Is(err, ErrExists):
			out = append(out, t)
		case err != nil:
			return nil, err
		}
	}
	return out, nil
}

// Resumable reports whether leftovers are a copy through the binary log
// that can go on: its local copy beside the copy.
func Resumable(to Target, leftovers []Target) bool {
	var local, copied bool
	others := 0
	for _, t := range leftovers {
		switch {
		case t == LocalName(to):
			local = true
		case t == CopyName(to):
			copied = true
		case !strings.HasPrefix(t.Table, ReservedPrefix+"probe"):
			others++ // a work table: the local copy was being made again
		}
	}
	return local && copied && others == 0
}

// Undo drops leftovers (Leftovers) once no connection runs a statement on
// them (a killed client's last statement runs on in the server): the copy
// through the binary log, so that replicas drop it too, the others without
// logging. It returns their names.
func Undo(ctx context.Context, db *sql.DB, to Target, leftovers []Target) (string, error) {
	if len(leftovers) == 0 {
		return "", nil
	}
	if err := quiet(ctx, db, leftovers, stoppedStatementWait); err != nil {
		return "", err
	}
	names := make([]string, len(leftovers))
	for i, t := range leftovers {
		if err := Drop(ctx, db, t, t == CopyName(to)); err != nil {
			return "", fmt.Errorf("dropping %s, left by a stopped run: %w", t, err)
		}
		names[i] = t.String()
	}
	files, err := removeReservedFiles(ctx, db, to)
	if err != nil {
		return "", err
	}
	if len(files) > 0 {
		names = append(names, "the files "+strings.Join(files, ", "))
	}
	return strings.Join(names, ", "), nil
}

// removeReservedFiles removes, from to's database directory, the files of
// reserved names whose table the server does not have: what an import
// copied in or the server left (a .cfg after IMPORT, a .frm not yet
// linked) when it was stopped. It returns their names.
func removeReservedFiles(ctx context.Context, db *sql.DB, to Target) ([]string, error) {
	var dataDir string
	if err := db.QueryRowContext(ctx, "SELECT @@datadir").Scan(&dataDir); err != nil {
		return nil, err
	}
	dbFile, err := fileName(to.DB)
	if err != nil {
		return nil, err
	}
	removed, err := removeTriggerNames(filepath.Join(dataDir, dbFile), func(table string) bool {
		t := Target{to.DB, table}
		return slices.Contains(reservedOf(to), t) && Absent(ctx, db, t) == nil
	})
	if err != nil {
		return removed, err
	}
	for _, t := range reservedOf(to) {
		if err := Absent(ctx, db, t); err != nil {
			if errors.Is(err, ErrExists) {
				continue
			}
			return removed, err
		}
		file, err := fileName(t.Table)
		if err != nil {
			return removed, err
		}
		for _, pattern := range []string{file + ".*", file + "#*"} {
			m, _ := filepath.Glob(filepath.Join(dataDir, dbFile, pattern))
			for _, p := range m {
				if err := os.Remove(p); err != nil {
					return removed, fmt.Errorf("removing %s, left by a stopped run: %w", p, err)
				}
				removed = append(removed, p)
			}
		}
	}
	return removed, nil
}

// Claim takes, on a connection of db held until release, the named lock of
// each target: a second run for one of them fails at once, naming it, and
// the reserved tables found under the lock are a stopped run's. A lock
// name is at most 64 characters: the target's is hashed.
func Claim(ctx context.Context, db *sql.DB, targets []Target) (release func(), err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", claimLock(t)).Scan(&got); err != nil {
			conn.Close()
			return nil, fmt.Errorf("taking the lock of %s: %w", t, err)
		}
		if got.Int64 != 1 {
			conn.Close()
			return nil, fmt.Errorf("another restore of %s runs now (it holds the lock %s): nothing was changed; wait for it to end", t, claimLock(t))
		}
	}
	// Closing the connection releases every lock it holds.
	return func() { conn.Close() }, nil
}

func claimLock(t Target) string {
	sum := sha256.Sum256([]byte(t.DB + "\x00" + t.Table))
	return "vtfifo_restore_" + hex.EncodeToString(sum[:12])
}

// stoppedStatementWait bounds the wait for a stopped run's last statement.
const stoppedStatementWait = 5 * time.Minute

// quiet waits until no other connection runs a statement naming one of
// tables, for at most wait.
func quiet(ctx context.Context, db *sql.DB, tables []Target, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		var id sql.NullInt64
		var info sql.NullString
		q := "SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND = 'Query' AND (" +
			strings.TrimSuffix(strings.Repeat("INSTR(INFO, ?) > 0 OR ", len(tables)), " OR ") + ") LIMIT 1"
		args := make([]any, len(tables))
		for i, t := range tables {
			args[i] = "`" + t.Table + "`"
		}
		err := db.QueryRowContext(ctx, q, args...).Scan(&id, &info)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("connection %d still runs a statement on %s after %v (%.60q): wait for it to end, or KILL it, and run again", id.Int64,
				tables[len(tables)-1], wait, info.String)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Settle deals, under Claim, with what a stopped run for to left, before
// this run imports it: with resume, a copy through the binary log that can
// go on (its local copy beside it) is kept (resumed: pass Options.Resume);
// anything else left is dropped (Undo). said is what it did, for the
// operator; "" when nothing was left.
func Settle(ctx context.Context, db *sql.DB, to Target, resume bool) (resumed bool, said string, err error) {
	left, err := Leftovers(ctx, db, to)
	if err != nil {
		return false, "", err
	}
	if len(left) == 0 {
		files, err := removeReservedFiles(ctx, db, to)
		if err != nil || len(files) == 0 {
			return false, "", err
		}
		return false, fmt.Sprintf("%s: a stopped run left the files %s, of no table: removed", to, strings.Join(files, ", ")), nil
	}
	if resume && Resumable(to, left) {
		if err := quiet(ctx, db, left, stoppedStatementWait); err != nil {
			return false, "", err
		}
		var probes []Target
		for _, t := range left {
			if t != LocalName(to) && t != CopyName(to) {
				probes = append(probes, t)
			}
		}
		if _, err := Undo(ctx, db, to, probes); err != nil {
			return false, "", err
		}
		return true, fmt.Sprintf("%s: resuming the copy through the binary log a stopped run left (%s, beside its local copy %s)", to, CopyName(to),
			LocalName(to)), nil
	}
	names, err := Undo(ctx, db, to, left)
	if err != nil {
		return false, "", err
	}
	how := "--resume would have gone on with its copy"
	switch {
	case resume:
		how = "nothing of it could go on: only a copy through the binary log beside its local copy resumes"
	case !Resumable(to, left):
		how = "nothing of it could go on"
	}
	return false, fmt.Sprintf("%s: a stopped run left %s: dropped (%s); importing from the start", to, names, how), nil
}

// removeTriggerNames removes the trigger name files (MariaDB's <trigger>.TRN,
// which names the trigger's table) of dbDir whose table is one of gone: a
// server killed after CREATE TRIGGER on a reserved table can come back
// without the table and keep the name, which the next CREATE TRIGGER of
// that name would find taken.
func removeTriggerNames(dbDir string, gone func(table string) bool) ([]string, error) {
	m, _ := filepath.Glob(filepath.Join(dbDir, "*.TRN"))
	var removed []string
	for _, p := range m {
		b, err := os.ReadFile(p)
		if err != nil {
			return removed, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			table, ok := strings.CutPrefix(line, "trigger_table=")
			if ok && strings.HasPrefix(table, ReservedPrefix) && gone(table) {
				if err := os.Remove(p); err != nil {
					return removed, err
				}
				removed = append(removed, p)
			}
		}
	}
	return removed, nil
}
