package fifobackupengine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/procident"
)

// CreateOwnedFile creates a new file in dir (mode 0600) named prefix and
// then, as a work directory is (workDirName), the process making it and a
// check, for the packages above the engine that write a file under a
// passing name before giving it its own (vtfifo export's partial file).
// First it removes the files of that prefix whose name proves them made by
// a process provably gone (one killed with SIGKILL leaves its file): a
// file whose name proves nothing, or whose maker lives or cannot be judged
// from here, is left alone.
func CreateOwnedFile(dir, prefix string, logger logutil.Logger) (*os.File, error) {
	self := procident.Self()
	removeStaleFiles(dir, prefix, self, logger)
	var f *os.File
	_, err := createNamed(dir, prefix, self, func(p string) (err error) {
		f, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// removeStaleFiles removes the regular files named prefix* in dir that
// CreateOwnedFile made for a process provably gone (procident.Outlived).
func removeStaleFiles(dir, prefix string, self procident.Owner, logger logutil.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		owner, ours := nameOwner(prefix, e.Name(), self)
		if !ours || !self.Outlived(owner) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			logger.Warningf("cannot remove %s, left by a run whose process (%d) is gone: %v", p, owner.PID, err)
			continue
		}
		logger.Infof("removed %s, left by a run whose process (%d) is gone", p, owner.PID)
	}
}
