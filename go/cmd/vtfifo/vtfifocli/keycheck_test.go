package vtfifocli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

// TestKeyCheckNamesWhichKeyOpensEachBackup: the key file's IDs (never a key), and for each backup the key
// that wraps it and whether the file opens it: all open (exit 0); a key
// taken out of the file, or no file, leaves its backups unreadable (exit 1,
// each named); --backup is refused (exit 2); a keyspace with no backup at
// all is a wrong location (exit 3).
func TestKeyCheckNamesWhichKeyOpensEachBackup(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	line := map[string]string{}
	for _, id := range []string{"k1", "k2"} {
		l, err := crypt.NewKeyLine(id)
		require.NoError(t, err)
		line[id] = l
	}
	keyFile := func(name string, ids ...string) string {
		p := filepath.Join(dir, name)
		var doc string
		for _, id := range ids {
			doc += line[id] + "\n"
		}
		require.NoError(t, os.WriteFile(p, []byte(doc), 0o600))
		return p
	}
	for _, b := range []struct{ name, keys string }{
		{"2026-11-20.000000.zone1-0000000100", keyFile("old", "k1")},
		{"2026-11-21.000000.zone1-0000000100", ""},
		{"2026-11-22.000000.zone1-0000000100", keyFile("new", "k2", "k1")},
	} {
		cfg := splitstorage.DefaultConfig()
		cfg.File.Root, cfg.PartSize, cfg.EncryptionKeyFile = root, splitstorage.MinPartSize, b.keys
		bs, err := splitstorage.New(cfg)
		require.NoError(t, err)
		plantBackup(t, bs, "ks/0", b.name)
		require.NoError(t, bs.Close())
	}
	both := keyFile("both", "k2", "k1")
	out, errOut := runSplit(t, 0, root, "key-check", "--keyspace=ks", "--shard=0", "--split-storage-encryption-key-file="+both)
	assert.Equal(t, "key file "+both+": 2 keys: k2 (wraps new backups), k1\n"+
		"BACKUP                                   KEY  OPENS\n"+
		"ks/0/2026-11-20.000000.zone1-0000000100  k1   yes\n"+
		"ks/0/2026-11-21.000000.zone1-0000000100  -    in the clear\n"+
		"ks/0/2026-11-22.000000.zone1-0000000100  k2   yes\n", out)
	assert.Empty(t, errOut)
	assert.NotContains(t, out, line["k1"][3:], "never a key")

	onlyNew := keyFile("only-new", "k2")
	out, _ = runSplit(t, 1, root, "key-check", "--keyspace=ks", "--shard=0", "--split-storage-encryption-key-file="+onlyNew)
	assert.Contains(t, out, "ks/0/2026-11-20.000000.zone1-0000000100  k1   NO: split storage: backup ks/0/2026-11-20.000000.zone1-0000000100: "+
		`encrypted with key ID "k1", which the key file `+onlyNew+" does not hold (it holds k2)\n")
	assert.Contains(t, out, "ks/0/2026-11-22.000000.zone1-0000000100  k2   yes\n")

	out, _ = runSplit(t, 1, root, "key-check", "--keyspace=ks", "--shard=0", "--json")
	var res KeyCheckResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Empty(t, res.KeyFile)
	require.Len(t, res.Backups, 3)
	assert.Contains(t, res.Backups[0].Problem, `is encrypted (key ID "k1"): set --split-storage-encryption-key-file`)
	assert.Empty(t, res.Backups[1].Problem)

	// A wrong keyspace is a wrong location, not an empty shard.
	out, errOut = runSplit(t, 3, root, "key-check", "--keyspace=kss", "--shard=0", "--split-storage-encryption-key-file="+both)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "no backups at all in kss/0 in "+root+" (split storage): check --keyspace, --shard and the storage flags")

	_, errOut = runSplit(t, 2, root, "key-check", "--keyspace=ks", "--shard=0", "--backup=x")
	assert.Contains(t, errOut, "--backup is not for key-check: it checks every backup of the shard")
}
