package fifobackupengine

import (
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// MySQL 8's tablespace flags (storage/innobase/include/fsp0types.h): in page
// 0 at FSP_HEADER_OFFSET (FIL_PAGE_DATA, 38) + FSP_SPACE_FLAGS (16), big
// endian; bit FSP_FLAGS_POS_ENCRYPTION (13) marks an encrypted tablespace.
const (
	fspSpaceFlagsOffset = 38 + 16
	fspFlagEncryption   = 1 << 13
)

// encryptedTablespace reports whether the .ibd at path is encrypted (MySQL 8).
func encryptedTablespace(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var flags [4]byte
	if _, err := f.ReadAt(flags[:], fspSpaceFlagsOffset); err != nil && err != io.EOF {
		return false, err
	}
	return binary.BigEndian.Uint32(flags[:])&fspFlagEncryption != 0, nil
}

// checkEncryptedTables refuses, naming them, before the prepare, the tables
// of a Percona XtraBackup table restore whose tablespaces are encrypted when
// nothing would give the prepare the keyring (keyring.go): their --export
// needs it to write the .cfp the import decrypts with.
func checkEncryptedTables(dir string, tables []*TableFiles, prepareFlags string) error {
	if hasKeyringSource(dir, prepareFlags) {
		return nil
	}
	var encrypted []string
	for _, t := range tables {
		for _, p := range t.Paths {
			if !strings.HasSuffix(p, ".ibd") {
				continue
			}
			enc, err := encryptedTablespace(filepath.Join(dir, filepath.FromSlash(p)))
			if err != nil {
				return errtext.Wrapf(err, "reading the tablespace flags of %s", p)
			}
			if enc {
				encrypted = append(encrypted, t.Name())
				break
			}
		}
	}
	if len(encrypted) == 0 {
		return nil
	}
	return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION,
		"%s: encrypted InnoDB tablespace, and nothing gives the prepare the keyring (no component_keyring_*.cnf in the backup, no keyring option in "+
			"--fifo-backup-prepare-flags: --component-keyring-config, --keyring-file-data, --transition-key); nothing was prepared or imported",
		strings.Join(encrypted, ", "))
}

// hasKeyringSource reports whether the extracted backup in dir carries a
// keyring component configuration, or prepareFlags name a keyring.
func hasKeyringSource(dir, prepareFlags string) bool {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if keyringConfigName.MatchString(e.Name()) {
			return true
		}
	}
	return prepareFlagsNameKeyring(prepareFlags)
}
