package vtfifocli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestABackupFromBeforeSigningIsNotDamaged: an operator turns signing on
// (--split-storage-signing-key-file) over backups written without it. Such
// a backup proves nothing either way: verify says it cannot be checked
// (exit 3, nothing says it is damaged), a test restore with
// --quarantine-on-failure records nothing and quarantines nothing (it was
// recorded failed and quarantined, with every backup after it), and
// --split-storage-accept-unsealed reads it. A sealed backup whose seal was
// removed is still damage: its indexes name the key it was sealed with.
func TestABackupFromBeforeSigningIsNotDamaged(t *testing.T) {
	root := localSplitCopy(t)
	keys := "--split-storage-signing-key-file=" + splitstoragetest.KeyFile(t, "sign-1")
	shard := []string{"--keyspace=ks", "--shard=0", "--backup=copied", "--progress=never"}
	cannot := "backup ks/0/copied cannot be checked: it carries no seal, and none of its indexes names a signing key (written without " +
		"--split-storage-signing-key-file): refused while a signing key is set (--split-storage-accept-unsealed reads it unchecked); nothing " +
		"says it is damaged"

	out, errOut := runSplit(t, 3, root, append([]string{"verify", "--quiet", keys}, shard...)...)
	assert.Equal(t, "FAIL: backup ks/0/copied: 1 could not be read or reached, so were not checked (nothing says they are damaged):\n"+
		"  backup ks/0/copied (ks/0/copied/.seal): split storage: "+cannot+"\n", out)
	assert.Empty(t, errOut)

	out, errOut = runSplit(t, 3, root, append([]string{"test-restore", "--quarantine-on-failure", keys, "--fifo-backup-tool-flavor=mariabackup",
		"--fifo-backup-tool-path=/usr/bin/mariabackup"}, shard...)...)
	assert.Equal(t, "FAIL: test restore of ks/0/copied could not run, nothing is recorded: backup copied: cannot read MANIFEST: split storage: "+
		cannot+" (no verdict on the backup); it could not be read or reached: nothing says the backup is damaged\n", out)
	assert.Empty(t, errOut)
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0")
	assert.Regexp(t, `(?m)^copied\s+fifo\s+split\s+full\s.*\s-\s+-\s*$`, out, "listed, untested, not quarantined")

	runSplit(t, 0, root, append([]string{"verify", "--quiet", keys, "--split-storage-accept-unsealed"}, shard...)...)

	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	cfg.SigningKeyFile = keys[len("--split-storage-signing-key-file="):]
	splitCopy(t, cfg)
	runSplit(t, 0, cfg.File.Root, append([]string{"verify", "--quiet", keys}, shard...)...)
	require.NoError(t, os.Remove(filepath.Join(cfg.File.Root, "ks", "0", "copied", ".seal")))
	out, _ = runSplit(t, 1, cfg.File.Root, append([]string{"verify", "--quiet", keys}, shard...)...)
	assert.Contains(t, out, "backup ks/0/copied carries no seal, but its index MANIFEST.index says its parts were sealed with key sign-1: its "+
		"seal was removed: replaced or forged: the backup is damaged")
}
