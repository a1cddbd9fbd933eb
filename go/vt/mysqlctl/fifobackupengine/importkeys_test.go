package fifobackupengine

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// writeTablespace writes the first page of a MariaDB tablespace as 10.11
// writes it for a table encrypted under keyID (scheme 1), or left in the
// clear (scheme 0), at the offset seen on a 16 KiB page (10428).
func writeTablespace(t *testing.T, path string, scheme byte, keyID uint32) {
	page := make([]byte, 16<<10)
	rec := append([]byte{}, cryptMagic...)
	rec = append(rec, scheme, 16)
	rec = append(rec, make([]byte, 16)...)          // IV
	rec = binary.BigEndian.AppendUint32(rec, 1)     // min key version
	rec = binary.BigEndian.AppendUint32(rec, keyID) // key id
	rec = append(rec, 1)
	copy(page[10428:], rec)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, page, 0o644))
}

func TestCheckImportKeys(t *testing.T) {
	dir := t.TempDir()
	writeTablespace(t, filepath.Join(dir, "shop/secret.ibd"), cryptScheme1, 2)
	writeTablespace(t, filepath.Join(dir, "shop/plain.ibd"), 0, 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shop/none.ibd"), make([]byte, 16<<10), 0o644))
	id, ok, err := tablespaceKeyID(filepath.Join(dir, "shop/secret.ibd"))
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, uint32(2), id)
	for _, clear := range []string{"shop/plain.ibd", "shop/none.ibd"} {
		_, ok, err = tablespaceKeyID(filepath.Join(dir, clear))
		require.NoError(t, err)
		assert.False(t, ok, clear)
	}

	table := func(name string) RestoredTable {
		return RestoredTable{TableFiles: TableFiles{DB: "shop", Table: name}, Exported: []string{"shop/" + name + ".ibd", "shop/" + name + ".cfg"}}
	}
	key2 := strings.Repeat("22", 32)
	raw2, _ := hex.DecodeString(key2)
	m := &Manifest{ServerEncryption: &ServerEncryption{Plugin: fileKeyManagement, KeyIDs: []uint32{1, 2}, KeyChecks: map[string]string{"2": keyCheck(raw2)}}}
	m.BackupName = "b1"
	liveKeys := filepath.Join(dir, "live-keys.txt")
	plugins := [][]string{{fileKeyManagement}}
	query := func(_ context.Context, q string) ([][]string, error) {
		if strings.Contains(q, "PLUGINS") {
			return plugins, nil
		}
		return [][]string{{liveKeys}}, nil
	}
	ctx := context.Background()
	assert.NoError(t, CheckImportKeys(ctx, query, m, dir, []RestoredTable{table("plain"), table("none")}), "tables in the clear")

	for _, tc := range []struct{ keys, want string }{
		{"1;" + strings.Repeat("11", 32) + "\n2;" + key2 + "\n", ""},
		{"1;" + strings.Repeat("11", 32) + "\n", "shop.secret encrypted under key id 2: the live server's key file " + liveKeys + " has no key id 2"},
		{"2;" + strings.Repeat("33", 32) + "\n", "shop.secret encrypted under key id 2: key id 2 in the live server's key file " + liveKeys +
			" is not the key backup b1 was taken with; nothing was imported"},
	} {
		require.NoError(t, os.WriteFile(liveKeys, []byte(tc.keys), 0o600))
		err := CheckImportKeys(ctx, query, m, dir, []RestoredTable{table("plain"), table("secret")})
		if tc.want == "" {
			assert.NoError(t, err)
			continue
		}
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
		assert.True(t, flagvalue.IsContradiction(err), "the live server lacks the key: a usage error, no verdict on the backup")
	}
	plugins = nil
	err = CheckImportKeys(ctx, query, m, dir, []RestoredTable{table("secret")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shop.secret encrypted under key ids 2: the live server loads no encryption plugin")
	assert.True(t, flagvalue.IsContradiction(err))
}
