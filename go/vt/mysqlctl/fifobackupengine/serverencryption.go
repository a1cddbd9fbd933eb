package fifobackupengine

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/vtfifo/vtfifo/go/internal/errtext"

	"vitess.io/vitess/go/vt/logutil"
)

// ServerEncryption is the server's own data-at-rest encryption at backup
// time (MariaDB's key management plugins), as the MANIFEST records it: what
// a restoring host must give the prepare and the server. No key, and no
// setting that holds one (file_key_management_filekey), is recorded.
type ServerEncryption struct {
	// Plugin is the active encryption plugin (information_schema.PLUGINS,
	// PLUGIN_TYPE 'ENCRYPTION'); Library its shared library.
	Plugin  string
	Library string `json:",omitempty"`
	// KeyIDs are the keys the backup's files need: every encrypted
	// tablespace's CURRENT_KEY_ID, and 1 (the system key) for an encrypted
	// redo log.
	KeyIDs []uint32
	// EncryptedTablespaces counts the tablespaces encrypted at backup time.
	EncryptedTablespaces int `json:",omitempty"`
	// EncryptTables, EncryptLog: innodb_encrypt_tables, innodb_encrypt_log.
	EncryptTables string `json:",omitempty"`
	EncryptLog    bool   `json:",omitempty"`
	// KeyFile is file_key_management_filename on the source server: where a
	// restore on the same host finds the keys when its option file names
	// none.
	KeyFile string `json:",omitempty"`
	// KeyChecks maps a key id to a check value of its key (keyCheck): a
	// restore tells a wrong key from damage before it downloads anything.
	// Empty where the key file could not be read (its own file key
	// encrypts it, or its permissions).
	KeyChecks map[string]string `json:",omitempty"`
}

// keyCheckLabel is what a key check value authenticates.
const keyCheckLabel = "vtfifo key check v1"

// keyCheck is a check value of a key: the first 8 bytes of
// HMAC-SHA256(key, label). It tells two keys apart; it gives nothing of a
// key that a key of that size has not already.
func keyCheck(key []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(keyCheckLabel))
	return hex.EncodeToString(mac.Sum(nil)[:8])
}

// The system key of MariaDB (ENCRYPTION_KEY_SYSTEM_DATA): the redo log's,
// the temporary tablespace's and the binary log's.
const systemKeyID = 1

// fileKeyManagement is MariaDB's key file plugin.
const fileKeyManagement = "file_key_management"

// readServerEncryption reads the server's encryption plugin and the keys
// the backup needs (nil when the server has no encryption plugin). readKeys
// reads a key file (keyfile.go); what it cannot read leaves KeyChecks
// empty, with a warning.
func readServerEncryption(ctx context.Context, query queryRows, readKeys func(path string) (map[uint32][]byte, error), logger logutil.Logger) (*ServerEncryption, error) {
	rows, err := query(ctx, "SELECT PLUGIN_NAME, IFNULL(PLUGIN_LIBRARY, '') FROM information_schema.PLUGINS "+
		"WHERE PLUGIN_TYPE = 'ENCRYPTION' AND PLUGIN_STATUS = 'ACTIVE'")
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	enc := &ServerEncryption{Plugin: rows[0][0], Library: rows[0][1]}
	if rows, err = query(ctx, "SELECT @@innodb_encrypt_tables, @@innodb_encrypt_log"); err != nil {
		return nil, err
	}
	enc.EncryptTables, enc.EncryptLog = rows[0][0], rows[0][1] == "1"
	if rows, err = query(ctx, "SELECT CURRENT_KEY_ID, COUNT(*) FROM information_schema.INNODB_TABLESPACES_ENCRYPTION "+
		"WHERE ENCRYPTION_SCHEME <> 0 GROUP BY CURRENT_KEY_ID"); err != nil {
		return nil, err
	}
	ids := map[uint32]bool{}
	if enc.EncryptLog {
		ids[systemKeyID] = true
	}
	for _, r := range rows {
		id, err := strconv.ParseUint(r[0], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("INNODB_TABLESPACES_ENCRYPTION: key id %q: %w", r[0], err)
		}
		n, _ := strconv.Atoi(r[1])
		ids[uint32(id)], enc.EncryptedTablespaces = true, enc.EncryptedTablespaces+n
	}
	for id := range ids {
		enc.KeyIDs = append(enc.KeyIDs, id)
	}
	slices.Sort(enc.KeyIDs)
	if enc.Plugin != fileKeyManagement {
		return enc, nil
	}
	if rows, err = query(ctx, "SELECT @@file_key_management_filename, @@file_key_management_filekey <> ''"); err != nil {
		return nil, err
	}
	enc.KeyFile = rows[0][0]
	if rows[0][1] == "1" {
		logger.Warningf("fifo backup: %s's key file %s is encrypted with a file key: the MANIFEST records no key checks, so a restore cannot tell a "+
			"wrong key before its prepare", fileKeyManagement, enc.KeyFile)
		return enc, nil
	}
	keys, err := readKeys(enc.KeyFile)
	if err != nil {
		logger.Warningf("fifo backup: %s; the MANIFEST records no key checks, so a restore cannot tell a wrong key before its prepare", errtext.Text(err))
		return enc, nil
	}
	enc.KeyChecks = map[string]string{}
	for _, id := range enc.KeyIDs {
		if key, ok := keys[id]; ok {
			enc.KeyChecks[strconv.FormatUint(uint64(id), 10)] = keyCheck(key)
		}
	}
	return enc, nil
}

// String is the encryption in a line (vtfifo show).
func (e *ServerEncryption) String() string {
	if e == nil {
		return "none"
	}
	s := fmt.Sprintf("%s, key ids %s (%d encrypted tablespaces, innodb_encrypt_tables=%s, redo log encrypted: %v)",
		e.Plugin, idList(e.KeyIDs), e.EncryptedTablespaces, e.EncryptTables, e.EncryptLog)
	if e.KeyFile != "" {
		s += ", key file " + e.KeyFile
	}
	if len(e.KeyChecks) == 0 && e.Plugin == fileKeyManagement {
		s += ", keys not checkable before a prepare"
	}
	return s
}
