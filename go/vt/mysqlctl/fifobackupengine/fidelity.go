package fifobackupengine

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// A backup is listed only when it is what it says: a full copy of every
// table the server had, in files the restore can use. The checks here look at
// what the tool actually did, whatever told it to (its command line, any
// option file or group it read, a default of a new version).

// streamFiles is the set of files the tool's stream held, as the splitter
// dealt their end records.
type streamFiles map[string]struct{}

// toolTransformedSuffixes are the names the tools give files they compressed
// or encrypted themselves (PXB backup_copy.cc, should_skip_file_on_copy_back;
// mariabackup's .qp). A table's file never ends so: '.' in a table name is
// written @002e.
var toolTransformedSuffixes = []string{".qp", ".zst", ".lz4", ".xbcrypt"}

// fileEnded records a file of the stream, and refuses at once one the tool
// compressed or encrypted, which the restore could not prepare.
func (s streamFiles) fileEnded(path string) error {
	path = strings.TrimPrefix(path, "./")
	for _, suffix := range toolTransformedSuffixes {
		if strings.HasSuffix(path, suffix) {
			return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION,
				"the backup tool wrote %s, a file it compressed or encrypted itself (--compress or --encrypt, from its command line or an option file it "+
					"read); the restore cannot prepare such files, so the backup is refused", path)
		}
	}
	s[path] = struct{}{}
	return nil
}

func (s streamFiles) holds(file string) bool {
	_, whole := s[file]
	_, delta := s[file+".delta"]
	return whole || delta
}

// checkToolInfo reads what the tool says it did in its xtrabackup_info (PXB
// and mariabackup write compressed, encrypted and partial lines,
// backup_copy.cc / xtrabackup.cc write_xtrabackup_info): a backup compressed,
// encrypted or partial by the tool's own options is refused.
func checkToolInfo(dir string) error {
	var f *os.File
	var err error
	for _, name := range []string{"xtrabackup_info", "mariadb_backup_info"} {
		if f, err = os.Open(filepath.Join(dir, name)); err == nil {
			break
		}
	}
	if err != nil {
		return errtext.Wrapf(err, "cannot read the tool's xtrabackup_info in %s", dir)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 16<<20)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case k == "partial" && v == "Y":
			return errtext.New(vtrpcpb.Code_FAILED_PRECONDITION, "the backup tool says its backup is partial (partial = Y in xtrabackup_info: --databases "+
				"or --tables, from its command line or an option file it read); a partial backup would be listed as a full one, so it is refused")
		case (k == "compressed" || k == "encrypted") && v != "N" && v != "":
			return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "the backup tool says its backup is %s (%s = %s in xtrabackup_info); the restore "+
				"cannot prepare such files, so the backup is refused", k, k, v)
		}
	}
	return s.Err()
}

// tableFile is a table of the server and the file of it a backup must hold.
type tableFile struct {
	Table string // schema.table, for errors
	File  string // relative to the data directory
	// ID tells a table from one of the same name created in its place
	// (InnoDB's table id; else the creation time).
	ID string
}

// checkComplete fails naming what is missing when a table the server had
// both before and after the backup, the same table throughout (not dropped
// or recreated during it), has no file in the stream; in an incremental
// backup an InnoDB file comes as its delta (t.ibd.delta, write_filt.cc).
func checkComplete(files streamFiles, before, after []tableFile) error {
	still := map[string]string{}
	for _, t := range after {
		still[t.File] = t.ID
	}
	var missing []string
	for _, t := range before {
		if id, ok := still[t.File]; ok && id == t.ID && !files.holds(t.File) {
			missing = append(missing, fmt.Sprintf("%s (%s)", t.Table, t.File))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	shown := missing[:min(len(missing), 10)]
	more := ""
	if len(missing) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(missing)-len(shown))
	}
	return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION,
		"the backup tool's stream lacks %d tables or databases the server had from the start of the backup to its end: %s%s; a backup that would restore "+
			"without them is refused (was the tool told to copy only some databases or tables?)",
		len(missing), strings.Join(shown, ", "), more)
}

// queryRows runs a query whose every column is text.
type queryRows func(ctx context.Context, query string) ([][]string, error)

// serverTableFiles lists the tables of the server and the file each must
// have in a full backup of it:
//   - MariaDB: every table and sequence has its .frm (mariabackup copies
//     them all), partitions included; InnoDB's own list gives the file names
//     exactly, others are encoded here (filenameOf).
//   - MySQL 8: InnoDB tables in their own tablespace have NAME.ibd
//     (INFORMATION_SCHEMA.INNODB_TABLES, NAME as the file is named, with
//     partitions as t#p#p0); tables in the system or a general tablespace
//     have no file of their own and are held by that tablespace's.
//     MyISAM, CSV and ARCHIVE tables have their data file.
//
// Tables whose names this cannot encode are left out (none are lost by it:
// the check only ever fails a backup).
func serverTableFiles(ctx context.Context, query queryRows, mariadb bool) ([]tableFile, error) {
	if mariadb {
		return mariadbTableFiles(ctx, query)
	}
	return mysqlTableFiles(ctx, query)
}

const skippedSchemas = "'information_schema','performance_schema'"

func mariadbTableFiles(ctx context.Context, query queryRows) ([]tableFile, error) {
	ids, err := innodbTableIDs(ctx, query, "SELECT NAME, TABLE_ID FROM information_schema.INNODB_SYS_TABLES")
	if err != nil {
		return nil, err
	}
	rows, err := query(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME, CREATE_TIME FROM information_schema.TABLES WHERE "+
		"TABLE_TYPE IN ('BASE TABLE','SEQUENCE','SYSTEM VERSIONED') AND TABLE_SCHEMA NOT IN ("+skippedSchemas+")")
	if err != nil {
		return nil, err
	}
	var out []tableFile
	for _, r := range rows {
		db, okDB := filenameOf(r[0])
		t, okT := filenameOf(r[1])
		if okDB && okT {
			name := db + "/" + t
			out = append(out, tableFile{Table: r[0] + "." + r[1], File: name + ".frm", ID: cmp.Or(ids[name], r[2])})
		}
	}
	// Every database, empty ones too, by its db.opt (CREATE DATABASE writes
	// it; mariabackup copies it).
	rows, err = query(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ("+skippedSchemas+
		") AND SCHEMA_NAME NOT LIKE '#mysql50#%'")
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if db, ok := filenameOf(r[0]); ok {
			out = append(out, tableFile{Table: "database " + r[0], File: db + "/db.opt"})
		}
	}
	return out, nil
}

// innodbTableIDs maps InnoDB's table names (db/t, as the files are named;
// a partitioned table by its first partition's db/t#P#p) to their ids.
func innodbTableIDs(ctx context.Context, query queryRows, q string) (map[string]string, error) {
	rows, err := query(ctx, q)
	if err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, r := range rows {
		name := r[0]
		if i := strings.Index(strings.ToUpper(name), "#P#"); i > 0 {
			name = name[:i]
		}
		if _, seen := ids[name]; !seen {
			ids[name] = r[1]
		}
	}
	return ids, nil
}

func mysqlTableFiles(ctx context.Context, query queryRows) ([]tableFile, error) {
	rows, err := query(ctx, "SELECT t.NAME, t.TABLE_ID FROM information_schema.INNODB_TABLES t JOIN information_schema.INNODB_TABLESPACES s ON "+
		"s.SPACE = t.SPACE WHERE s.SPACE_TYPE = 'Single'")
	if err != nil {
		return nil, err
	}
	var out []tableFile
	for _, r := range rows {
		out = append(out, tableFile{Table: strings.Replace(r[0], "/", ".", 1), File: r[0] + ".ibd", ID: r[1]})
	}
	rows, err = query(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME, ENGINE, CREATE_TIME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' AND "+
		"ENGINE IN ('MyISAM','CSV','ARCHIVE') AND TABLE_SCHEMA NOT IN ("+skippedSchemas+")")
	if err != nil {
		return nil, err
	}
	ext := map[string]string{"MyISAM": ".MYD", "CSV": ".CSV", "ARCHIVE": ".ARZ"}
	for _, r := range rows {
		db, okDB := filenameOf(r[0])
		t, okT := filenameOf(r[1])
		if okDB && okT {
			out = append(out, tableFile{Table: r[0] + "." + r[1], File: db + "/" + t + ext[r[2]], ID: r[3]})
		}
	}
	return out, nil
}

// filenameOf encodes a schema or table name as the server names its files
// (strings/ctype-utf8.c, my_charset_filename): [0-9A-Za-z_] as is, other
// characters as @ and four hex digits. Characters the charset maps to
// two-character codes (Latin, Greek, Cyrillic and other letters in
// U+00C0..U+05FF, U+1E00..U+1FFF, U+2160..U+217F, U+24B6..U+24E9,
// U+FF20..U+FF5F) are not encoded here: ok is false.
func filenameOf(name string) (string, bool) {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= '0' && r <= '9', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z', r == '_':
			b.WriteRune(r)
		case r >= 0xC0 && r <= 0x5FF, r >= 0x1E00 && r <= 0x1FFF, r >= 0x2160 && r <= 0x217F,
			r >= 0x24B6 && r <= 0x24E9, r >= 0xFF20 && r <= 0xFF5F, r > 0xFFFF:
			return "", false
		default:
			fmt.Fprintf(&b, "@%04x", r)
		}
	}
	return b.String(), true
}
