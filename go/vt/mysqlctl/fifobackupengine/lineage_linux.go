package fifobackupengine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// dirIdentity names a directory by device, inode and, where the file
// system records it, birth time: a directory removed and made again gets
// another, even when the inode number is reused.
func dirIdentity(path string) (string, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return "", err
	}
	id := fmt.Sprintf("%d:%d", unix.Mkdev(st.Dev_major, st.Dev_minor), st.Ino)
	if st.Mask&unix.STATX_BTIME != 0 {
		id += fmt.Sprintf(":%d.%09d", st.Btime.Sec, st.Btime.Nsec)
	}
	return id, nil
}
