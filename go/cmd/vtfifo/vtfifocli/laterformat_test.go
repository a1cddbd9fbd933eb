package vtfifocli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// TestABackupOfALaterFormatIsNotDamaged: a backup a later version of the
// split storage wrote (an index of a later format version, with a field
// this version does not know), checked by this version's vtfifo (a DR
// host not yet upgraded): verify exits 3, and test-restore
// --quarantine-on-failure records and quarantines nothing, both saying
// which version reads it. It was "corrupt index", exit 1, quarantined.
func TestABackupOfALaterFormatIsNotDamaged(t *testing.T) {
	root := localSplitCopy(t)
	p := filepath.Join(root, "ks", "0", "copied", "MANIFEST.index")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var idx map[string]any
	require.NoError(t, json.Unmarshal(b, &idx))
	idx["version"], idx["written_by"] = 4, "vtfifo of 2027"
	b, err = json.Marshal(idx)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b, 0o640))
	shard := []string{"--keyspace=ks", "--shard=0", "--backup=copied", "--progress=never"}
	later := "index of format version 4, written by a later version of the split storage (this one reads versions up to 3): read it with " +
		"that version or later; nothing says it is damaged"

	out, errOut := runSplit(t, 3, root, append([]string{"verify", "--quiet"}, shard...)...)
	assert.True(t, strings.HasPrefix(out, "FAIL: backup ks/0/copied: 1 could not be read or reached, so were not checked (nothing says "+
		"they are damaged):\n"), out)
	assert.Contains(t, out, later)
	assert.NotContains(t, out, "corrupt")
	assert.Empty(t, errOut)

	out, errOut = runSplit(t, 3, root, append([]string{"test-restore", "--quarantine-on-failure", "--fifo-backup-tool-flavor=mariabackup",
		"--fifo-backup-tool-path=/usr/bin/mariabackup"}, shard...)...)
	assert.True(t, strings.HasPrefix(out, "FAIL: test restore of ks/0/copied could not run, nothing is recorded: "), out)
	assert.Contains(t, out, later)
	assert.Empty(t, errOut)
	_, err = os.Stat(filepath.Join(root, "ks", "0", "copied", ".quarantined"))
	assert.ErrorIs(t, err, os.ErrNotExist, "quarantined")
	_, err = os.Stat(filepath.Join(root, "ks", "0", "copied", ".complete"))
	assert.NoError(t, err, "still complete, listed")
}

// TestAManifestOfALaterFormatIsNotDamaged: a MANIFEST a later fifo engine
// wrote (a later format version, with a source this version does not
// know), read by this version's vtfifo: verify, restore and test-restore
// --quarantine-on-failure exit 3 saying which version reads it, and the
// backup stays listed, unquarantined. The same source in a MANIFEST of
// this version's format is refused as damage (exit 1).
func TestAManifestOfALaterFormatIsNotDamaged(t *testing.T) {
	manifestAs := func(version int) string {
		cfg := splitstorage.DefaultConfig()
		cfg.File.Root = t.TempDir()
		splitCopyEdited(t, cfg, "copied", func(file string, data []byte) []byte {
			if file != "MANIFEST" {
				return data
			}
			var m map[string]any
			require.NoError(t, json.Unmarshal(data, &m))
			m["FormatVersion"], m["Source"] = version, "pipe-v2"
			b, err := json.Marshal(m)
			require.NoError(t, err)
			return b
		})
		return cfg.File.Root
	}
	root := manifestAs(2)
	shard := []string{"--keyspace=ks", "--shard=0", "--backup=copied", "--progress=never", "--quiet"}
	later := "MANIFEST of format version 2, written by a later version of the fifo engine (this one reads versions up to 1): read it with " +
		"that version or later; nothing says it is damaged"

	out, errOut := runSplit(t, 3, root, append([]string{"verify"}, shard...)...)
	assert.Contains(t, out+errOut, later)
	assert.NotContains(t, out+errOut, "unknown source")
	_, errOut = runSplit(t, 3, root, append([]string{"restore", "--target-dir=" + filepath.Join(t.TempDir(), "r")}, shard...)...)
	assert.Contains(t, errOut, later)
	out, errOut = runSplit(t, 3, root, append([]string{"test-restore", "--quarantine-on-failure", "--fifo-backup-tool-flavor=mariabackup",
		"--fifo-backup-tool-path=/usr/bin/mariabackup"}, shard...)...)
	assert.True(t, strings.HasPrefix(out, "FAIL: test restore of ks/0/copied could not run, nothing is recorded: "), out)
	assert.Contains(t, out, later)
	assert.Empty(t, errOut)
	// Listed, not quarantined; not read, so ls exits 3.
	ls, errOut := runSplit(t, 3, root, "ls", "--keyspace=ks", "--shard=0")
	assert.Contains(t, ls, "copied")
	assert.NotContains(t, ls, "quarantined")
	assert.Contains(t, errOut, "could not be read, which is no verdict on the backup (its row says why): copied\n")

	out, errOut = runSplit(t, 1, manifestAs(1), append([]string{"verify"}, shard...)...)
	assert.Contains(t, out+errOut, `unknown source "pipe-v2"`)
	assert.NotContains(t, out+errOut, "later version")
}
