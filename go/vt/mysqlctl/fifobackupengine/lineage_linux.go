package fifobackupengine

import "fmt"

// dirIdentity names a directory by device, inode and, where the file
// system records it, birth time (statID, through a symbolic link): a
// directory removed and made again gets another, even when the inode
// number is reused. The lineage file keeps this text: its form stays.
func dirIdentity(path string) (string, error) {
	id, err := statID(path, 0)
	if err != nil {
		return "", err
	}
	s := fmt.Sprintf("%d:%d", id.Dev, id.Ino)
	if id.Born != 0 {
		s += fmt.Sprintf(":%d.%09d", id.Born/1_000_000_000, id.Born%1_000_000_000)
	}
	return s, nil
}
