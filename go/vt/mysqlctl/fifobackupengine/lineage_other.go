//go:build !linux

package fifobackupengine

import (
	"fmt"
	"os"
	"syscall"
)

// dirIdentity names a directory by device and inode.
func dirIdentity(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("no inode for %s", path)
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}
