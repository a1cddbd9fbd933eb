//go:build !unix

package local

import "errors"

var errNoAttr = errors.New("no extended attribute")

// Without extended attributes a file holds no lock, and cannot be given one.
func getxattr(string, string) ([]byte, error) { return nil, errNoAttr }

func setxattr(string, string, []byte) error {
	return errors.New("extended attributes are not supported on this system")
}
