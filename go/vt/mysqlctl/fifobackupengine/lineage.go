package fifobackupengine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// An incremental backup copies the InnoDB pages whose LSN is above its
// base's: that is only a delta of the data directory it runs on if that
// directory descends, page for page, from the base. Two replicas restored
// from one backup have diverged since (each its own LSNs); a directory
// replaced by another engine's restore or a fresh init shares nothing with
// the old one. The lineage file records what a data directory descends from:
// the chain it was restored from, and a name for its own life, which every
// backup taken from it records (Manifest.Lineage). A base is usable only if
// it is in that set; anything else takes a full backup.
//
// The file lives in the tablet directory, beside the data directory and
// never inside it (no backup tool or other engine copies it), and names the
// data directory it was written for by device, inode and birth time: a data
// directory removed and made again (another engine's restore, mysqlctl init)
// does not match, and its first backup is full.
const lineageFileName = "fifo_lineage.json"

type lineage struct {
	// Instance names this data directory's life: written by a fifo restore,
	// or by the first fifo backup of a data directory without a valid file.
	Instance string
	// DataDir identifies the data directory (dirIdentity) it was written for.
	DataDir string
	// Restored is the chain the data directory was restored from, full
	// first, the restored backup last.
	Restored []string `json:",omitempty"`
}

// descendsFrom reports whether the data directory holds every page of the
// backup m: m was taken from it, or it was restored from m's chain at or after m.
func (l *lineage) descendsFrom(m *Manifest) bool {
	return (m.Lineage != "" && m.Lineage == l.Instance) || slices.Contains(l.Restored, m.BackupName)
}

func lineagePath(cnf *mysqlctl.Mycnf) string {
	return filepath.Join(cnf.TabletDir(), lineageFileName)
}

func newInstance() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// loadLineage returns the data directory's lineage. Without a valid file for
// this very directory it starts a new one (written at once) and says why.
func loadLineage(cnf *mysqlctl.Mycnf) (l lineage, fresh string, err error) {
	id, err := dirIdentity(cnf.DataDir)
	if err != nil {
		return l, "", errtext.Wrapf(err, "cannot identify the data directory %s", cnf.DataDir)
	}
	doc, rerr := os.ReadFile(lineagePath(cnf))
	switch {
	case errors.Is(rerr, fs.ErrNotExist):
		fresh = "the data directory was not restored or backed up by the fifo engine before"
	case rerr != nil:
		fresh = fmt.Sprintf("cannot read %s: %v", lineagePath(cnf), rerr)
	case json.Unmarshal(doc, &l) != nil || l.Instance == "":
		fresh = fmt.Sprintf("%s is damaged", lineagePath(cnf))
	case l.DataDir != id:
		fresh = "the data directory was replaced since the fifo engine last restored or backed it up (another engine's restore, or a new init)"
	default:
		return l, "", nil
	}
	l = lineage{Instance: newInstance(), DataDir: id}
	return l, fresh, writeLineage(cnf, l)
}

// restoredLineage records, after a restore moved a chain into place, that
// the data directory descends from it.
func restoredLineage(cnf *mysqlctl.Mycnf, chain []string) error {
	id, err := dirIdentity(cnf.DataDir)
	if err != nil {
		return errtext.Wrapf(err, "cannot identify the data directory %s", cnf.DataDir)
	}
	return writeLineage(cnf, lineage{Instance: newInstance(), DataDir: id, Restored: chain})
}

func writeLineage(cnf *mysqlctl.Mycnf, l lineage) error {
	doc, _ := json.MarshalIndent(l, "", "  ")
	p := lineagePath(cnf)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(doc, '\n'), 0o640); err != nil {
		return errtext.Wrapf(err, "cannot write %s", p)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return errtext.Wrapf(err, "cannot write %s", p)
	}
	return nil
}
