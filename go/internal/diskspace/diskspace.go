// Package diskspace says how much room a file system has: what this process
// may still write there, and its whole size. What a backup's spool, a
// restore and a table import check before they write, so that one of them
// that cannot fit is refused before it touches anything.
package diskspace

import "golang.org/x/sys/unix"

// Of returns the bytes this process may still write on dir's file system
// (the blocks free to an unprivileged user: a file system's reserve for root
// is not room) and the file system's size.
func Of(dir string) (free, size int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize), nil
}
