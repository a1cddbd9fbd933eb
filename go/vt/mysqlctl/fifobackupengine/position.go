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

	"github.com/vtfifo/vtfifo/go/internal/errtext"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// The backup's replication position is the one the tool wrote in its
// xtrabackup_info (mariadb_backup_info), which it writes twice from the same
// values: into the stream, and into --extra-lsndir, where the backup reads it
// for the MANIFEST. A restore checks the MANIFEST's against the stream's own,
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

// keptInfoFile is the tool's info file among an extraction's kept files
// (xbstream.ExtractOptions.Keep: isInfoFile); "" when there is none.
func keptInfoFile(kept map[string][]byte) (name string, data []byte) {
	for _, n := range infoFileNames {
		if data, ok := kept[n]; ok {
			return n, data
		}
	}
	return "", nil
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

// checkPosition fails when the tool's info file of the backup (name, its
// contents data, as extracted or kept) records another replication position
// than its MANIFEST gives. A backup's files without it (name "") have nothing
// to check, and say so in the returned note.
func checkPosition(m *Manifest, name string, data []byte) (note string, err error) {
	if m.Position.GTIDSet == nil {
		return "", nil
	}
	if name == "" {
		return "its files hold no xtrabackup_info: the MANIFEST's position was not checked against it", nil
	}
	recorded, err := parseInfoPosition(data, name, m.Position.GTIDSet.Flavor())
	if err != nil {
		return "", errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: the MANIFEST gives position %s, but its own %s records none: %s", m.BackupName,
			replication.EncodePosition(m.Position), name, errtext.Text(err))
	}
	if !recorded.Equal(m.Position) {
		return "", errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: the MANIFEST gives position %s, but its own %s records %s: a server restored "+
			"from it would replicate from the wrong transaction (the MANIFEST was edited, or is another backup's)", m.BackupName,
			replication.EncodePosition(m.Position), name, replication.EncodePosition(recorded))
	}
	return "", nil
}
