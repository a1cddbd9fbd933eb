package fifobackupengine

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// The tablet's old files are out of the restore's way at once: each of its
// directories and files is renamed into one directory beside the data
// directory (a rename per path, on the same file system), and that
// directory is removed while the restore downloads and extracts, instead
// of before it (deleting a terabyte takes minutes). Where the file system
// has no room for the old files and the restored ones together, or a path
// is on another file system, the old files are deleted first, as Vitess
// does. A run killed before the removal ended leaves the directory with its
// owner record; the next restore removes it (newWorkDir).

// oldFilesPrefix names the directory the old files are moved into.
const oldFilesPrefix = ".fifo-old-files-"

// oldFiles is what Vitess's own removeExistingFiles clears: the data,
// InnoDB and log directories of the tablet's Mycnf, the relay log index
// and info files, and the binary and relay logs by their prefix.
func oldFiles(cnf *mysqlctl.Mycnf) ([]string, error) {
	paths, unknown, err := clearedPaths(cnf)
	if unknown != "" {
		return nil, errtext.Errorf(vtrpcpb.Code_UNKNOWN, "can't remove existing files: %v is unknown", unknown)
	}
	return paths, err
}

// clearedPaths is oldFiles as far as cnf says: the paths it names, the
// first one it leaves unknown ("" for none), and a glob's error.
func clearedPaths(cnf *mysqlctl.Mycnf) (paths []string, unknown string, err error) {
	for _, d := range []struct{ name, path string }{{"DataDir", cnf.DataDir}, {"InnodbDataHomeDir", cnf.InnodbDataHomeDir},
		{"InnodbLogGroupHomeDir", cnf.InnodbLogGroupHomeDir}, {"RelayLogIndexPath", cnf.RelayLogIndexPath}, {"RelayLogInfoPath", cnf.RelayLogInfoPath}} {
		if d.path == "" {
			unknown = cmp.Or(unknown, d.name)
			continue
		}
		paths = append(paths, d.path)
	}
	for _, p := range []struct{ name, path string }{{"BinLogPath", cnf.BinLogPath}, {"RelayLogPath", cnf.RelayLogPath}} {
		if p.path == "" {
			unknown = cmp.Or(unknown, p.name)
			continue
		}
		matches, err := filepath.Glob(p.path + ".*")
		if err != nil {
			return nil, unknown, errtext.Wrapf(err, "can't expand path glob %q", p.path+".*")
		}
		paths = append(paths, matches...)
	}
	return paths, unknown, nil
}

// removeExistingFiles deletes the tablet's old files now.
func removeExistingFiles(cnf *mysqlctl.Mycnf) error {
	paths, err := oldFiles(cnf)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			return errtext.Wrapf(err, "can't remove existing files (%v)", p)
		}
	}
	return nil
}

// setAsideOldFiles moves the tablet's old files out of the way and removes
// them in the background; wait returns once they are gone. need is about
// what the restore writes beside the data directory. Where there is no
// room for both, they are deleted first and wait returns at once.
func setAsideOldFiles(cnf *mysqlctl.Mycnf, need int64, logger logutil.Logger) (wait func(), err error) {
	none := func() {}
	parent := filepath.Dir(filepath.Clean(cnf.DataDir))
	if free := freeBytes(parent); free < 0 || free-need/10 < need {
		logger.Infof("fifo restore: deleting existing files first (%s beside the data directory, the restore needs about %s)", freeText(free), flagvalue.SizeText(need))
		return none, removeExistingFiles(cnf)
	}
	paths, err := oldFiles(cnf)
	if err != nil {
		return none, err
	}
	aside, release, err := newWorkDir(parent, oldFilesPrefix, logger)
	if err != nil {
		logger.Infof("fifo restore: deleting existing files first (no directory for them beside the data directory: %s)", errtext.Text(err))
		return none, removeExistingFiles(cnf)
	}
	for i, p := range paths {
		err := os.Rename(p, filepath.Join(aside, strconv.Itoa(i)+"-"+filepath.Base(p)))
		switch {
		case err == nil || errors.Is(err, os.ErrNotExist):
		case errors.Is(err, syscall.EXDEV):
			err = os.RemoveAll(p) // on another file system: deleted now
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			release()
			return none, errtext.Wrapf(err, "can't move existing files out of the way (%v)", p)
		}
	}
	logger.Infof("fifo restore: existing files moved to %s, removed while the restore runs", aside)
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := time.Now()
		release()
		logger.Infof("fifo restore: the old files removed in %v", time.Since(start).Round(time.Millisecond))
	}()
	return func() {
		select {
		case <-done:
		default:
			start := time.Now()
			logger.Infof("fifo restore: waiting for the old files' removal to end")
			<-done
			logger.Infof("fifo restore: waited %v for the old files' removal", time.Since(start).Round(time.Millisecond))
		}
	}, nil
}
