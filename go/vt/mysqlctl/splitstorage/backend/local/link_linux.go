package local

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// linkNameless gives f the name path when f is a file without a name (opened
// with O_TMPFILE, never linked) holding exactly size bytes on path's file
// system; otherwise it reports false and the caller copies. A file that has
// a name is never linked: its owner could still change what we stored.
func linkNameless(f *os.File, size int64, path string) bool {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Nlink != 0 {
		return false
	}
	// Linking by fd (AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; through
	// /proc it needs only the file to come from O_TMPFILE without O_EXCL.
	// A deleted named file, or another file system (EXDEV), fails here.
	return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW) == nil
}
