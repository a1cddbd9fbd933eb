package local

import (
	"os"
	"syscall"
)

// adopt gives paths the owner and group of the root directory when this
// process runs as root and the root belongs to someone else: the tablet's
// user, who owns the storage, must read (and remove) what `sudo vtfifo
// test-restore` or a root cron job wrote there, such as a verification
// record, whoever wrote it.
func (l *Backend) adopt(paths ...string) error {
	if os.Geteuid() != 0 || len(paths) == 0 {
		return nil
	}
	st, err := os.Stat(l.root)
	if err != nil {
		return nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || (sys.Uid == 0 && sys.Gid == 0) {
		return nil
	}
	for _, p := range paths {
		if err := os.Lchown(p, int(sys.Uid), int(sys.Gid)); err != nil {
			return err
		}
	}
	return nil
}
