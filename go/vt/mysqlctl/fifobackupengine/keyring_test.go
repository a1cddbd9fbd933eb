package fifobackupengine

import (
	"testing"

	"github.com/google/shlex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeyringPrepareFlagsKeepsTheKeysAndTheirValues: the options that give
// the prepare its keyring are kept with their values, in both forms, and
// read back whole; everything else is apart.
func TestKeyringPrepareFlagsKeepsTheKeysAndTheirValues(t *testing.T) {
	for _, c := range []struct{ flags, keyring, others string }{
		{"", "", ""},
		{"--innodb-page-size=4k", "", "--innodb-page-size=4k"},
		{"--keyring-file-data=/k/keyring --innodb-page-size=4k", "--keyring-file-data=/k/keyring", "--innodb-page-size=4k"},
		{"--innodb_page_size=4k --Keyring_File_Data /k/key ring --use-memory=1G", "--Keyring_File_Data /k/key",
			"--innodb_page_size=4k ring --use-memory=1G"},
		{`--component-keyring-config "/etc/my keys/c.cnf" --transition-key='it''s' -x`, `--component-keyring-config '/etc/my keys/c.cnf' ` +
			`--transition-key=its`, "-x"},
		{`--transition-key="a'b" --x="y z"`, `'--transition-key=a'\''b'`, `'--x=y z'`},
		{"--plugin-load-add=file_key_management --file-key-management-filename=/k/keys.txt --innodb-log-file-size=1G --plugin-dir /p",
			"--plugin-load-add=file_key_management --file-key-management-filename=/k/keys.txt --plugin-dir /p", "--innodb-log-file-size=1G"},
		{"--keyring-vault-config=/v.cnf --early-plugin-load=keyring_vault.so --keyringx=1", "--keyring-vault-config=/v.cnf " +
			"--early-plugin-load=keyring_vault.so", "--keyringx=1"},
	} {
		keyring, others := KeyringPrepareFlags(c.flags)
		assert.Equal(t, c.keyring, keyring, c.flags)
		assert.Equal(t, c.others, others, c.flags)
		all, _ := shlex.Split(c.flags)
		back, err := shlex.Split(keyring + " " + others)
		require.NoError(t, err)
		assert.ElementsMatch(t, all, back, "%s: read back whole", c.flags)
	}
}
