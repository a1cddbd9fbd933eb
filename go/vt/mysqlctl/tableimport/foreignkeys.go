package tableimport

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"vitess.io/vitess/go/sqlescape"
)

// The rule for foreign keys (docs/table-restore.md, "Foreign keys"): a
// restored table's keys point where they pointed in the backup: a parent
// named fully, so that a table restored into another database or under
// another name still references the table it referenced; a key that
// references the table itself follows it to its new name. Constraint names
// are unique per database in InnoDB: a name taken in the target's database
// gets a suffix (the server's own <table>_ibfk_N names take the target's
// table name), and the new name is reported. A key whose parent the live
// server does not have is refused, naming it, unless the caller asks for
// such keys to be dropped (Options.DropKeysWithoutParent). The import runs
// with foreign_key_checks off, so child rows without a parent row come in
// as they were: Orphans counts them.

// foreignKeyLine is a FOREIGN KEY line of SHOW CREATE TABLE: its indent and
// CONSTRAINT, the name, up to REFERENCES, the parent (with its database
// when another), and the rest of the line.
var foreignKeyLine = regexp.MustCompile("(?m)^(\\s*CONSTRAINT )(" + quotedName + ")( FOREIGN KEY \\(.*?\\) REFERENCES )(" + quotedName +
	")(?:\\.(" + quotedName + "))?( \\(.*)$")

const quotedName = "`(?:[^`]|``)*`"

func unquoteName(q string) string { return strings.ReplaceAll(q[1:len(q)-1], "``", "`") }

// foreignKeys rewrites the foreign keys of create (src's definition renamed
// to to) by the rule above, returning the definition and what it changed.
func foreignKeys(ctx context.Context, conn *sql.Conn, src Source, to Target, create string, opts Options) (string, []string, error) {
	var notes, missing []string
	used := map[string]bool{}
	lines := strings.Split(create, "\n")
	kept := lines[:0]
	for _, line := range lines {
		m := foreignKeyLine.FindStringSubmatch(line)
		if m == nil {
			kept = append(kept, line)
			continue
		}
		if opts.withoutForeignKeys {
			continue
		}
		name, parent := unquoteName(m[2]), Target{DB: src.DB, Table: unquoteName(m[4])}
		if m[5] != "" {
			parent = Target{DB: parent.Table, Table: unquoteName(m[5])}
		}
		if parent == (Target{src.DB, src.Table}) {
			parent = to
		} else if ok, err := parentThere(ctx, conn, parent, opts.Importing); err != nil {
			return "", nil, err
		} else if !ok {
			if !opts.DropKeysWithoutParent {
				missing = append(missing, fmt.Sprintf("%s (references %s)", name, parent))
				continue
			}
			notes = append(notes, fmt.Sprintf("foreign key %s dropped: its parent %s is not in the live server", name, parent))
			continue
		}
		newName, err := constraintName(ctx, conn, src, to, name, used)
		if err != nil {
			return "", nil, err
		}
		if newName != name {
			notes = append(notes, fmt.Sprintf("foreign key %s is named %s in %s (%s is taken in database %s)", name, newName, to, name, to.DB))
		}
		kept = append(kept, m[1]+sqlescape.EscapeID(newName)+m[3]+quoted(parent)+m[6])
	}
	if len(missing) > 0 {
		return "", nil, fmt.Errorf("%s.%s: foreign keys whose parent the live server does not have: %s: restore the parents first (or in the same "+
			"run), or drop these keys (--drop-foreign-keys-without-parent)", src.DB, src.Table, strings.Join(missing, ", "))
	}
	return strings.Join(endList(kept), "\n"), notes, nil
}

// endList drops the comma of a definition's last column or key line when a
// line after it was removed.
func endList(lines []string) []string {
	for i := 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], ")") {
			lines[i-1] = strings.TrimSuffix(lines[i-1], ",")
		}
	}
	return lines
}

// parentThere reports whether the live server has parent, or the caller
// imports it in the same run.
func parentThere(ctx context.Context, conn *sql.Conn, parent Target, importing []Target) (bool, error) {
	for _, t := range importing {
		if t == parent {
			return true, nil
		}
	}
	var n int
	err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", parent.DB,
		parent.Table).Scan(&n)
	return n > 0, err
}

// constraintName is the name the key name of src takes in to: the server's
// generated <table>_ibfk_N follows the table's new name, and a name taken
// in to's database (or by another key of the table) gets a suffix.
func constraintName(ctx context.Context, conn *sql.Conn, src Source, to Target, name string, used map[string]bool) (string, error) {
	base := name
	if n, ok := strings.CutPrefix(name, src.Table+"_ibfk_"); ok {
		base = to.Table + "_ibfk_" + n
	}
	for i := 1; ; i++ {
		candidate := base
		if i > 1 {
			candidate = fmt.Sprintf("%s_%d", base, i)
		}
		if used[strings.ToLower(candidate)] {
			continue
		}
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? AND "+
			"LOWER(CONSTRAINT_NAME) = LOWER(?)", to.DB, candidate).Scan(&n); err != nil {
			return "", err
		}
		if n == 0 {
			used[strings.ToLower(candidate)] = true
			return candidate, nil
		}
	}
}

// Orphans counts, for each foreign key of the imported table t, the rows
// whose key has no row in its parent, and says so: an import brings the
// rows in as they were in the backup, without checking them.
func Orphans(ctx context.Context, db *sql.DB, t Target) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME "+
		"FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND REFERENCED_TABLE_NAME IS NOT NULL "+
		"ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION", t.DB, t.Table)
	if err != nil {
		return nil, err
	}
	type key struct {
		parent        Target
		notNull, join []string
	}
	keys := map[string]*key{}
	var order []string
	for rows.Next() {
		var name, col, pdb, ptable, pcol string
		if err := rows.Scan(&name, &col, &pdb, &ptable, &pcol); err != nil {
			rows.Close()
			return nil, err
		}
		k := keys[name]
		if k == nil {
			k = &key{parent: Target{pdb, ptable}}
			keys[name] = k
			order = append(order, name)
		}
		k.notNull = append(k.notNull, "c."+sqlescape.EscapeID(col)+" IS NOT NULL")
		k.join = append(k.join, "p."+sqlescape.EscapeID(pcol)+" = c."+sqlescape.EscapeID(col))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var notes []string
	for _, name := range order {
		k := keys[name]
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quoted(t)+" c WHERE "+strings.Join(k.notNull, " AND ")+" AND NOT EXISTS (SELECT 1 FROM "+
			quoted(k.parent)+" p WHERE "+strings.Join(k.join, " AND ")+")").Scan(&n); err != nil {
			notes = append(notes, fmt.Sprintf("foreign key %s: orphan rows not counted: %v", name, err))
			continue
		}
		if n > 0 {
			notes = append(notes, fmt.Sprintf("%d rows whose foreign key %s has no row in %s (orphans: the import does not check keys; they were "+
				"orphans in the backup, or their parent rows are gone from the live server since)", n, name, k.parent))
		}
	}
	return notes, nil
}
