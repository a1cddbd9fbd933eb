package vtfifocli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestAnEncryptedBackupWithoutItsKeyIsNotDamaged: a host whose key file
// does not open an encrypted backup (no --split-storage-encryption-key-file
// given, a file without its key ID, another key under that ID) cannot read
// it, which proves nothing about it: verify exits 3, and a test restore
// with --quarantine-on-failure records nothing and quarantines nothing (it
// recorded the backup failed and quarantined it); export and restore exit 3
// too, leaving nothing behind. With its key, it verifies.
func TestAnEncryptedBackupWithoutItsKeyIsNotDamaged(t *testing.T) {
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	cfg.EncryptionKeyFile = splitstoragetest.KeyFile(t, "k1")
	splitCopy(t, cfg)
	root := cfg.File.Root
	shard := []string{"--keyspace=ks", "--shard=0", "--backup=copied", "--progress=never"}
	sameID := splitstoragetest.KeyFile(t, "k1")
	for _, c := range []struct{ name, keyFile, why string }{
		{"no key file", "", `backup ks/0/copied is encrypted (key ID "k1"): set --split-storage-encryption-key-file to a key file that holds that key`},
		{"another key ID", splitstoragetest.KeyFile(t, "k2"), `backup ks/0/copied: encrypted with key ID "k1", which the key file `},
		{"another key under its ID", sameID, `backup ks/0/copied: its data key does not unwrap with key ID "k1" of the key file ` + sameID +
			`: another key is stored under that ID there, or the backup's key envelope was altered or belongs to another backup`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var keys []string
			if c.keyFile != "" {
				keys = []string{"--split-storage-encryption-key-file=" + c.keyFile}
			}
			out, errOut := runSplit(t, 3, root, append(append([]string{"verify", "--quiet"}, keys...), shard...)...)
			assert.True(t, strings.HasPrefix(out, "FAIL: backup ks/0/copied: 1 could not be read or reached, so were not checked (nothing says "+
				"they are damaged):\n  backup copied: cannot read MANIFEST: split storage: "), out)
			assert.Contains(t, out, c.why)
			assert.Empty(t, errOut)

			out, errOut = runSplit(t, 3, root, append(append([]string{"test-restore", "--quarantine-on-failure", "--fifo-backup-tool-flavor=mariabackup",
				"--fifo-backup-tool-path=/usr/bin/mariabackup"}, keys...), shard...)...)
			assert.True(t, strings.HasPrefix(out, "FAIL: test restore of ks/0/copied could not run, nothing is recorded: backup copied: cannot read "+
				"MANIFEST: split storage: "), out)
			assert.Contains(t, out, c.why)
			assert.True(t, strings.HasSuffix(out, " (no verdict on the backup); it could not be read or reached: nothing says the backup is "+
				"damaged\n"), out)
			assert.Empty(t, errOut)
			for _, cmd := range [][]string{{"export", "-o", filepath.Join(t.TempDir(), "export")},
				{"restore", "--target-dir=" + filepath.Join(t.TempDir(), "restored")}} {
				out, errOut := runSplit(t, 3, root, append(append(cmd, keys...), shard...)...)
				assert.Empty(t, out)
				assert.Contains(t, errOut, c.why)
				assert.True(t, strings.HasSuffix(errOut, "; it could not be read or reached: nothing says the backup is damaged\n"), errOut)
				_, err := os.Stat(strings.TrimPrefix(strings.TrimPrefix(cmd[len(cmd)-1], "--target-dir="), "-o"))
				assert.ErrorIs(t, err, os.ErrNotExist, "%s left something", cmd[0])
			}
			entries, err := os.ReadDir(filepath.Join(root, "ks", "0", "copied"))
			require.NoError(t, err)
			for _, e := range entries {
				assert.False(t, strings.HasPrefix(e.Name(), ".quarantine") || strings.HasPrefix(e.Name(), ".sidecar"), "%s written", e.Name())
			}
		})
	}
	out, _ := runSplit(t, 0, root, append([]string{"verify", "--quiet", "--split-storage-encryption-key-file=" + cfg.EncryptionKeyFile}, shard...)...)
	assert.True(t, strings.HasPrefix(out, "OK: backup ks/0/copied: "), out)
}
