package fifobackupengine

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// cryptMagic starts MariaDB's encryption record on a tablespace's first page
// (fil0crypt.cc, CRYPT_MAGIC), after the extent descriptors: scheme (1),
// IV length (1), IV, min key version (4, big-endian), key id (4), mode (1).
var cryptMagic = []byte("s\x0e\x0cREt")

// cryptScheme1 is an encrypted tablespace's scheme (CRYPT_SCHEME_1).
const cryptScheme1 = 1

// maxPageSize bounds what is read of a tablespace's first page.
const maxPageSize = 64 << 10

// tablespaceKeyID reads the key id that encrypts a MariaDB tablespace file
// from its first page; ok is false when the tablespace is not encrypted.
func tablespaceKeyID(path string) (id uint32, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	page := make([]byte, maxPageSize)
	n, err := io.ReadFull(f, page)
	if err != nil && err != io.ErrUnexpectedEOF {
		return 0, false, fmt.Errorf("%s: %w", path, err)
	}
	page = page[:n]
	at := bytes.Index(page, cryptMagic)
	if at < 0 {
		return 0, false, nil
	}
	rec := page[at+len(cryptMagic):]
	if len(rec) < 2 || len(rec) < 2+int(rec[1])+8 {
		return 0, false, fmt.Errorf("%s: a truncated encryption record on its first page", path)
	}
	if rec[0] != cryptScheme1 {
		return 0, false, nil
	}
	keyAt := 2 + int(rec[1]) + 4
	return binary.BigEndian.Uint32(rec[keyAt:]), true, nil
}

// CheckImportKeys refuses, before anything is imported, tables of a
// restore (in dir) that the live server could not read: a tablespace
// encrypted under a key id needs an encryption plugin there, and, where the
// backup recorded the key's check value and the live server's key file
// (file_key_management) is readable here, the same key under that id.
// query runs a query on the live server, every column as text.
func CheckImportKeys(ctx context.Context, query func(ctx context.Context, q string) ([][]string, error), m *Manifest, dir string,
	tables []RestoredTable) error {
	need := map[uint32][]string{} // key id -> tables
	for _, t := range tables {
		for _, f := range t.Exported {
			if filepath.Ext(f) != ".ibd" {
				continue
			}
			id, encrypted, err := tablespaceKeyID(filepath.Join(dir, f))
			if err != nil {
				return errtext.Wrapf(err, "table %s", t.Name())
			}
			if encrypted && !slices.Contains(need[id], t.Name()) {
				need[id] = append(need[id], t.Name())
			}
		}
	}
	if len(need) == 0 {
		return nil
	}
	ids := make([]uint32, 0, len(need))
	for id := range need {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// The live server lacking a key contradicts the request (a usage
	// error): nothing says the backup is damaged.
	refuse := func(id uint32, format string, args ...any) error {
		return flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "%s encrypted under key id %d: %s; nothing was imported",
			strings.Join(need[id], ", "), id, fmt.Sprintf(format, args...)))
	}
	rows, err := query(ctx, "SELECT PLUGIN_NAME FROM information_schema.PLUGINS WHERE PLUGIN_TYPE = 'ENCRYPTION' AND PLUGIN_STATUS = 'ACTIVE'")
	if err != nil {
		return errtext.Wrap(err, "cannot read the live server's encryption plugin")
	}
	if len(rows) == 0 {
		var tables []string
		for _, id := range ids {
			tables = append(tables, need[id]...)
		}
		return flagvalue.Contradiction(errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "%s encrypted under key ids %s: the live server loads no encryption plugin, so it "+
			"cannot read them: load the plugin with those keys (for file_key_management: plugin_load_add and file_key_management_filename in its "+
			"[mysqld] group) and restart it; nothing was imported", strings.Join(tables, ", "), idList(ids)))
	}
	if rows[0][0] != fileKeyManagement || m.ServerEncryption == nil || len(m.ServerEncryption.KeyChecks) == 0 {
		return nil
	}
	if rows, err = query(ctx, "SELECT @@file_key_management_filename"); err != nil {
		return errtext.Wrap(err, "cannot read the live server's file_key_management_filename")
	}
	keys, err := readKeyFile(rows[0][0])
	if err != nil {
		return nil // its keys are not readable here (permissions, a file key): the import itself checks them
	}
	for _, id := range ids {
		key, ok := keys[id]
		want := m.ServerEncryption.KeyChecks[strconv.FormatUint(uint64(id), 10)]
		switch {
		case !ok:
			return refuse(id, "the live server's key file %s has no key id %d: add the source server's key %d to it and restart the server", rows[0][0], id, id)
		case want != "" && keyCheck(key) != want:
			return refuse(id, "key id %d in the live server's key file %s is not the key backup %s was taken with", id, rows[0][0], m.BackupName)
		}
	}
	return nil
}
