package vtfifocli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/tableimport"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// definitions reads the tables' definitions from the restored files (a
// throwaway server, which also runs Aria's recovery), makes Aria tables
// movable, and writes each definition as db/table.sql, marked NOT
// IMPORTABLE where an import of its files would harm the server. Into a
// live MariaDB server such a table's rows are loaded instead (rows). The
// exit status is not exitOK, with FAIL lines, when a table cannot be
// restored as asked: exitFailed for a table that cannot be imported, and by
// the one rule (failureStatus) for an error, so that this host's failure
// (no aria_chk, a full disk, a server it cannot start) is never damage.
func definitions(s *session, dir string, tables []fifobackupengine.RestoredTable, f restoreTableFlags, out *tableOutput) (restoredDefs, int) {
	names := make([][2]string, len(tables))
	for i, t := range tables {
		names[i] = [2]string{t.DB, t.Table}
	}
	restored, version, err := readDefinitions(s, dir, tables, names, f)
	if err != nil {
		return restored, reportFailure(s.o.notes, unreadable.InText(fmt.Errorf("reading the tables' definitions from the restored files: %w", err)))
	}
	defs := restored.defs
	// The server just stopped ran Aria's recovery on the restored Aria
	// tables; made movable, they open in any server.
	for _, t := range tables {
		if t.Engine != "Aria" {
			continue
		}
		ariaChk, ok := mysqlinstall.FindTool("aria_chk")
		if !ok {
			return restored, reportFailure(s.o.notes, flagvalue.Contradiction(fmt.Errorf("table %s: an Aria table needs aria_chk (MariaDB's), found "+
				"neither under $VT_MYSQL_ROOT, in PATH nor in /usr/sbin, /usr/local/sbin or /usr/local/mysql/bin", t.Name())))
		}
		if err := tableimport.Movable(s.ctx, ariaChk, dir, t.Exported); err != nil {
			return restored, reportFailure(s.o.notes, fmt.Errorf("table %s: %w", t.Name(), err))
		}
	}
	into := f.intoMySQL != "" || f.intoTablet != ""
	refused := 0
	for _, t := range tables {
		// Written beside the restored files, named where they end up.
		rel := filepath.Join(filepath.Dir(filepath.FromSlash(t.Paths[0])), t.Table+".sql")
		def := filepath.Join(out.Target, rel)
		text := defs[t.Name()] + ";\n"
		refusal := tableimport.Refusal(tableimport.Source{DB: t.DB, Table: t.Table, Dir: dir, Files: t.Exported, Create: defs[t.Name()]})
		if refusal != nil {
			// The operator's own IMPORT TABLESPACE would do the same harm.
			text = "-- NOT IMPORTABLE: do not ALTER TABLE ... IMPORT TABLESPACE these files.\n-- " + refusal.Error() + "\n" + text
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o640); err != nil {
			return restored, reportFailure(s.o.notes, err)
		}
		st := out.table(t.Name())
		st.Engine, st.Files, st.Definition = t.Engine, t.Exported, def
		out.printf("table %s (%s%s): %s, definition in %s\n", t.Name(), t.Engine, partitionedNote(t.Partitioned), strings.Join(t.Exported, " "), def)
		switch {
		case refusal == nil:
		case into && strings.Contains(version, "MariaDB"):
			restored.rows[t.Name()] = true
			st.Notes = append(st.Notes, "its files cannot be imported: its rows are loaded, read from them by a throwaway server")
		case into:
			// The throwaway MySQL 8 server reads a copy of the data
			// dictionary, without the tables' rows (testrestore.Open).
			st.NotImportable = refusal.Error()
			fmt.Fprintf(s.o.notes, "FAIL: table %s cannot be imported: %v; on MySQL 8 its rows cannot be loaded yet either (the throwaway server "+
				"holds the definitions only)\n", t.Name(), refusal)
			refused++
		default:
			st.NotImportable = refusal.Error()
			fmt.Fprintf(s.o.notes, "FAIL: table %s cannot be imported from its files: %v\n", t.Name(), refusal)
			refused++
		}
	}
	// Nothing is imported when one table cannot be: the set is restored
	// whole or not at all.
	if refused > 0 {
		return restored, exitFailed
	}
	return restored, exitOK
}

// restoredDefs are the restored tables' definitions, keyed db.table, their
// triggers and sequences' states, and those loaded as rows rather than
// imported as files.
type restoredDefs struct {
	defs      map[string]string
	triggers  map[string][]tableimport.Trigger
	sequences map[string]*tableimport.Sequence
	rows      map[string]bool
}

// readDefinitions reads, on a throwaway server on the restored files, the
// tables' definitions, triggers and sequences, with the server's VERSION().
// The server is stopped before it returns: its stop closes the Aria tables
// its start recovered.
func readDefinitions(s *session, dir string, tables []fifobackupengine.RestoredTable, names [][2]string, f restoreTableFlags) (restoredDefs, string,
	error) {
	r := restoredDefs{triggers: map[string][]tableimport.Trigger{}, sequences: map[string]*tableimport.Sequence{}, rows: map[string]bool{}}
	sc, err := testrestore.Open(s.ctx, dir, "the tables' definitions", f.scratchOptions(s))
	if err != nil {
		return r, "", err
	}
	defer sc.Close()
	if r.defs, err = sc.Definitions(s.ctx, names); err != nil {
		return r, "", err
	}
	for _, t := range tables {
		if r.triggers[t.Name()], err = tableimport.ReadTriggers(s.ctx, sc.DB, t.DB, t.Table); err != nil {
			return r, "", err
		}
		if r.sequences[t.Name()], err = tableimport.ReadSequence(s.ctx, sc.DB, t.DB, t.Table); err != nil {
			return r, "", err
		}
	}
	return r, sc.Version, nil
}

// scratchOptions configure the throwaway servers on the restored files.
func (f restoreTableFlags) scratchOptions(s *session) testrestore.Options {
	return testrestore.Options{MysqldPath: f.mysqldPath, Logger: s.logger, Plugins: f.plugins,
		Restore: fifobackupengine.RestoreDirOptions{DefaultsFile: f.defaultsFile}}
}
