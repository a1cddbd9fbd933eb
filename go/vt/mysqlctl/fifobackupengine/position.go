package fifobackupengine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"vitess.io/vitess/go/mysql/replication"
	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/errtext"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// The backup's replication position is the one the tool wrote in its
// xtrabackup_info (mariadb_backup_info), which it writes twice from the same
// values: into the stream, and into --extra-lsndir, where the backup reads it
// for the MANIFEST (Percona XtraBackup 8.0/8.4: backup_mysql.cc
// write_xtrabackup_info, and xtrabackup.cc's --extra-lsndir copy, both from
// get_xtrabackup_info's binlog_pos, one mysql_binlog_position; mariabackup:
// the same get_xtrabackup_info, xtrabackup.cc xtrabackup_write_info). Run
// here with mariabackup only. A restore checks the MANIFEST's against the stream's own,
// since the MANIFEST's is what Vitess makes the restored server's GTID
// position: one that is not the data's would have it replicate from the
// wrong transaction, silently.

// infoFileNames are the names the tools give that file: Percona
// XtraBackup's, and mariabackup's before and after MariaDB renamed it.
var infoFileNames = []string{"xtrabackup_info", "mariadb_backup_info"}

var lastChangeRe = regexp.MustCompile(`GTID of the last change '([^']*)'`)

// positionFromInfo reads the replication position from the tool's
// xtrabackup_info in dir ("GTID of the last change '...'"), parsed with the
// server's flavor (a MySQL GTID set or a MariaDB GTID list); name is the
// file's name.
func positionFromInfo(dir, flavor string) (pos replication.Position, name string, err error) {
	name, data, err := readInfoFile(dir)
	if err != nil {
		return pos, "", err
	}
	if name == "" {
		return pos, "", errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "the tool wrote no xtrabackup_info in %s", dir)
	}
	pos, err = parseInfoPosition(data, name, flavor)
	return pos, name, err
}

// readInfoFile reads the tool's info file in dir: "" when there is none.
func readInfoFile(dir string) (name string, data []byte, err error) {
	for _, n := range infoFileNames {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", nil, errtext.Wrapf(err, "cannot read the tool's %s in %s", n, dir)
		}
		return n, data, nil
	}
	return "", nil, nil
}

// isInfoFile says whether path is the tool's info file.
func isInfoFile(path string) bool { return slices.Contains(infoFileNames, path) }

// parseInfoPosition is the position the info file name (its contents data)
// records.
func parseInfoPosition(data []byte, name, flavor string) (replication.Position, error) {
	m := lastChangeRe.FindSubmatch(data)
	if m == nil {
		return replication.Position{}, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "no \"GTID of the last change\" in the tool's %s", name)
	}
	text := strings.Join(strings.Fields(string(m[1])), "")
	if text == "" {
		return replication.Position{}, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "empty \"GTID of the last change\" in the tool's %s: "+
			"is binary logging with GTIDs on?", name)
	}
	pos, err := replication.ParsePosition(flavor, text)
	if err != nil {
		return pos, errtext.Wrapf(err, "cannot parse position %q of the tool's %s with flavor %s", text, name, flavor)
	}
	return pos, nil
}

// checkPosition fails when the tool's info file among the files an
// extraction or a verification of the backup kept (xbstream.ExtractOptions
// Keep: isInfoFile) records another replication position than its MANIFEST
// gives. A backup without that file has nothing to check, and says so.
func checkPosition(m *Manifest, kept map[string][]byte, logger logutil.Logger) error {
	if m.Position.GTIDSet == nil {
		return nil
	}
	i := slices.IndexFunc(infoFileNames, func(n string) bool { _, ok := kept[n]; return ok })
	if i < 0 {
		logger.Warningf("fifo: backup %s: its files hold no xtrabackup_info: the MANIFEST's position was not checked against it", m.BackupName)
		return nil
	}
	name := infoFileNames[i]
	recorded, err := parseInfoPosition(kept[name], name, m.Position.GTIDSet.Flavor())
	if err != nil {
		return errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: the MANIFEST gives position %s, but its own %s records none: %s", m.BackupName,
			replication.EncodePosition(m.Position), name, errtext.Text(err))
	}
	if !recorded.Equal(m.Position) {
		return errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: the MANIFEST gives position %s, but its own %s records %s: a server restored "+
			"from it would replicate from the wrong transaction (the MANIFEST was edited, or is another backup's)", m.BackupName,
			replication.EncodePosition(m.Position), name, replication.EncodePosition(recorded))
	}
	return nil
}
