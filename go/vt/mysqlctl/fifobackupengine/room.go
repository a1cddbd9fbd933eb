package fifobackupengine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"vitess.io/vitess/go/vt/mysqlctl"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// A restore is refused before it touches anything where it provably
// cannot fit: a tablet's (checkRoom) would otherwise delete the tablet's
// files and then run out of room; one into a directory (checkTargetRoom)
// would fill a file system it may share with a live server (MySQL stops
// when it cannot write its binary log).

// checkRoom refuses a restore that cannot fit, before mysqld stops or a
// file is touched: roomNeeded is more than the file system beside the data
// directory has free with what the tablet's files that the restore would
// delete take (counted wherever they are, so that a layout in which they
// free nothing there is never refused for it). Refused, the tablet keeps
// its data and its mysqld as they were, where a restore that began deleted
// them and then ran out of room. Unknown free space refuses nothing, nor do
// files that cannot be read.
func checkRoom(cnf *mysqlctl.Mycnf, chain []member) error {
	parent := filepath.Dir(filepath.Clean(cnf.DataDir))
	need, what := roomNeeded(chain)
	free := freeBytes(parent)
	if free < 0 || free >= need {
		return nil
	}
	paths, err := oldFiles(cnf)
	if err != nil {
		return nil // the restore says it where it deletes them
	}
	freed, ok := bytesUnder(paths)
	if !ok || free+freed >= need {
		return nil
	}
	return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup %s does not fit on this tablet: %s take at least their "+
		"streams' size, %s, and %s has %s free, %s with the tablet's files that a restore deletes: nothing was touched, mysqld runs with its "+
		"data as before; make room there or restore onto a larger disk", chain[len(chain)-1].m.BackupName, what, flagvalue.SizeText(need), parent, flagvalue.SizeText(free), flagvalue.SizeText(free+freed))
}

// roomNeeded is the least a restore of chain holds on disk at once, and
// what that is: the files of its full backup, and of its first delta,
// which is extracted while the full's files are all there (restoreChain);
// their streams' bytes, less 1% for the streams' own headers. The deltas
// after it are not counted: the files of the full may have shrunk by then
// (a table dropped), and a bound must never refuse a restore that fits.
// Nor are the files a delta adds to the full's when it is applied, or the
// prepare's redo: a restore can still pass this and run out of room.
func roomNeeded(chain []member) (int64, string) {
	full := chain[0].m
	n, what := full.RawBytes, "the files of its full backup "+full.BackupName
	if len(chain) > 1 {
		n += chain[1].m.RawBytes
		what += " and of its first delta " + chain[1].m.BackupName
	}
	return n - n/100, what
}

// bytesUnder is the size of the files under paths; false where one could
// not be read (then nothing is refused for it).
func bytesUnder(paths []string) (int64, bool) {
	var n int64
	for _, p := range paths {
		err := filepath.WalkDir(p, func(_ string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			info, err := d.Info()
			if err == nil {
				n += info.Size()
			}
			return err
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, false
		}
	}
	return n, true
}

// restoreNeeds is about what restoring the chain writes: the streams' bytes.
func restoreNeeds(chain []member) int64 {
	var n int64
	for _, c := range chain {
		n += c.m.RawBytes
	}
	return n
}

// checkTargetRoom refuses a restore into dir (RestoreToDir: vtfifo
// restore, test-restore) whose file system has less free room than the
// chain can write there, before anything is downloaded: every stream's
// bytes (what the files of the full and of every delta take at most at
// once: a delta's directory is removed once it is applied), and, with the
// prepare, a tenth more for its logs; and 1 % of the file system is left
// to whatever else writes there (a live server). A restore that would fill
// the file system stops short of that, where it would have failed
// half-way, after the disk was full for whatever else writes there.
func checkTargetRoom(dir string, chain []member, prepare bool) error {
	need := restoreNeeds(chain)
	what := "the stream bytes of backup " + chain[0].m.BackupName
	if len(chain) > 1 {
		what = fmt.Sprintf("the stream bytes of its chain %v", chainNames(chain))
	}
	if prepare {
		need, what = need+need/10, what+", and a tenth more for the prepare"
	}
	free, size := fsSpace(existingParent(dir))
	if keep := size / 100; keep > 0 {
		need, what = need+keep, what+", and 1% of the file system left to whatever else writes there"
	}
	if free < 0 || free >= need {
		return nil
	}
	return unreadable.Host(errtext.Errorf(vtrpcpb.Code_RESOURCE_EXHAUSTED, "%s has %s free, and restoring backup %s needs about %s there "+
		"(%s): nothing was downloaded; restore it onto a file system with more room", dir, flagvalue.SizeText(free), chain[len(chain)-1].m.BackupName,
		flagvalue.SizeText(need), what),
		"its disk has too little room for the backup")
}
