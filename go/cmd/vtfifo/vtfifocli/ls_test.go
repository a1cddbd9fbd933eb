package vtfifocli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestListExitSaysWhatItsRowsSay: ls prints every row, and its exit status
// is what the rows say, so that a script learns what an operator reading
// the table would: 1 for a damaged MANIFEST (proof about the backup), 3 for
// one that could not be read (no verdict), naming the backups on stderr;
// before, both exited 0.
func TestListExitSaysWhatItsRowsSay(t *testing.T) {
	root := localSplitWith(t, "good", "other")
	manifest := filepath.Join(root, "ks", "0", "other", "MANIFEST.part-00000001")
	shard := []string{"ls", "--keyspace=ks", "--shard=0"}
	where := "ks/0 in " + root + " (split storage)"

	// Unreadable: the part is a symbolic link to itself (ELOOP), which no
	// user's permissions can mend or break.
	saved, err := os.ReadFile(manifest)
	require.NoError(t, err)
	require.NoError(t, os.Remove(manifest))
	require.NoError(t, os.Symlink(filepath.Base(manifest), manifest))
	out, errOut := runSplit(t, 3, root, shard...)
	assert.Regexp(t, `(?m)^good\s+fifo\s+split\s+full\s`, out)
	assert.Regexp(t, `(?m)^other\s+\?\s+split\s+.*too many levels of symbolic links`, out)
	assert.Equal(t, "vtfifo ls: "+where+": a MANIFEST or verification record could not be read, which is no verdict on the backup "+
		"(its row says why): other\n", errOut)
	_, errOut = runSplit(t, 3, root, append(shard, "--json")...)
	assert.Contains(t, errOut, "could not be read")

	// Damaged: the part fails its checksum.
	require.NoError(t, os.Remove(manifest))
	saved[len(saved)/2] ^= 0xff
	require.NoError(t, os.WriteFile(manifest, saved, 0o644))
	out, errOut = runSplit(t, 1, root, shard...)
	assert.Regexp(t, `(?m)^good\s+fifo\s+split\s+full\s`, out)
	assert.Regexp(t, `(?m)^other\s+\?\s+split\s+.*checksum mismatch`, out)
	assert.Equal(t, "vtfifo ls: "+where+": a damaged MANIFEST (restores pass over the backup; its row says why, vtfifo verify "+
		"--backup=NAME checks it whole): other\n", errOut)

	// Whole again: exit 0, nothing on stderr.
	saved[len(saved)/2] ^= 0xff
	require.NoError(t, os.WriteFile(manifest, saved, 0o644))
	_, errOut = runSplit(t, 0, root, shard...)
	assert.Empty(t, errOut)
}
