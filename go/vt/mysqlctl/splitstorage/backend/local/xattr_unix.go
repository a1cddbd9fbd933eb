//go:build unix

package local

import (
	"errors"

	"golang.org/x/sys/unix"
)

var errNoAttr = unix.ENODATA

func getxattr(p, name string) ([]byte, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Getxattr(p, name, buf)
		if errors.Is(err, unix.ERANGE) {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

func setxattr(p, name string, value []byte) error { return unix.Setxattr(p, name, value, 0) }
