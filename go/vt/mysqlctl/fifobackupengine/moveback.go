package fifobackupengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"vitess.io/vitess/go/vt/mysqlctl"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// restoreLayout is where a restore puts files: the tablet's directories, and
// those its my.cnf sets that Vitess's Mycnf does not carry.
type restoreLayout struct {
	DataDir, DataHomeDir, LogHomeDir string
	UndoDir                          string // innodb_undo_directory; "" = DataDir
	AriaLogDir                       string // MariaDB's aria_log_dir_path; "" = DataDir
	Flavor                           string // the tool that took the backup
	// MariaDBData: the backup is of a MariaDB server (its MANIFEST's
	// MySQLVersion), whose redo log the prepare writes and the server needs.
	MariaDBData bool
	BinLogPath  string // log-bin prefix; "" = binlogs go to DataDir
	// ExternalDirs: where tablespaces that lived outside DataDir may be put.
	ExternalDirs []string
}

func layoutFor(cnf *mysqlctl.Mycnf, cfg *Config) (restoreLayout, error) {
	l := restoreLayout{DataDir: cnf.DataDir, DataHomeDir: cnf.InnodbDataHomeDir, LogHomeDir: cnf.InnodbLogGroupHomeDir,
		BinLogPath: cnf.BinLogPath, ExternalDirs: slices.Clone(cfg.ExternalTablespaceDirs)}
	lines, err := readOptionFile(cnf.Path)
	if err != nil {
		return l, err
	}
	vals := lastValues(inGroups(lines, serverOptionGroups), "innodb_undo_directory", "innodb_directories", "aria_log_dir_path")
	l.UndoDir = underDataDir(cnf.DataDir, vals["innodb_undo_directory"])
	l.AriaLogDir = underDataDir(cnf.DataDir, vals["aria_log_dir_path"])
	// MySQL's own list of directories it scans for tablespaces.
	for _, d := range strings.FieldsFunc(vals["innodb_directories"], func(r rune) bool { return r == ';' }) {
		if d = strings.TrimSpace(d); filepath.IsAbs(d) {
			l.ExternalDirs = append(l.ExternalDirs, filepath.Clean(d))
		}
	}
	return l, nil
}

// setsAriaLogDir reports whether the option file (if any) gives the server
// an aria_log_dir_path.
func setsAriaLogDir(path string) bool {
	if path == "" {
		return false
	}
	lines, err := readOptionFile(path)
	return err == nil && lastValues(inGroups(lines, serverOptionGroups), "aria_log_dir_path")["aria_log_dir_path"] != ""
}

// underDataDir resolves a directory option as the server does: relative to
// the data directory ("" stays "").
func underDataDir(dataDir, dir string) string {
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(dataDir, dir)
	}
	return filepath.Clean(dir)
}

// placement moves one entry of the staging directory (Src, relative) to Dst.
type placement struct {
	Src, Dst string
	// Replace: a regular file at Dst (a tablespace of the data this restore
	// replaces, outside the directories it cleared) is replaced; otherwise
	// an existing Dst is an error.
	Replace bool
}

var (
	undoName    = regexp.MustCompile(`^undo_?[0-9]{3}$`) // MySQL 8 undo_001, MariaDB undo001
	ariaLogName = regexp.MustCompile(`^aria_log\.[0-9]{8}$`)
	ibLogfile   = regexp.MustCompile(`^ib_logfile[0-9]+$`)
)

// isToolMetadata says whether a top-level file of a prepared backup is the
// tool's own and stays out of the data directory. Only files: a directory is
// a database whatever its name. From PXB backup_copy.cc,
// should_skip_file_on_copy_back (its exact names, the keyring component
// configurations, ib_logfile<n>, the suffixes of files it transforms; it
// copies xtrabackup_info, _slave_info, _galera_info and _keys into the data
// directory), and mariabackup's copy_back (the same names, and its own
// mariadb_backup_* renames of them).
func isToolMetadata(name string, l restoreLayout) bool {
	flavor := l.Flavor
	switch name {
	case "backup-my.cnf", "xtrabackup_logfile", "xtrabackup_binary", "xtrabackup_binlog_info",
		"xtrabackup_checkpoints", "xtrabackup_tablespaces", "xtrabackup_binlog_pos_innodb",
		"component_keyring_file.cnf", "component_keyring_kmip.cnf", "component_keyring_kms.cnf":
		return true
	case "xtrabackup_info", "xtrabackup_slave_info", "xtrabackup_galera_info", "xtrabackup_keys":
		return flavor != FlavorXtrabackup
	}
	if strings.HasPrefix(name, "mariadb_backup_") {
		return true
	}
	if flavor == FlavorXtrabackup && !l.MariaDBData && ibLogfile.MatchString(name) {
		return true // MySQL creates its redo anew
	}
	for _, suffix := range toolTransformedSuffixes {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return strings.HasSuffix(name, ".pmap") || strings.HasSuffix(name, ".tmp") // the tool's scratch files
}

// checkArrived proves the move-back complete: every placement is at its
// destination, and nothing but the tool's metadata is left in staging (which
// is removed after the restore: a left entry would be lost with it).
func checkArrived(staging string, moves []placement, l restoreLayout) error {
	for _, m := range moves {
		if _, err := os.Lstat(m.Dst); err != nil {
			return errtext.Errorf(vtrpcpb.Code_INTERNAL, "the restore moved %s to %s, but it is not there: %v", m.Src, m.Dst, err)
		}
	}
	entries, err := os.ReadDir(staging)
	if err != nil {
		return errtext.Wrapf(err, "cannot check what the restore left in %s", staging)
	}
	for _, e := range entries {
		if !e.IsDir() && isToolMetadata(e.Name(), l) {
			continue
		}
		if filepath.Ext(e.Name()) == ".index" || strings.HasPrefix(e.Name(), "ib_logfile") {
			continue // a binlog index rewritten in place; a redo file PXB leaves behind
		}
		return errtext.Errorf(vtrpcpb.Code_INTERNAL, "the backup holds %s, which the restore did not place (a database or file of the backup would be "+
			"lost with the staging directory %s); the restore is failed", e.Name(), staging)
	}
	return nil
}

// planMoveBack decides where every entry of a prepared backup in staging
// goes, as Percona XtraBackup's copy-back (backup_copy.cc, copy_back) and
// mariabackup's move-back do (docs/fifo-engine.md has the table). Paths that
// come from the backup (xtrabackup_tablespaces, .isl files) are checked
// against l.ExternalDirs. It returns the moves in order (tablespaces that go
// outside the data directory first, then whole top-level entries) and the
// binlog index to write, if the backup has a binlog.
func planMoveBack(staging string, l restoreLayout) (moves []placement, binlogIndex *placementWrite, err error) {
	external, err := externalTablespaces(staging)
	if err != nil {
		return nil, nil, err
	}
	rels := make([]string, 0, len(external))
	for rel := range external {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		t := external[rel]
		if err := checkExternalPath(t.path, l.ExternalDirs); err != nil {
			return nil, nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "tablespace %s (%s) lived at %s: %v", rel, t.from, t.path, err)
		}
		moves = append(moves, placement{Src: rel, Dst: t.path, Replace: true})
	}

	entries, err := os.ReadDir(staging)
	if err != nil {
		return nil, nil, err
	}
	binlogs, binlogIndex, err := planBinlog(staging, l)
	if err != nil {
		return nil, nil, err
	}
	undoDir := l.UndoDir
	if undoDir == "" {
		undoDir = l.DataDir
	}
	for _, e := range entries {
		name := e.Name()
		var dst string
		switch {
		case !e.IsDir() && isToolMetadata(name, l):
			continue
		case binlogs[name] != "":
			dst = binlogs[name]
		case binlogIndex != nil && name == binlogIndex.Src:
			continue // rewritten, not moved
		case e.IsDir() && name == "#innodb_redo":
			dst = filepath.Join(l.LogHomeDir, name)
		case e.IsDir():
			dst = filepath.Join(l.DataDir, name)
		case external[name].path != "":
			continue // a general tablespace placed above
		case strings.HasPrefix(name, "ibdata"):
			dst = filepath.Join(l.DataHomeDir, name)
		case strings.HasPrefix(name, "ib_logfile"):
			dst = filepath.Join(l.LogHomeDir, name) // mariabackup's prepare writes it
		case l.AriaLogDir != "" && (name == "aria_log_control" || ariaLogName.MatchString(name)):
			// mariabackup --copy-back --aria-log-dir-path (MDEV-30968). The
			// directory is not cleared with the data directory: the log of the
			// data this restore replaces is replaced.
			moves = append(moves, placement{Src: name, Dst: filepath.Join(l.AriaLogDir, name), Replace: true})
			continue
		case undoName.MatchString(name) || strings.HasSuffix(name, ".ibu"):
			dst = filepath.Join(undoDir, name)
		default:
			dst = filepath.Join(l.DataDir, name)
		}
		moves = append(moves, placement{Src: name, Dst: dst})
	}
	return moves, binlogIndex, nil
}

type externalTablespace struct {
	path string // where it lived, from the backup
	from string // what says so
}

// externalTablespaces maps the files of staging (relative paths) that lived
// outside the data directory to their paths: on MySQL 8 from
// xtrabackup_tablespaces (Percona's space_map.cc; the file of tablespace
// "db/t" is db/t.ibd, of general tablespace "ts" ts.ibd), on MariaDB from
// each db/t.isl (one absolute path, InnoDB's RemoteDatafile), partitions
// (t#P#p0) alike.
func externalTablespaces(staging string) (map[string]externalTablespace, error) {
	out := map[string]externalTablespace{}
	b, err := os.ReadFile(filepath.Join(staging, "xtrabackup_tablespaces"))
	switch {
	case err == nil:
		var doc struct {
			Version     int `json:"version"`
			Tablespaces []struct {
				FileName string `json:"file_name"`
				Name     string `json:"tablespace_name"`
				Type     string `json:"tablespace_type"`
			} `json:"external_tablespaces"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, errtext.Wrapf(err, "cannot parse xtrabackup_tablespaces of the backup")
		}
		for _, t := range doc.Tablespaces {
			if t.Type == "UNDO_LOG" {
				continue // undo tablespaces go to the undo directory, as in copy-back
			}
			rel := filepath.FromSlash(t.Name) + ".ibd"
			if _, err := os.Lstat(filepath.Join(staging, rel)); err == nil {
				out[rel] = externalTablespace{path: t.FileName, from: "xtrabackup_tablespaces"}
			}
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	isls, err := filepath.Glob(filepath.Join(staging, "*", "*.isl"))
	if err != nil {
		return nil, err
	}
	for _, isl := range isls {
		b, err := os.ReadFile(isl)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(staging, strings.TrimSuffix(isl, ".isl")+".ibd")
		if _, err := os.Lstat(filepath.Join(staging, rel)); err == nil {
			out[rel] = externalTablespace{path: strings.TrimRight(string(b), " \t\r\n\x00"), from: filepath.Base(isl)}
		}
	}
	return out, nil
}

// checkExternalPath: a path read from the backup may only name a new .ibd
// under one of dirs, symbolic links resolved.
func checkExternalPath(p string, dirs []string) error {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || !strings.HasSuffix(p, ".ibd") {
		return errors.New("not a clean absolute path of an .ibd file; refused")
	}
	if len(dirs) == 0 {
		return errors.New("outside the data directory, and no directory is allowed for such tablespaces: add its directory to " +
			"--fifo-backup-external-tablespace-dirs (or innodb_directories in my.cnf) and restore again")
	}
	// The deepest existing ancestor, links resolved, must stay inside.
	anc := filepath.Dir(p)
	for {
		if _, err := os.Lstat(anc); err == nil || anc == "/" {
			break
		}
		anc = filepath.Dir(anc)
	}
	real, err := filepath.EvalSymlinks(anc)
	if err != nil {
		return err
	}
	rest, _ := filepath.Rel(anc, p)
	real = filepath.Join(real, rest)
	for _, d := range dirs {
		rd, err := filepath.EvalSymlinks(d)
		if err != nil {
			rd = d
		}
		if strings.HasPrefix(real, rd+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("outside the directories a restore may write tablespaces to (%s): add its directory to --fifo-backup-external-tablespace-dirs "+
		"(or innodb_directories in my.cnf) and restore again", strings.Join(dirs, ", "))
}

// placementWrite is a file the restore writes rather than moves.
type placementWrite struct {
	Src  string // the backup's file it replaces
	Dst  string
	Data []byte
}

// planBinlog places the binlog Percona XtraBackup copies with a backup (its
// last file, named on the last line of the top-level *.index): under
// log-bin's directory and name (the original number kept), its index
// rewritten to that one file, as copy-back's binlog_file_location does.
// mariabackup copies no binlog.
func planBinlog(staging string, l restoreLayout) (map[string]string, *placementWrite, error) {
	indexes, err := filepath.Glob(filepath.Join(staging, "*.index"))
	if err != nil || len(indexes) == 0 {
		return nil, nil, err
	}
	index := indexes[0]
	b, err := os.ReadFile(index)
	if err != nil {
		return nil, nil, err
	}
	lines := strings.Fields(string(b))
	if len(lines) == 0 {
		return nil, nil, nil
	}
	name := filepath.Base(lines[len(lines)-1])
	if _, err := os.Lstat(filepath.Join(staging, name)); err != nil {
		return nil, nil, nil
	}
	dst, indexDst := filepath.Join(l.DataDir, name), filepath.Join(l.DataDir, filepath.Base(index))
	if l.BinLogPath != "" {
		base, _, _ := strings.Cut(filepath.Base(l.BinLogPath), ".")
		dst = filepath.Join(filepath.Dir(l.BinLogPath), base+filepath.Ext(name))
		indexDst = l.BinLogPath + ".index"
	}
	line := dst
	if filepath.Dir(dst) == filepath.Clean(l.DataDir) {
		line = filepath.Base(dst)
	}
	return map[string]string{name: dst}, &placementWrite{Src: filepath.Base(index), Dst: indexDst, Data: []byte(line + "\n")}, nil
}

// applyMoveBack carries out a plan: parent directories created (0750),
// never over an existing file but a regular one a placement may replace.
func applyMoveBack(staging string, moves []placement, index *placementWrite) error {
	for _, m := range moves {
		if err := os.MkdirAll(filepath.Dir(m.Dst), 0o750); err != nil {
			return errtext.Wrapf(err, "cannot create the directory of %s", m.Dst)
		}
		if st, err := os.Lstat(m.Dst); err == nil {
			if !m.Replace || !st.Mode().IsRegular() {
				return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "cannot move %s to %s: a %s is there, and a restore never writes over it", m.Src, m.Dst,
					describeMode(st.Mode()))
			}
			if err := os.Remove(m.Dst); err != nil {
				return errtext.Wrapf(err, "cannot replace %s", m.Dst)
			}
		}
		if err := moveByRename(filepath.Join(staging, m.Src), m.Dst); err != nil {
			return err
		}
	}
	if index != nil {
		if err := os.MkdirAll(filepath.Dir(index.Dst), 0o750); err != nil {
			return errtext.Wrapf(err, "cannot create the directory of %s", index.Dst)
		}
		if err := os.WriteFile(index.Dst, index.Data, 0o640); err != nil {
			return errtext.Wrapf(err, "cannot write the binlog index %s", index.Dst)
		}
	}
	return nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "file"
	}
	return "special file"
}
