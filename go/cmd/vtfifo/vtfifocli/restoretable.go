package vtfifocli

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
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/topo/topoproto"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/tableimport"
)

// restoreTableDoc is `vtfifo restore-table`'s help.
var restoreTableDoc = commandDoc{"restore-table", "Restore some tables of a backup, reading only the frames that hold them; import them into a live server",
	"Restores the tables --table names (db.table, db.*; InnoDB, partitions included; MariaDB's Aria, MyISAM, CSV)\n" +
		"and the files the tool needs to prepare them into --target-dir, reading only the lane frames that hold them\n" +
		"(the whole lanes for backups without a lane index, which it says), prepares them with the tool's --export,\n" +
		"checks every .cfg, and writes each table's definition, read from the backup's own files by a throwaway mysqld\n" +
		"(InnoDB read-only; it runs Aria's recovery), as db/table.sql; Aria tables are then zero-filled (aria_chk).\n" +
		"With --into-mysql or --into-tablet it imports them into that live server on this host, under their own name\n" +
		"or --as: CREATE TABLE, DISCARD TABLESPACE, the files copied in, IMPORT TABLESPACE (Aria, MyISAM, CSV: the\n" +
		"files copied in, .frm last, FLUSH TABLES), CHECK TABLE, a row count and CHECKSUM TABLE, then InnoDB's\n" +
		"checkpoint past the import; into a server that writes a binary log, under a local name and then copied into\n" +
		"the target through the binary log, so replicas get it. Any name the server accepts; foreign keys point where\n" +
		"they pointed (renames and orphan rows said). An existing table is never replaced; a run is all or nothing.\n" +
		"See docs/table-restore.md.",
	"  vtfifo restore-table --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce \\\n" +
		"      --shard=0 --table=commerce.orders --target-dir=/var/tmp/orders --into-tablet=zone1-0000000100 --as=commerce.orders_restored"}

// RestoreTable is `vtfifo restore-table`: some tables of a backup restored
// into a directory, ready for IMPORT TABLESPACE, reading only the frames that
// hold them; with --into-mysql or --into-tablet imported into a live server.
func RestoreTable(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var f restoreTableFlags
	s, bh, code := openBackup(ctx, prog, args, stdout, stderr, f.register)
	if s == nil {
		return code
	}
	defer s.close()
	patterns, _ := fifobackupengine.ParseTablePatterns(f.tables)
	dir, _ := filepath.Abs(f.targetDir)
	where := s.o.dir() + "/" + bh.Name()
	// targetFor is the table db.table is imported as.
	targetFor := func(db, table string) tableimport.Target {
		if f.as != "" {
			db, table, _ = fifobackupengine.SplitName(f.as)
		}
		return tableimport.Target{DB: db, Table: table}
	}

	// The live server is reached, and checked, before anything is
	// downloaded.
	var live *liveServer
	if f.intoMySQL != "" || f.intoTablet != "" {
		var err error
		if live, err = openLive(s, f, patterns, targetFor); err != nil {
			return reportFailure(stderr, err)
		}
		defer live.close()
		if err := live.checkPageSize(s, bh); err != nil {
			return reportFailure(stderr, err)
		}
		if f.replicaDBs, err = openReplicas(s.ctx, f.replicas, f.user); err != nil {
			return reportFailure(stderr, err)
		}
		defer closeReplicas(f.replicaDBs)
		// A server that writes a binary log gets the tables through it, so
		// that its replicas get them too (tableimport.ImportReplicated).
		if !f.unreplicated {
			if f.replicated, err = tableimport.LogsBinary(s.ctx, live.db); err != nil {
				return reportFailure(stderr, err)
			}
		}
	}

	cfg := fifobackupengine.FlagConfig()
	cfg.Progress = 0
	start := time.Now()
	p := newProgress(s.o, stderr, prog+" "+where)
	rep, err := fifobackupengine.RestoreToDir(s.ctx, bh, dir, fifobackupengine.RestoreDirOptions{
		// The files stay in the restore's own subdirectory while the
		// throwaway servers read them and the tables are imported, so that
		// all those write there goes with them.
		Config: cfg, Prepare: true, Tables: patterns, DefaultsFile: f.defaultsFile, Logger: s.logger, ManifestDoc: s.manifestOf(bh), LeaveStaged: true,
		OnTables: func(tables []fifobackupengine.TableFiles) error {
			return live.claim(s, tables, targetFor, f)
		},
		OnManifest: p.setLanes, OnRead: p.addLane, OnPhase: p.phase,
	})
	p.stop()
	if err != nil {
		return reportFailure(stderr, err)
	}
	f.plugins = rep.Manifest.ServerPlugins
	took := time.Since(start).Round(time.Millisecond)
	out := &tableOutput{w: stdout, text: !f.json, RestoreTableResult: RestoreTableResult{Backup: where, Target: dir,
		ReadBytes: rep.ReadBytes, StoredBytes: rep.StoredBytes, Tool: rep.Tool, Seconds: took.Seconds()}}
	if err := giveToServer(rep.Target); err != nil {
		code = reportFailure(s.o.notes, err)
	} else {
		code = restoreTables(s, out, rep, live, f, targetFor)
	}
	switch {
	case code == 0 && live != nil && !f.keepTargetDir:
		// The tables are in the live server: the restore's files (the
		// system tablespace and redo copy among them) are not needed. A
		// directory that was there (empty) before is the operator's: only
		// what the restore wrote into it goes.
		if err := rep.Target.RemoveRestored(); err != nil {
			fmt.Fprintf(s.o.notes, "warning: cannot remove the restore's files in %s: %v (the tables are imported: remove what is left by hand)\n", dir, err)
		} else {
			out.TargetRemoved = true
			out.printf("%s\n", removedTargetLine(rep.Target))
		}
	default:
		// The files are kept for the operator: where the lines said.
		if err := rep.Target.Done(true, s.logger); err != nil {
			lead := "warning"
			if live == nil {
				// The files were all it was asked for: not where it was
				// asked, the run did not do it.
				lead, code = "FAIL", max(code, failureStatus(err))
			}
			fmt.Fprintf(s.o.notes, "%s: the restored files stay in %s, not in %s: %v; they are whole (prepared, exported): move them "+
				"where you want them, then remove %s\n", lead, rep.Target.Files(), dir, errtext.Line(err), strings.Join(rep.Target.Leftovers(), " and "))
		}
	}
	if f.json {
		writeJSON(stdout, out.RestoreTableResult)
	}
	return code
}

// giveToServer gives the directories on the way to the staged files to the
// user the throwaway servers run as (the mysql user, when vtfifo runs as
// root: testrestore gives it the files), as the target directory was given
// when the files were in it. A user that cannot reach the target is left
// for the server's start to name.
func giveToServer(d fifobackupengine.TargetDir) error {
	u, err := mysqlinstall.ServerUser(d.Path)
	if err != nil || u == nil {
		return nil
	}
	for _, p := range d.WayToFiles() {
		if err := mysqlinstall.Chown(p, u); err != nil {
			return unreadable.Host(fmt.Errorf("cannot give %s to the %s user the throwaway servers run as: %w", p, u.Username, err),
				"the target directory cannot be made, read or written here")
		}
	}
	return nil
}

// removedTargetLine says what removing the restore's files left of its
// target directory: gone where the restore created it and nothing else is
// in it; kept where it was there before, or holds what others put there.
func removedTargetLine(d fifobackupengine.TargetDir) string {
	switch _, err := os.Lstat(d.Path); {
	case d.Created && errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("removed %s, the restore's files (--keep-target-dir keeps them)", d.Path)
	case d.Created:
		return fmt.Sprintf("removed the restore's files from %s, which holds others it did not write and is kept (--keep-target-dir keeps the "+
			"files)", d.Path)
	}
	return fmt.Sprintf("removed the restore's files from %s, which was there before and is kept (--keep-target-dir keeps the files)", d.Path)
}

// restoreTables reports the restored tables, writes their definitions and
// imports them into live when there is one; it returns the exit status.
func restoreTables(s *session, out *tableOutput, rep fifobackupengine.RestoreDirReport, live *liveServer, f restoreTableFlags,
	targetFor func(db, table string) tableimport.Target) int {
	took := time.Duration(out.Seconds * float64(time.Second)).Round(time.Millisecond)
	out.printf("backup %s: read %s of %s stored (%s of %s before compression) in %v, prepared with %s --export into %s\n",
		out.Backup, humanize.IBytes(uint64(rep.ReadBytes)), humanize.IBytes(uint64(rep.StoredBytes)),
		humanize.IBytes(uint64(rep.ReadStreamBytes)), humanize.IBytes(uint64(rep.StreamBytes)), took, rep.Tool, out.Target)
	work := rep.Target.FilesNow()
	defs, code := definitions(s, work, rep.Tables, f, out)
	if code != exitOK {
		return code
	}
	if live == nil {
		out.printf("OK: %d tables ready in %s for ALTER TABLE ... IMPORT TABLESPACE, Aria, MyISAM and CSV tables to copy in (or rerun with "+
			"--into-mysql/--into-tablet)\n", len(rep.Tables), out.Target)
		return 0
	}
	if err := fifobackupengine.CheckImportKeys(s.ctx, tableimport.TextRows(live.db), rep.Manifest, work, rep.Tables); err != nil {
		if !flagvalue.IsContradiction(err) {
			err = unreadable.Error(err) // the live server did not answer: no verdict
		}
		return reportFailure(s.o.notes, err)
	}
	return importTables(s, live, work, rep.Tables, defs, targetFor, f, out)
}

// RestoreTableResult is what restore-table did (--json prints it).
type RestoreTableResult struct {
	Backup      string               `json:"backup"`
	Target      string               `json:"target"`
	ReadBytes   int64                `json:"read_bytes"`
	StoredBytes int64                `json:"stored_bytes"`
	Tool        string               `json:"tool"`
	Seconds     float64              `json:"seconds"` // the restore and prepare
	Tables      []RestoredTableState `json:"tables"`
	// TargetRemoved: the tables are in the live server and Target, with
	// the definitions' files, was removed (no --keep-target-dir).
	TargetRemoved bool `json:"target_removed,omitempty"`
}

// RestoredTableState is one table: its files, its definition, and what
// became of its import.
type RestoredTableState struct {
	Table         string   `json:"table"`
	Engine        string   `json:"engine"`
	Files         []string `json:"files"`
	Definition    string   `json:"definition"`
	NotImportable string   `json:"not_importable,omitempty"`
	ImportedAs    string   `json:"imported_as,omitempty"`
	Replicated    bool     `json:"replicated,omitempty"` // through the binary log
	Rows          int64    `json:"rows,omitempty"`
	Check         string   `json:"check,omitempty"`
	Checksum      string   `json:"checksum,omitempty"`
	ImportError   string   `json:"import_error,omitempty"`
	// Notes say what the import changed from the backup's definition
	// (foreign keys) and the rows whose foreign key has no parent row.
	Notes []string `json:"notes,omitempty"`
}

// tableOutput records restore-table's result and prints its lines unless
// --json.
type tableOutput struct {
	RestoreTableResult
	w    io.Writer
	text bool
}

func (o *tableOutput) printf(format string, args ...any) {
	if o.text {
		fmt.Fprintf(o.w, format, args...)
	}
}

// table returns the state of table name, added if new.
func (o *tableOutput) table(name string) *RestoredTableState {
	for i := range o.Tables {
		if o.Tables[i].Table == name {
			return &o.Tables[i]
		}
	}
	o.Tables = append(o.Tables, RestoredTableState{Table: name})
	return &o.Tables[len(o.Tables)-1]
}

// restoreTableFlags are restore-table's own flags.
type restoreTableFlags struct {
	tables                    []string
	targetDir, as, mysqldPath string
	intoMySQL, intoTablet     string
	defaultsFile              string
	user                      string
	unreplicated              bool
	dropKeysWithoutParent     bool
	resume                    bool
	skipTriggers              bool
	standalone                bool
	keepTargetDir             bool
	replicas                  []string
	replicaStall              time.Duration
	replicaDBs                []tableimport.Replica           // the --replica servers, once reached
	replicated                bool                            // decided once the live server is reached
	plugins                   []fifobackupengine.ServerPlugin // the backup's server's, once its MANIFEST is read
	json                      bool
}

// register declares the flags and returns their check.
func (f *restoreTableFlags) register(fs *pflag.FlagSet, o *options) func() error {
	o.restoresLatest(fs)
	fs.StringArrayVar(&f.tables, "table", nil, "a table to restore, db.table or db.* (repeatable; required)")
	fs.StringVar(&f.targetDir, "target-dir", "", "directory to restore into: it must not exist or be empty (required)")
	fs.StringVar(&f.as, "as", "", "import the one table under this name, db.table (default: its own name)")
	fs.StringVar(&f.intoMySQL, "into-mysql", "", "import into the server at this Unix socket (on this host)")
	fs.StringVar(&f.intoTablet, "into-tablet", "", "import into the mysqld of this tablet alias on this host (its socket from $VTDATAROOT/vt_<uid>/my.cnf)")
	fs.StringVar(&f.defaultsFile, "defaults-file", "", "the restoring host's option file: where its encryption plugin and keys are (plugin_dir, "+
		"file_key_management_filename in [mysqld]), which the prepare and the throwaway server take over the backup's own (default: the "+
		"--into-tablet's my.cnf; else the backup's, the source server's paths)")
	fs.StringVar(&f.user, "mysql-user", "vt_dba", "user for --into-mysql/--into-tablet; its password, if any, from $MYSQL_PWD")
	fs.BoolVar(&f.unreplicated, "unreplicated", false, "import the files only, not through the binary log, into a server that writes one (every Vitess "+
		"primary does): the table is then on that server only, not on its replicas (default: on such a server the rows are copied into the target "+
		"through the binary log, so replicas get them too)")
	fs.BoolVar(&f.dropKeysWithoutParent, "drop-foreign-keys-without-parent", false, "import a table without those of its foreign keys whose "+
		"parent table the live server does not have, naming each (default: such a table is refused before anything is imported)")
	fs.BoolVar(&f.resume, "resume", false, "finish a copy through the binary log that a stopped run left (the target beside its "+
		"_vtfifo_local_ copy): the rows already copied stay, the rest follow (default: such a target is in the way)")
	fs.BoolVar(&f.skipTriggers, "skip-triggers", false, "import the tables without their triggers, naming each in a note (default: a table's "+
		"triggers are created with it, and a trigger whose name is taken in the target's database is refused before anything is imported)")
	fs.BoolVar(&f.standalone, "standalone", false, "the live server replicates from no one and is read_only only to keep clients out: import into "+
		"it all the same (default: a read_only server is refused, as every Vitess tablet but the primary is; a replica is refused always)")
	fs.BoolVar(&f.keepTargetDir, "keep-target-dir", false, "keep --target-dir after the tables are imported into the live server (default: "+
		"removed once every table is in)")
	fs.StringArrayVar(&f.replicas, "replica", nil, "a replica of the live server to pace the copy through the binary log by, host:port or "+
		"a socket path, reached as --mysql-user: after each batch the copy waits until it has applied everything (repeatable)")
	fs.DurationVar(&f.replicaStall, "replica-stall", 10*time.Minute, "how long the copy waits for a --replica that applies nothing "+
		"before it fails (and is undone)")
	fs.StringVar(&f.mysqldPath, "mysqld", "", "server binary for the throwaway server (InnoDB read-only) that reads the tables' definitions from the "+
		"backup and runs Aria's recovery (default: mysqld or mariadbd under $VT_MYSQL_ROOT, in PATH or /usr/sbin)")
	fs.BoolVar(&f.json, "json", false, "print one JSON object (backup, target, bytes read, tool, and per table its files, definition and import) instead of lines")
	o.registerProgressFlags(fs)
	return func() error {
		if err := o.validateProgress(); err != nil {
			return err
		}
		if err := targetDirFlag(o, &f.targetDir); err != nil {
			return err
		}
		if _, err := fifobackupengine.ParseTablePatterns(f.tables); err != nil {
			return err
		}
		if f.intoMySQL != "" && f.intoTablet != "" {
			return errors.New("--into-mysql and --into-tablet: give one")
		}
		if f.as != "" {
			if f.intoMySQL == "" && f.intoTablet == "" {
				return errors.New("--as needs --into-mysql or --into-tablet")
			}
			if len(f.tables) != 1 || strings.HasSuffix(f.tables[0], ".*") {
				return errors.New("--as renames one table: give exactly one --table db.table")
			}
			if _, _, ok := fifobackupengine.SplitName(f.as); !ok {
				return fmt.Errorf("invalid value %q for --as: allowed values are db.table (a name with a '.' in backquotes: `my.db`.`t.1`)", f.as)
			}
		}
		into := f.intoMySQL != "" || f.intoTablet != ""
		for flag, set := range map[string]bool{"--replica": len(f.replicas) > 0, "--standalone": f.standalone, "--keep-target-dir": f.keepTargetDir,
			"--skip-triggers": f.skipTriggers} {
			if set && !into {
				return fmt.Errorf("%s needs --into-mysql or --into-tablet", flag)
			}
		}
		if f.replicaStall <= 0 {
			return fmt.Errorf("invalid value %v for --replica-stall: allowed values are durations above 0, such as 10m", f.replicaStall)
		}
		if f.intoTablet != "" {
			a, err := topoproto.ParseTabletAlias(f.intoTablet)
			if err != nil {
				return fmt.Errorf("invalid value %q for --into-tablet: allowed values are tablet aliases such as zone1-0000000100: %v", f.intoTablet, err)
			}
			if f.defaultsFile == "" {
				f.defaultsFile = mysqlctl.MycnfFile(a.Uid)
			}
		}
		return nil
	}
}

// importTables imports the restored tables into the live server, each as
// targetFor names it, sequences first (a table's default may use one), and
// returns the exit status.
func importTables(s *session, live *liveServer, dir string, tables []fifobackupengine.RestoredTable, restored restoredDefs,
	targetFor func(db, table string) tableimport.Target, f restoreTableFlags, out *tableOutput) int {
	opts := tableimport.Options{Unreplicated: f.unreplicated, DropKeysWithoutParent: f.dropKeysWithoutParent}
	for _, t := range tables {
		opts.Importing = append(opts.Importing, targetFor(t.DB, t.Table))
	}
	if len(f.replicaDBs) > 0 {
		opts.Pace = tableimport.Replicas(live.db, f.replicaDBs, f.replicaStall, s.logger)
	}
	rows, err := openRows(s, dir, restored, f)
	if err != nil {
		return reportFailure(s.o.notes, unreadable.InText(err))
	}
	defer rows.close()
	tables = slices.Clone(tables)
	slices.SortStableFunc(tables, func(a, b fifobackupengine.RestoredTable) int {
		return cmp.Compare(bool2int(restored.sequences[b.Name()] != nil), bool2int(restored.sequences[a.Name()] != nil))
	})
	var done []importedTable
	for _, t := range tables {
		to := targetFor(t.DB, t.Table)
		src, skipped := sourceOf(t, dir, restored, f.skipTriggers)
		opts.Resume = live.resumed[to]
		importOne, how := importerFor(f.replicated, restored.rows[t.Name()], src.Sequence != nil, rows, &opts)
		res, err := importOne(s.ctx, live.db, src, to, opts, s.logger)
		st := out.table(t.Name())
		if err != nil {
			err = importFailure(err)
			st.ImportError = errtext.Line(err)
			fmt.Fprintf(s.o.notes, "FAIL: importing %s as %s: %s%s\n", t.Name(), to, errtext.Line(err), undoImports(live.db, done, f.replicated, out))
			return failureStatus(err)
		}
		done = append(done, importedTable{t.Name(), to})
		st.ImportedAs, st.Rows, st.Check, st.Checksum, st.Replicated = to.String(), res.Rows, res.Check, res.Checksum, f.replicated
		out.printf("OK: %s imported as %s%s: %d rows, CHECK TABLE %s, CHECKSUM %s\n", t.Name(), to, how, res.Rows, res.Check, res.Checksum)
		st.Notes = append(append(st.Notes, res.Notes...), skipped...)
	}
	// Orphans are counted once every table of the run is in: a parent may
	// come after its child.
	for _, d := range done {
		st := out.table(d.name)
		orphans, err := tableimport.Orphans(s.ctx, live.db, d.to)
		if err != nil {
			orphans = []string{"orphan rows not counted: " + errtext.Line(err)}
		}
		st.Notes = append(st.Notes, orphans...)
		for _, n := range st.Notes {
			out.printf("note: %s: %s\n", d.to, n)
		}
	}
	return 0
}

// importFailure classes an import's failure: the live server contradicting
// the request (a name taken, files it will not take for the table it
// builds: a usage error), a replica or the live server's disk, memory,
// files or state (this host's), or else what the files' import met.
func importFailure(err error) error {
	switch {
	case errors.Is(err, tableimport.ErrExists) || errors.Is(err, tableimport.ErrFileInTheWay) || errors.Is(err, tableimport.ErrTriggerExists):
		return flagvalue.Contradiction(err)
	case tableimport.Misfit(err):
		return flagvalue.Contradiction(fmt.Errorf("%w; the live server cannot take these files as they are (its innodb_page_size, row "+
			"format or version differs from the backup's server): nothing says the backup is damaged", err))
	case errors.Is(err, tableimport.ErrReplicaBehind):
		return unreadable.Host(err, "a replica did not apply the copy in time: stopped, or broken")
	case errors.Is(err, tableimport.ErrNoRoom):
		return unreadable.Host(err, tableimport.ErrNoRoom.Error())
	}
	return unreadable.InText(err)
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sourceOf is what tableimport imports t from; with skipTriggers its
// triggers are left out, each named in a note.
func sourceOf(t fifobackupengine.RestoredTable, dir string, restored restoredDefs, skipTriggers bool) (tableimport.Source, []string) {
	src := tableimport.Source{DB: t.DB, Table: t.Table, Dir: dir, Files: t.Exported, Create: restored.defs[t.Name()],
		Triggers: restored.triggers[t.Name()], Sequence: restored.sequences[t.Name()]}
	if !skipTriggers || len(src.Triggers) == 0 {
		return src, nil
	}
	var notes []string
	for _, tr := range src.Triggers {
		notes = append(notes, fmt.Sprintf("trigger %s (%s %s) not restored (--skip-triggers)", tr.Name, tr.Timing, tr.Event))
	}
	src.Triggers = nil
	return src, notes
}

// importerFor is how one table is imported: a sequence made as one
// (tableimport.ImportSequence); its files (tableimport.Import) into a
// server whose binary log it need not go through; else a local copy (its
// files, or its rows read by the throwaway server rows) copied into the
// target (ImportReplicated), through the log unless --unreplicated.
func importerFor(replicated, asRows, sequence bool, rows *rowsSource, opts *tableimport.Options) (func(context.Context, *sql.DB, tableimport.Source,
	tableimport.Target, tableimport.Options, logutil.Logger) (tableimport.Result, error), string) {
	opts.Local = nil
	switch {
	case sequence && replicated:
		return tableimport.ImportSequence, " (a sequence) through the binary log"
	case sequence:
		return tableimport.ImportSequence, " (a sequence)"
	case asRows:
		opts.Local = tableimport.FromServer(rows.scratch.DB)
		if replicated {
			return tableimport.ImportReplicated, " as rows through the binary log"
		}
		return tableimport.ImportReplicated, " as rows"
	case replicated:
		return tableimport.ImportReplicated, " through the binary log"
	}
	return tableimport.Import, ""
}

// importedTable is a table a run imported, by its name in the backup.
type importedTable struct {
	name string
	to   tableimport.Target
}

// undoImports drops the tables a failed run imported before its failure
// (all or nothing), checks that they are gone, and says so.
func undoImports(live *sql.DB, done []importedTable, replicated bool, out *tableOutput) string {
	if len(done) == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := make([]string, len(done))
	for i, d := range done {
		err := tableimport.Drop(ctx, live, d.to, replicated)
		if err == nil {
			err = tableimport.Absent(ctx, live, d.to)
		}
		if err != nil {
			return fmt.Sprintf("; dropping %s, imported before it, failed too (%v): drop it by hand", d.to, err)
		}
		st := out.table(d.name)
		st.ImportedAs, st.ImportError = "", "dropped again: another table of the run failed"
		names[i] = d.to.String()
	}
	return fmt.Sprintf("; the %d tables imported before it (%s) were dropped again, and are gone", len(done), strings.Join(names, ", "))
}

func partitionedNote(p bool) string {
	if p {
		return ", partitioned"
	}
	return ""
}

// tabletSocket finds the mysqld socket of a tablet on this host, as Vitess
// lays it out: the socket line of $VTDATAROOT/vt_<uid>/my.cnf.
func tabletSocket(alias string) (string, error) {
	a, err := topoproto.ParseTabletAlias(alias)
	if err != nil {
		return "", err
	}
	path := mysqlctl.MycnfFile(a.Uid)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("tablet %s: cannot read %s (is the tablet on this host, and $VTDATAROOT set?): %v", alias, path, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "socket" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("tablet %s: %s names no socket", alias, path)
}
