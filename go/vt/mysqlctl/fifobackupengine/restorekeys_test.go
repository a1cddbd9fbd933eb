package fifobackupengine

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/vterrors"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

func TestReadKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	k16, k32 := strings.Repeat("ab", 16), strings.Repeat("0f", 32)
	keys, err := readKeyFile(write("ok", "# comment\n\n1;"+k32+"\n  7;"+k16+"   # trailing\n"))
	require.NoError(t, err)
	want32, _ := hex.DecodeString(k32)
	want16, _ := hex.DecodeString(k16)
	assert.Equal(t, map[uint32][]byte{1: want32, 7: want16}, keys)

	for name, text := range map[string]string{
		"no-separator": "1 " + k32 + "\n",
		"id-zero":      "0;" + k32 + "\n",
		"short-key":    "1;abcd\n",
		"not-hex":      "1;" + strings.Repeat("zz", 32) + "\n",
	} {
		_, err := readKeyFile(write(name, text))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "line 1", name)
		assert.NotContains(t, err.Error(), k32, "a key never reaches an error")
	}
	_, err = readKeyFile(write("salted", "Salted__12345678..."))
	assert.ErrorIs(t, err, errKeyFileEncrypted)
	_, err = readKeyFile(filepath.Join(dir, "absent"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// chainOf is a chain of backups taken with the given encryption records.
func chainOf(encs ...*ServerEncryption) []member {
	out := make([]member, len(encs))
	for i, e := range encs {
		m := &Manifest{ServerEncryption: e}
		m.BackupName = "backup" + string(rune('A'+i))
		out[i] = member{m: m}
	}
	return out
}

func TestCheckRestoreKeys(t *testing.T) {
	dir := t.TempDir()
	key1, key2 := strings.Repeat("11", 32), strings.Repeat("22", 32)
	raw := func(h string) []byte { b, _ := hex.DecodeString(h); return b }
	source := filepath.Join(dir, "source-keys.txt")
	require.NoError(t, os.WriteFile(source, []byte("1;"+key1+"\n2;"+key2+"\n"), 0o600))
	enc := &ServerEncryption{Plugin: fileKeyManagement, KeyIDs: []uint32{1, 2}, KeyFile: source,
		KeyChecks: map[string]string{"1": keyCheck(raw(key1)), "2": keyCheck(raw(key2))}}
	logger := logutil.NewMemoryLogger()

	assert.NoError(t, checkRestoreKeys(chainOf(nil), "", logger), "a backup of a server without encryption")
	assert.NoError(t, checkRestoreKeys(chainOf(enc), "", logger), "the source's key file, where the backup says")

	hostCnf := filepath.Join(dir, "my.cnf")
	hostKeys := filepath.Join(dir, "host-keys.txt")
	require.NoError(t, os.WriteFile(hostCnf, []byte("[mysqld]\nfile_key_management_filename="+hostKeys+"\n"), 0o600))
	for _, tc := range []struct{ keys, want string }{
		{"1;" + key1 + "\n2;" + key2 + "\n", ""},
		{"1;" + key1 + "\n", "key id 2 is not in the key file " + hostKeys + " (file_key_management_filename in " + hostCnf + ")"},
		{"1;" + key1 + "\n2;" + strings.Repeat("33", 32) + "\n", "key id 2 in the key file " + hostKeys + " (file_key_management_filename in " +
			hostCnf + ") is not the key backup backupA was taken with"},
	} {
		require.NoError(t, os.WriteFile(hostKeys, []byte(tc.keys), 0o600))
		err := checkRestoreKeys(chainOf(enc), hostCnf, logger)
		if tc.want == "" {
			assert.NoError(t, err)
			continue
		}
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrKeysUnavailable, "this host's keys, not damage")
		assert.Equal(t, vtrpcpb.Code_FAILED_PRECONDITION, vterrors.Code(vterrors.Wrap(err, "fifo restore failed")))
		assert.Equal(t,
			"backup backupA is encrypted by file_key_management with key ids 1,2: "+tc.want+"; nothing was downloaded: set file_key_management_filename "+
				"in the [mysqld] group of "+hostCnf+" to a key file that holds key ids 1,2 of the source server", err.Error())
	}
	require.NoError(t, os.Remove(hostKeys))
	err := checkRestoreKeys(chainOf(enc), hostCnf, logger)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the key file (file_key_management_filename in "+hostCnf+") cannot be used: cannot read the key file "+hostKeys)

	// A chain: the delta's key ids and the full's, checked together.
	delta := *enc
	delta.KeyIDs = []uint32{1, 3}
	delta.KeyChecks = map[string]string{"1": enc.KeyChecks["1"], "3": keyCheck(raw(key2))}
	err = checkRestoreKeys(chainOf(enc, &delta), "", logger)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "backup backupB is encrypted by file_key_management with key ids 1,2,3: key id 3 is not in the key file "+source)
	delta.KeyChecks = map[string]string{"1": keyCheck(raw(key2))}
	err = checkRestoreKeys(chainOf(enc, &delta), "", logger)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "backups backupA and backupB of one chain were taken with different keys under key id 1")

	// A key management service: its prepare checks its keys.
	assert.NoError(t, checkRestoreKeys(chainOf(&ServerEncryption{Plugin: "hashicorp_key_management", KeyIDs: []uint32{1}}), hostCnf, logger))
	// A file key on the host: the key file is not readable here.
	require.NoError(t, os.WriteFile(hostCnf, []byte("[mysqld]\nfile_key_management_filekey=FILE:/k\nfile_key_management_filename=/nowhere\n"), 0o600))
	assert.NoError(t, checkRestoreKeys(chainOf(enc), hostCnf, logger))
}

// TestReadServerEncryption reads a server's encryption as the backup does,
// from the queries' rows; no key reaches the record.
func TestReadServerEncryption(t *testing.T) {
	key1 := []byte(strings.Repeat("k", 32))
	answers := map[string][][]string{
		"PLUGINS":                        {{"file_key_management", "file_key_management.so"}},
		"@@innodb_encrypt_tables":        {{"ON", "1"}},
		"INNODB_TABLESPACES_ENCRYPTION":  {{"1", "5"}, {"4", "2"}},
		"@@file_key_management_filename": {{"/etc/mysql/keys.txt", "0"}},
	}
	query := func(_ context.Context, q string) ([][]string, error) {
		for k, v := range answers {
			if strings.Contains(q, k) {
				return v, nil
			}
		}
		t.Fatalf("unexpected query %s", q)
		return nil, nil
	}
	readKeys := func(string) (map[uint32][]byte, error) { return map[uint32][]byte{1: key1}, nil }
	enc, err := readServerEncryption(context.Background(), query, readKeys, logutil.NewMemoryLogger())
	require.NoError(t, err)
	assert.Equal(t, &ServerEncryption{Plugin: "file_key_management", Library: "file_key_management.so", KeyIDs: []uint32{1, 4},
		EncryptedTablespaces: 7, EncryptTables: "ON", EncryptLog: true, KeyFile: "/etc/mysql/keys.txt",
		KeyChecks: map[string]string{"1": keyCheck(key1)}}, enc)
	assert.Contains(t, enc.String(), "file_key_management, key ids 1,4 (7 encrypted tablespaces")

	answers["PLUGINS"] = nil
	enc, err = readServerEncryption(context.Background(), query, readKeys, logutil.NewMemoryLogger())
	require.NoError(t, err)
	assert.Nil(t, enc)
	assert.Equal(t, "none", enc.String())
}
