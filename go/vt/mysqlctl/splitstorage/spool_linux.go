package splitstorage

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/vtfifo/vtfifo/go/internal/diskspace"
)

// createSpoolFile opens a file without a name in dir (O_TMPFILE): its space
// is freed when it is closed or the process dies, however it dies. File
// systems without O_TMPFILE get a named file that is unlinked at once.
func createSpoolFile(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return os.NewFile(uintptr(fd), dir+"/(spool)"), nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return nil, &os.PathError{Op: "open O_TMPFILE", Path: dir, Err: err}
	}
	return createUnlinked(dir)
}

func diskSpace(dir string) (free, size int64, err error) { return diskspace.Of(dir) }

func diskSize(dir string) (int64, error) {
	_, size, err := diskspace.Of(dir)
	return size, err
}

// startWriteback starts writing n bytes of f from off to disk and returns
// without waiting (sync_file_range SYNC_FILE_RANGE_WRITE). It is only a head
// start for a later fsync, so it has nothing to report.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// spoolsNameless says whether dir takes files without a name (O_TMPFILE).
func spoolsNameless(dir string) bool {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// sameFileSystem says whether a and b are on one mounted file system.
func sameFileSystem(a, b string) bool {
	var sa, sb unix.Stat_t
	return unix.Stat(a, &sa) == nil && unix.Stat(b, &sb) == nil && sa.Dev == sb.Dev
}
