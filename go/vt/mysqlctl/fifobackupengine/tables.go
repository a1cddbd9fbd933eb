package fifobackupengine

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/mysqlfilename"
	"github.com/vtfifo/vtfifo/go/xbstream"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// Restoring some tables (RestoreDirOptions.Tables). The files the tools need
// to prepare and export a subset, from their sources (docs/design/
// research-prepare-export.md: PXB storage/innobase/xtrabackup/src/
// xtrabackup.cc xtrabackup_prepare_func, read_metadata, innodb_init and
// xb_dict.cc dict_load_tables_from_space_id_wrapper; MariaDB
// extra/mariabackup/xtrabackup.cc xtrabackup_prepare_func, prepare_export).
// Only mariabackup's side runs here; Percona's is followed from its source:
//   - Percona XtraBackup 8.0/8.4: xtrabackup_checkpoints, xtrabackup_info,
//     xtrabackup_logfile, backup-my.cnf, ibdata*, mysql.ibd, the undo
//     tablespaces (undo_NNN, *.ibu), xtrabackup_tablespaces and
//     xtrabackup_keys when present; a missing .ibd of another table only
//     warns (PXB treats the tablespace as dropped).
//   - mariabackup 10.11: xtrabackup_checkpoints, backup-my.cnf, ibdata1,
//     undoNNN, ib_logfile0 (the copied redo), and the table's .frm (its
//     --export runs FLUSH TABLES ... FOR EXPORT in an embedded server and
//     silently writes no .cfg without it); a missing .ibd is tolerated.
// Every file at the top of the backup is therefore taken (they are the
// tool's metadata, the system and undo tablespaces, the redo and the Aria
// log), with the undo tablespaces anywhere, and every file of the tables
// asked for: a table's files are named by the table, partitions after '#P#'
// (MariaDB) or '#p#' (MySQL), a delta's with .delta and .meta appended.

// TablePattern is one --table: a database and a table name, either of which
// may be "*".
type TablePattern struct{ DB, Table string }

func (p TablePattern) String() string { return p.DB + "." + p.Table }

// ParseTablePatterns reads db.table, db.* patterns (names as the server
// shows them; a name holding a '.' or a '`' in backquotes, as in SQL:
// `my.db`.`t.1`, d.`a“b`).
func ParseTablePatterns(specs []string) ([]TablePattern, error) {
	var out []TablePattern
	for _, s := range specs {
		db, table, ok := SplitName(s)
		if !ok || db == "*" {
			return nil, errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "invalid value %q for --table: allowed values are db.table or db.* (a name "+
				"with a '.' in backquotes: `my.db`.`t.1`)", s)
		}
		out = append(out, TablePattern{db, table})
	}
	if len(out) == 0 {
		return nil, errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "--table is required: db.table or db.*")
	}
	return out, nil
}

// SplitName splits db.table, either name in backquotes when it holds a '.'
// (a '`' in it doubled, as in SQL); ok is false when s is not two non-empty
// names.
func SplitName(s string) (db, table string, ok bool) {
	db, rest, ok := nextName(s)
	if !ok || !strings.HasPrefix(rest, ".") {
		return "", "", false
	}
	table, rest, ok = nextName(rest[1:])
	if !ok || rest != "" {
		return "", "", false
	}
	return db, table, true
}

// nextName reads one name at the start of s: up to the first '.', or in
// backquotes.
func nextName(s string) (name, rest string, ok bool) {
	if !strings.HasPrefix(s, "`") {
		i := strings.IndexAny(s, ".`")
		if i < 0 {
			i = len(s)
		}
		return s[:i], s[i:], i > 0
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '`' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '`' {
			b.WriteByte('`')
			i++
			continue
		}
		return b.String(), s[i+1:], b.Len() > 0
	}
	return "", "", false
}

func (p TablePattern) matches(db, table string) bool {
	return p.DB == db && (p.Table == "*" || p.Table == table)
}

// TableFiles is one table found in a backup.
type TableFiles struct {
	DB, Table string
	// Engine is what the files say: InnoDB (.ibd), Aria, MyISAM, CSV,
	// ARCHIVE; "" when only a definition was found (a view).
	Engine string
	// Partitioned: its data is in one .ibd per partition.
	Partitioned bool
	Paths       []string
}

func (t *TableFiles) Name() string { return t.DB + "." + t.Table }

// toolFile reports whether p is one of the files the tool needs to prepare
// any subset: the top-level files, the undo tablespaces, and the markers
// Percona XtraBackup's DDL tracker (--lock-ddl=REDUCED) leaves by
// tablespace id, which its prepare applies (ddl_tracker.cc,
// convert_file_name: db/<space_id>.ibd.del for a drop, db/<space_id>.ibd.ren
// holding the new name for a rename, <space_id>.ibu.del for an undo
// tablespace). They name no table, so every subset takes them all: a table
// renamed during the backup is found by its new name after the prepare.
func toolFile(p string) bool {
	base := path.Base(p)
	return !strings.Contains(p, "/") || strings.HasSuffix(base, ".ibu") || strings.HasPrefix(base, "undo") ||
		ddlTrackerMarker.MatchString(base)
}

var ddlTrackerMarker = regexp.MustCompile(`^[0-9]+\.(ibd\.del|ibd\.ren|ibu\.del)$`)

// engines by the extension of a data file. mariabackup copies a tablespace
// created or rebuilt while it ran again at its end as .new, which its
// --prepare renames to .ibd (beside .ren and .del for renames and drops).
var engineByExt = map[string]string{
	"ibd": "InnoDB", "new": "InnoDB", "MAD": "Aria", "MAI": "Aria", "MYD": "MyISAM", "MYI": "MyISAM",
	"CSV": "CSV", "CSM": "CSV", "ARZ": "ARCHIVE",
}

// tableOf returns the database and table (names decoded as the server shows
// them) whose file p is, and the file's extension; ok is false for files
// that are no table's.
func tableOf(p string) (db, table, ext string, partition, ok bool) {
	dir, file := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" || strings.Contains(dir, "/") || strings.HasPrefix(file, "#sql") {
		return "", "", "", false, false
	}
	file = strings.TrimSuffix(strings.TrimSuffix(file, ".delta"), ".meta")
	// Percona's DDL tracker recopies a table created or rebuilt during the
	// backup as t.ibd.new, and marks one it could not copy as t.ibd.corrupt
	// (ddl_tracker.cc); its prepare resolves both.
	for _, marker := range []string{".new", ".corrupt"} {
		if base, ok := strings.CutSuffix(file, ".ibd"+marker); ok {
			file = base + marker
		}
	}
	i := strings.LastIndexByte(file, '.')
	if i <= 0 {
		return "", "", "", false, false
	}
	name, ext := file[:i], file[i+1:]
	if strings.Contains(name, ".") {
		return "", "", "", false, false // a table's '.' is written @002e: a marker such as 12.ibd.del
	}
	if ftsAuxiliary.MatchString(name) {
		return "", "", "", false, false
	}
	if j := strings.Index(name, "#P#"); j > 0 {
		name, partition = name[:j], true
	} else if j := strings.Index(name, "#p#"); j > 0 {
		name, partition = name[:j], true
	}
	switch ext {
	case "ibd", "new", "corrupt", "ren", "del", "frm", "par", "MAD", "MAI", "MYD", "MYI", "CSV", "CSM", "ARZ", "TRG", "isl":
	default:
		return "", "", "", false, false
	}
	return mysqlfilename.Decode(dir), mysqlfilename.Decode(name), ext, partition, true
}

// ftsAuxiliary matches the tablespaces InnoDB keeps a FULLTEXT index in,
// named by the table's and the index's ids (MariaDB storage/innobase/fts/
// fts0sql.cc fts_get_table_name: FTS_<table id>_<index id>_INDEX_<n>,
// FTS_<table id>_CONFIG, _DELETED, ...; MySQL 8 fts0fts.cc the same in lower
// case): no table's of their own. A FULLTEXT table is loaded as rows,
// which rebuild its index, so they are not restored.
var ftsAuxiliary = regexp.MustCompile(`^(FTS|fts)_[0-9a-fA-F]{16}_([0-9a-fA-F]{16}_(INDEX|index)_[0-9]+|[A-Za-z_]+)$`)

// tableSubset is what a table restore takes from a backup.
type tableSubset struct {
	patterns []TablePattern
}

// wants reports whether the restore takes path p.
func (s *tableSubset) wants(p string) bool {
	if toolFile(p) {
		return true
	}
	_, _, _, _, ok := s.tableFile(p)
	return ok
}

// tableFile is tableOf for the files of the tables the patterns ask for.
func (s *tableSubset) tableFile(p string) (db, table, ext string, partition, ok bool) {
	db, table, ext, partition, ok = tableOf(p)
	ok = ok && slices.ContainsFunc(s.patterns, func(tp TablePattern) bool { return tp.matches(db, table) })
	return db, table, ext, partition, ok
}

// tables groups paths (a backup's, or what was extracted) into the tables
// the patterns ask for. Every pattern must match a table with data files: a
// name that matches nothing, or only a view, is an error naming it.
func (s *tableSubset) tables(paths []string, backup string) ([]*TableFiles, error) {
	byName := map[string]*TableFiles{}
	var order []string
	for _, p := range paths {
		db, table, ext, partition, ok := s.tableFile(p)
		if !ok {
			continue
		}
		key := db + "." + table
		t := byName[key]
		if t == nil {
			t = &TableFiles{DB: db, Table: table}
			byName[key] = t
			order = append(order, key)
		}
		t.Paths = append(t.Paths, p)
		if e, ok := engineByExt[ext]; ok {
			t.Engine = e
		}
		t.Partitioned = t.Partitioned || partition
	}
	slices.Sort(order)
	var out []*TableFiles
	for _, k := range order {
		if t := byName[k]; t.Engine != "" {
			out = append(out, t)
		}
	}
	for _, tp := range s.patterns {
		found := slices.ContainsFunc(out, func(t *TableFiles) bool { return tp.matches(t.DB, t.Table) })
		if found {
			continue
		}
		if tp.Table != "*" {
			if t := byName[tp.String()]; t != nil {
				return nil, flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_NOT_FOUND,
					"%s in backup %s has a definition but no data file (a view?): only tables are restored", tp, backup))
			}
		}
		return nil, flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_NOT_FOUND, "no table %s in backup %s", tp, backup))
	}
	for _, t := range out {
		if err := importable(t, backup); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// copiedEngines are the engines whose tables are imported by copying their
// files in (tableimport): MariaDB keeps such a table whole in its own files,
// defined by its .frm. ARCHIVE is not among them: its plugin is not loaded
// by default, so it is not tested here.
var copiedEngines = map[string]bool{"Aria": true, "MyISAM": true, "CSV": true}

// importable refuses, naming the engine, the tables restore-table cannot
// import: a non-InnoDB table of another engine, of MySQL 8 (no .frm: its
// definition is in an .sdi, imported with IMPORT TABLE, MySQL 8.0 Reference
// Manual, "IMPORT TABLE Statement"; not supported, not run here), or
// partitioned.
func importable(t *TableFiles, backup string) error {
	if t.Engine == "InnoDB" {
		return nil
	}
	why := ""
	switch {
	case !copiedEngines[t.Engine]:
		why = "restore-table imports InnoDB, Aria, MyISAM and CSV tables"
	case !slices.ContainsFunc(t.Paths, func(p string) bool { return path.Ext(p) == ".frm" }):
		why = "it has no .frm (MySQL 8 keeps its definition in an .sdi, imported with IMPORT TABLE, which restore-table does not do)"
	case t.Partitioned:
		why = "partitioned tables of engines other than InnoDB are not imported"
	default:
		return nil
	}
	return flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_UNIMPLEMENTED, "table %s in backup %s is %s: %s; restore the backup whole "+
		"(vtfifo restore) and copy the table's files from there", t.Name(), backup, t.Engine, why))
}

// checkExported checks, after the tool's --prepare --export, that every
// InnoDB data file of tables has its .cfg beside it: without it MariaDB
// refuses to import a table with secondary indexes and MySQL imports
// without checking the schema, and mariabackup says nothing when it wrote
// none.
func checkExported(dir string, tables []*TableFiles) error {
	for _, t := range tables {
		for _, p := range exportedFiles(t) {
			if !strings.HasSuffix(p, ".cfg") {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
				return errtext.Errorf(vtrpcpb.Code_INTERNAL, "table %s: the tool's --export wrote no %s: the table cannot be imported safely; see the tool's "+
					"output above", t.Name(), p)
			}
		}
	}
	return nil
}

// exportedFiles lists what a table restore leaves for table t in the
// target directory once prepared: each tablespace's .ibd (a .new one
// renamed) with its .cfg, and the files the server defines the table with.
func exportedFiles(t *TableFiles) []string {
	var out []string
	for _, p := range t.Paths {
		ext := path.Ext(p)
		switch ext {
		case ".delta", ".meta", ".ren", ".del":
			continue
		case ".ibd", ".new":
			base := strings.TrimSuffix(p, ext)
			out = append(out, base+".ibd", base+".cfg")
		default:
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// frames sets up the extraction of one backup of a table restore's chain:
// only the tables' and the tool's files, from only the frames that hold them
// where the backup has a lane index, from whole lanes where it has none. It
// returns the paths the index says must come out, the stored bytes to read
// and a line saying what is read.
func (t *tableRestore) frames(ctx context.Context, c member, from *storedLanes,
	opts *xbstream.ExtractOptions) (want []string, toRead int64, what string, err error) {
	m := c.m
	opts.Select, opts.ListFiles = t.subset.wants, true
	ix, err := ReadLaneIndex(ctx, c.bh, m)
	if err != nil {
		return nil, 0, "", err
	}
	if ix == nil {
		t.logger.Warningf("fifo restore: backup %s has no lane index (taken before lanes were seekable, or with an external compressor): reading all %d "+
			"stored bytes of its lanes for the tables' files", m.BackupName, m.StoredBytes)
		t.readStreamBytes += m.RawBytes
		return nil, m.StoredBytes, fmt.Sprintf("the tables' files from the whole lanes of %s (%d stored bytes)", m.BackupName, m.StoredBytes), nil
	}
	if t.tables == nil {
		if err := t.found(ix.Paths, m.BackupName); err != nil {
			return nil, 0, "", err
		}
	}
	selected := make([]bool, len(ix.Paths))
	for i, p := range ix.Paths {
		if selected[i] = t.subset.wants(p); selected[i] {
			want = append(want, p)
		}
	}
	from.stretches = make([][]stretch, len(m.Lanes))
	var raw int64
	for i, l := range m.Lanes {
		stretches, rawBytes := ix.framesFor(i, l.StoredBytes, l.RawBytes, selected)
		from.stretches[i] = stretches
		raw += rawBytes
		for _, st := range stretches {
			toRead += st.n
		}
	}
	if err := t.roomFor(raw); err != nil {
		return nil, 0, "", err
	}
	t.readStreamBytes += raw
	what = fmt.Sprintf("%d files from %d of %d stored bytes (%.1f%%, %d stream bytes) of %s",
		len(want), toRead, m.StoredBytes, 100*float64(toRead)/float64(max(m.StoredBytes, 1)), raw, m.BackupName)
	return want, toRead, what, nil
}

// roomFor refuses, before anything is read, a restore whose frames hold
// more stream bytes (an upper bound of the files they give) than its
// directory's file system has free, with a tenth more for the prepare and
// 1 % of the file system left to whatever else writes there (the live
// server the table goes into may share it).
func (t *tableRestore) roomFor(raw int64) error {
	free, size := fsSpace(existingParent(t.dir))
	if need := raw + t.readStreamBytes + raw/10 + size/100; free >= 0 && free < need {
		return flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_RESOURCE_EXHAUSTED, "%s has %s free, and the table restore needs about %s "+
			"there (the frames holding its files: %s of stream; a tenth more for the prepare; and 1%% of the file system left to "+
			"whatever else writes there): nothing was downloaded; choose a --target-dir with more room", t.dir, flagvalue.SizeText(free),
			flagvalue.SizeText(need), flagvalue.SizeText(raw+t.readStreamBytes)))
	}
	return nil
}

// existingParent is dir, or its nearest parent that exists.
func existingParent(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			return dir
		}
		dir = filepath.Dir(dir)
	}
}

// extracted checks what one backup of a table restore's chain gave: every
// file its index named (each whole: Extract checked that), or, without an
// index, the tables asked for.
func (t *tableRestore) extracted(c member, want []string, got map[string]int64) error {
	for _, p := range want {
		if _, ok := got[p]; !ok {
			return errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: %s: its lane index names it but the frames read did not hold it", c.m.BackupName, p)
		}
	}
	if t.tables == nil {
		paths := make([]string, 0, len(got))
		for p := range got {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		return t.found(paths, c.m.BackupName)
	}
	return nil
}

// found sets the tables the restore restores from the full backup's paths,
// and hands them to onTables.
func (t *tableRestore) found(paths []string, backup string) error {
	tables, err := t.subset.tables(paths, backup)
	if err != nil {
		return err
	}
	t.tables = tables
	if t.onTables == nil {
		return nil
	}
	list := make([]TableFiles, len(tables))
	for i, tf := range tables {
		list[i] = *tf
	}
	return t.onTables(list)
}
