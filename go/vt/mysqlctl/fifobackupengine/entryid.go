package fifobackupengine

import (
	"encoding/hex"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// entryID tells a file apart from any other, beyond its name: its device
// and inode and, where the file system gives one, its file handle
// (name_to_handle_at: the inode's number with its generation, which ext4,
// XFS, Btrfs and tmpfs draw anew for every file made; NFS servers rely on
// it for this) and its birth time. The inode number alone is no proof: a
// file system gives a freed number to the next file made (ext4 at once, as
// a file is removed and made again by its name), and a birth time is kept
// at the clock's coarse tick. A rename keeps all of them.
type entryID struct {
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Handle string `json:"handle,omitempty"`  // "" where the file system gives none
	Born   int64  `json:"born_ns,omitempty"` // 0 where the file system keeps no birth time
}

// idOf is the entryID of path itself (a symbolic link, not what it points to).
func idOf(path string) (entryID, error) {
	id, err := statID(path, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return id, err
	}
	if h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0); err == nil {
		id.Handle = fmt.Sprintf("%d:%s", h.Type(), hex.EncodeToString(h.Bytes()))
	}
	return id, nil
}

// statID is path's device, inode and birth time (statx, with flags).
func statID(path string, flags int) (entryID, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, flags, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return entryID{}, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	id := entryID{Dev: unix.Mkdev(st.Dev_major, st.Dev_minor), Ino: st.Ino}
	if st.Mask&unix.STATX_BTIME != 0 {
		id.Born = st.Btime.Sec*1_000_000_000 + int64(st.Btime.Nsec)
	}
	return id, nil
}

// isStill says whether path is still the very file id was taken of.
func (id entryID) isStill(path string) bool {
	now, err := idOf(path)
	return err == nil && id.Ino != 0 && now == id
}
