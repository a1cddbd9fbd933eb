package fifobackupengine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"vitess.io/vitess/go/vt/logutil"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// fifoDirPrefix names the directories the tool makes its FIFO streams in
// (source fifo), under the backup's work directory or --fifo-backup-fifo-dir.
// A prefix of their own, never the work directory's name: the two stay apart
// where --fifo-backup-fifo-dir is the tablet's tmp dir, the work directories'
// parent.
const fifoDirPrefix = "fifo-streams-"

// newFIFODir makes the directory under parent that the tool makes its FIFO
// streams in, named for this process and owned by a record beside it as a
// work directory is (newWorkDir), after sweeping those of runs whose process
// is provably gone (a backup killed with SIGKILL leaves its FIFOs there).
// The tool takes a directory that exists (ds_fifo.cc, fifo_init: my_mkdir,
// EEXIST ignored) and leaves its FIFOs behind when it succeeds. Unlike a work
// directory, one is never removed whole, since it may be in a directory the
// operator chose: release (and the sweep) removes the tool's FIFOs
// (removeFIFODir), then the directory only if that left it empty; an entry
// someone else put there stays, and is named in a warning.
func newFIFODir(parent string, logger logutil.Logger) (dir string, release func(), err error) {
	dir, release, err = newOwnedDir(parent, fifoDirPrefix, "the directory of the tool's FIFO streams", removeFIFODir, logger)
	if err != nil {
		return "", nil, errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "cannot make a directory for the backup tool's FIFO streams under %s: %v "+
			"(give --fifo-backup-fifo-dir a directory this user can write in)", parent, err)
	}
	return dir, release, nil
}

// removeFIFODir removes from dir the FIFOs the tool makes (thread_0 ..
// thread_63, the most streams it is given, each only while it is a FIFO),
// then dir if that left it empty; otherwise it fails naming what is left.
func removeFIFODir(dir string) error {
	for i := range maxLanes {
		path := filepath.Join(dir, fmt.Sprintf("thread_%d", i))
		if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeNamedPipe != 0 {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	err := os.Remove(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	left, rerr := readDirNames(dir, 8)
	if rerr != nil || len(left) == 0 {
		return err
	}
	slices.Sort(left)
	return fmt.Errorf("it holds %s, which the backup tool did not make: left alone", strings.Join(left, ", "))
}
