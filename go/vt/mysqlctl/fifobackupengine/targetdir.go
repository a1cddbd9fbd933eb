package fifobackupengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"vitess.io/vitess/go/vt/logutil"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/procident"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// TargetDir is the directory a restore wrote into, and whether the restore
// created it (a directory that existed, empty, is the operator's).
type TargetDir struct {
	Path    string
	Created bool
}

// restoringMark is the file a restore keeps in its target directory while
// it writes there, naming its process (procident.Owner): a restore killed
// before it finished leaves it, so that the next one into the directory can
// say what is there (NotEmptyReason) instead of only that it is not empty.
// Nothing removes such a directory but the operator.
const restoringMark = ".vtfifo-restoring"

// claimEmptyDir creates dir, or checks that it is an empty directory, and
// marks it as being restored into.
func claimEmptyDir(dir string) (TargetDir, error) {
	d, err := emptyDir(dir)
	if err != nil {
		return d, err
	}
	if err := d.mark(); err != nil {
		return TargetDir{}, err
	}
	return d, nil
}

// mark creates the restore's mark in the directory, exclusively: of two
// restores that found one directory empty at once, the second is refused
// (as into a directory that is not empty) instead of writing beside the
// first, whose files its failure would remove.
func (d TargetDir) mark() error {
	f, err := os.OpenFile(filepath.Join(d.Path, restoringMark), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if errors.Is(err, os.ErrExist) {
		return notEmpty(d.Path)
	}
	if err == nil {
		err = errors.Join(json.NewEncoder(f).Encode(procident.Self()), f.Close())
	}
	if err != nil {
		_ = d.RemoveRestored()
		return hostsDir(errtext.Wrapf(err, "cannot write into the target directory %s", d.Path))
	}
	return nil
}

// hostsDir marks a failure to make, open or write the target directory:
// this host's, never the backup's.
func hostsDir(err error) error {
	return unreadable.Host(err, "the target directory cannot be made, read or written here")
}

func emptyDir(dir string) (TargetDir, error) {
	if err := os.Mkdir(dir, 0o750); err == nil {
		return TargetDir{Path: dir, Created: true}, nil
	} else if errors.Is(err, fs.ErrNotExist) {
		return TargetDir{}, flagvalue.Contradiction(errtext.Wrapf(err, "cannot create the target directory %s: its parent must be a directory "+
			"that can hold it; create it, or give another", dir))
	} else if !errors.Is(err, os.ErrExist) {
		return TargetDir{}, hostsDir(errtext.Wrapf(err, "cannot create the target directory"))
	}
	f, err := os.Open(dir)
	if err != nil {
		return TargetDir{}, hostsDir(errtext.Wrapf(err, "cannot open the target directory"))
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); !errors.Is(err, io.EOF) {
		if err == nil {
			return TargetDir{}, notEmpty(dir)
		}
		return TargetDir{}, hostsDir(errtext.Wrapf(err, "cannot read the target directory %s", dir))
	}
	return TargetDir{Path: dir}, nil
}

func notEmpty(dir string) error {
	return flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "the target directory %s is not empty: a restore never "+
		"writes over files%s", dir, NotEmptyReason(dir)))
}

// Done says the restore into the directory finished: a prepared one keeps
// its tablespaces inside (keepTablespacesInside), and the mark goes.
func (d TargetDir) Done(prepared bool, logger logutil.Logger) error {
	if prepared {
		if err := keepTablespacesInside(d.Path, logger); err != nil {
			return err
		}
	}
	return os.Remove(filepath.Join(d.Path, restoringMark))
}

// keepTablespacesInside has a prepared directory use the tablespaces it
// restored, and no other: a MariaDB table that lived outside the data
// directory (DATA DIRECTORY) comes with a db/t.isl naming the source's
// path, where the source's own file may be (on its host, on a replica or
// vtbackup host of the same layout), and mysqld started on the directory
// then refuses the table ("A tablespace has been found in multiple
// places") or, were the restored file missing, reads the other. Its file
// was restored at db/t.ibd, where MariaDB opens it without the .isl.
// (MySQL 8 keeps such paths in its data dictionary, and no .isl.)
func keepTablespacesInside(dir string, logger logutil.Logger) error {
	ext, err := externalTablespaces(dir)
	if err != nil {
		return err
	}
	for rel, t := range ext {
		if !strings.HasSuffix(t.from, ".isl") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, strings.TrimSuffix(rel, ".ibd")+".isl")); err != nil {
			return err
		}
		logger.Infof("fifo restore: %s lived at %s on the backup's server; it is restored in %s, so its link file %s is removed: mysqld on this "+
			"directory opens this restore's file, never that path", rel, t.path, dir, t.from)
	}
	return nil
}

// NotEmptyReason says, for a target directory that is not empty, what a
// restore's mark in it shows ("; ..."): one killed before it finished, or
// one still writing there; "" without a mark.
func NotEmptyReason(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, restoringMark))
	if err != nil {
		return ""
	}
	var o procident.Owner
	if json.Unmarshal(b, &o) != nil {
		return ""
	}
	self := procident.Self()
	switch {
	case self.Outlived(o):
		return fmt.Sprintf("; it holds what a restore stopped before it finished left there (pid %d on %s, gone): no whole restore; remove the "+
			"directory (rm -rf %s) and restore again, or give another directory", o.PID, o.Host, dir)
	case o.Host == self.Host && o.PIDNamespace == self.PIDNamespace && procident.Running(o.PID, o.ProcStart):
		return fmt.Sprintf("; a restore is writing into it now (pid %d)", o.PID)
	}
	return fmt.Sprintf("; a restore on %s (pid %d) wrote into it and did not finish, or still runs there", o.Host, o.PID)
}

// RemoveRestored removes what the restore wrote into the directory (it was
// empty when the restore claimed it), and the directory itself only if the
// restore created it.
func (d TargetDir) RemoveRestored() error {
	if d.Created {
		return os.RemoveAll(d.Path)
	}
	entries, err := os.ReadDir(d.Path)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(d.Path, e.Name())))
	}
	return errors.Join(errs...)
}
