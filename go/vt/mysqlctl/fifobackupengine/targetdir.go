package fifobackupengine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"vitess.io/vitess/go/vt/logutil"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// TargetDir is the directory a restore writes into, and whether the restore
// created it (a directory that existed, empty, is the operator's: a mount
// point, say).
//
// The restore writes its files into a subdirectory of its own (Files),
// which Done moves up into Path once they are whole: so that a failed
// restore removes only what it can prove it made (that subdirectory, the
// entries it moved up, its mark, each while it is still the very file the
// restore made), never a file an operator put into the directory
// meanwhile.
type TargetDir struct {
	Path    string
	Created bool
	// made is what the restore made in Path, each as it was made (its
	// mark, its files' subdirectory, the entries Done moved up).
	made []madeEntry
	done bool
}

type madeEntry struct {
	name string
	id   entryID
}

// restoringDir is the subdirectory of the target directory a restore
// works in until its files are whole: the files themselves (Files), and
// beside them the deltas of a chain as they are extracted.
const restoringDir = ".vtfifo-restoring.d"

// Files is where the restore writes the files: in its own subdirectory
// until Done.
func (d *TargetDir) Files() string { return filepath.Join(d.Path, restoringDir, "files") }

// Leftovers are what a restore that kept its files in Files, Done having
// failed, leaves beside them for the operator to remove once they have
// moved the files: its subdirectory and its mark.
func (d TargetDir) Leftovers() []string {
	return []string{filepath.Join(d.Path, restoringDir), filepath.Join(d.Path, restoringMark)}
}

// WayToFiles are the directories a process must pass to reach Files: the
// target directory and the restore's own subdirectory. A caller that hands
// the staged files to a server running as another user (LeaveStaged; a
// throwaway mysqld as mysql when vtfifo runs as root) gives it these as
// well as the files, as the target directory itself was given when the
// files were in it.
func (d *TargetDir) WayToFiles() []string {
	return []string{d.Path, filepath.Join(d.Path, restoringDir)}
}

// FilesNow is where the restored files are: Files until Done, Path after.
func (d *TargetDir) FilesNow() string {
	if d.done {
		return d.Path
	}
	return d.Files()
}

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
	err = d.madeHere(restoringDir, func(p string) error { return os.Mkdir(p, 0o750) })
	if err == nil {
		err = os.Mkdir(d.Files(), 0o750)
	}
	if err != nil {
		_ = d.RemoveRestored()
		return TargetDir{}, hostsDir(errtext.Wrapf(err, "cannot write into the target directory %s", d.Path))
	}
	return d, nil
}

// madeHere runs create, which makes the directory's entry name (never over
// one that is there), and records the entry as the restore's.
func (d *TargetDir) madeHere(name string, create func(path string) error) error {
	p := filepath.Join(d.Path, name)
	if err := create(p); err != nil {
		return err
	}
	id, err := idOf(p)
	if err != nil {
		return err
	}
	d.made = append(d.made, madeEntry{name: name, id: id})
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

// Done says the restore into the directory finished: the files move up
// into the directory, never over an entry that is there (one an operator
// put there meanwhile fails the restore, which then removes only its own,
// and the files it had moved up go back beside the others: Files holds
// them all), then the subdirectory and, last, the mark go. A prepared
// directory keeps its tablespaces inside (keepTablespacesInside) before
// anything moves; the mark lists what moves first (listMovingUp), so that
// a restore stopped among the moves leaves a directory whose every entry
// can be told its own or not.
func (d *TargetDir) Done(prepared bool, logger logutil.Logger) error {
	if prepared {
		if err := keepTablespacesInside(d.Files(), d.Path, logger); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(d.Files())
	if err != nil {
		return err
	}
	if err := d.listMovingUp(entries); err != nil {
		return hostsDir(errtext.Wrapf(err, "cannot write into the target directory %s", d.Path))
	}
	for i, e := range entries {
		err := d.madeHere(e.Name(), func(p string) error { return renameNoReplace(filepath.Join(d.Files(), e.Name()), p) })
		if errors.Is(err, os.ErrExist) {
			err = flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "cannot move the restored %s into %s: something "+
				"was put there by that name during the restore, and a restore never writes over it: move it away and restore again", e.Name(), d.Path))
		}
		if err != nil {
			if backErr := d.moveBack(entries[:i]); backErr != nil {
				return errors.Join(err, fmt.Errorf("and some restored files stay moved up into %s, the others in %s: %w", d.Path, d.Files(), backErr))
			}
			return err
		}
	}
	d.done = true
	for _, name := range []string{restoringDir, restoringMark} {
		i := slices.IndexFunc(d.made, func(m madeEntry) bool { return m.name == name })
		if i < 0 {
			continue
		}
		if err := d.made[i].remove(d.Path); err != nil {
			return err
		}
		d.made = slices.Delete(d.made, i, i+1)
	}
	return nil
}

// moveBack puts entries that Done moved up back into Files, each while it
// is still the very entry it moved, so that a Done that failed leaves the
// restored files in one place.
func (d *TargetDir) moveBack(entries []os.DirEntry) error {
	var errs []error
	for _, e := range slices.Backward(entries) {
		i := slices.IndexFunc(d.made, func(m madeEntry) bool { return m.name == e.Name() })
		if i < 0 {
			continue
		}
		p := filepath.Join(d.Path, e.Name())
		if !d.made[i].id.isStill(p) {
			continue
		}
		if err := renameNoReplace(p, filepath.Join(d.Files(), e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		d.made = slices.Delete(d.made, i, i+1)
	}
	return errors.Join(errs...)
}

// renameNoReplace renames from to to, refusing (fs.ErrExist) where to
// exists; on a file system that cannot refuse atomically, after looking.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		if err != nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
		}
		return nil
	}
	if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	}
	return os.Rename(from, to)
}

// keepTablespacesInside has a prepared directory use the tablespaces it
// restored, and no other: a MariaDB table that lived outside the data
// directory (DATA DIRECTORY) comes with a db/t.isl naming the source's
// path, where the source's own file may be (on its host, on a replica or
// vtbackup host of the same layout), and mysqld started on the directory
// then refuses the table ("A tablespace has been found in multiple
// places") or, were the restored file missing, reads the other. Its file
// was restored at db/t.ibd, where MariaDB opens it without the .isl.
// (MySQL 8 keeps such paths in its data dictionary, and no .isl.) Done
// runs it on its files before it moves them up into target, which the log
// names.
func keepTablespacesInside(dir, target string, logger logutil.Logger) error {
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
			"directory opens this restore's file, never that path", rel, t.path, target, t.from)
	}
	return nil
}

// NotEmptyReason says, for a target directory that is not empty, why and
// what to do ("; ..."): what a restore's mark in it shows (markReason), or
// that it is the root of a file system (a volume mounted for the restore,
// holding only its lost+found); "" otherwise.
func NotEmptyReason(dir string) string {
	if names, err := readDirNames(dir, 2); err == nil && len(names) == 1 && names[0] == "lost+found" {
		return fmt.Sprintf("; it holds only lost+found, as the root of a file system does: restore into a new directory in it "+
			"(--target-dir=%s), which mysqld then takes as its data directory", filepath.Join(dir, "data"))
	}
	return markReason(dir)
}

func readDirNames(dir string, n int) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(n)
}

// RemoveRestored removes what the restore made: each entry of the
// directory it made that is still the one it made, and nothing else; then
// the directory itself if the restore created it and nothing else is in it.
func (d TargetDir) RemoveRestored() error {
	var errs []error
	for i := len(d.made) - 1; i >= 0; i-- {
		errs = append(errs, d.made[i].remove(d.Path))
	}
	if err := errors.Join(errs...); err != nil || !d.Created {
		return err
	}
	if err := os.Remove(d.Path); err != nil && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		return err
	}
	return nil
}

// remove removes the entry from dir, whole, if it is still the one the
// restore made.
func (m madeEntry) remove(dir string) error {
	p := filepath.Join(dir, m.name)
	if !m.id.isStill(p) {
		return nil
	}
	return os.RemoveAll(p)
}
