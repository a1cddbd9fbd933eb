package vtfifocli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestABackupCopiedByHandIsPassedOverNotJudged: an operator copies a good
// backup's directory by hand, under a newer name of the shard and into a
// staging keyspace (cp -r, aws s3 cp). Its documents name the backup it
// was written as, so it is not the backup its new name says, and restores
// pass over it; nothing about it is damaged. Before, ls exited 1 calling
// its MANIFEST damaged, verify exited 1, test-restore
// --quarantine-on-failure recorded a failed test restore and quarantined
// it, and the fleet view called the copy the shard's newest backup. Now:
// ls shows the row and exits 0, verify and test-restore exit 2 without a
// check or a record, restore and the fleet view take the backup before
// it, prune keeps it without counting it, repair and copy change nothing
// (exit 2; copy called it "damaged at the source"), and rm removes it.
func TestABackupCopiedByHandIsPassedOverNotJudged(t *testing.T) {
	now := time.Now().UTC()
	dated := func(age time.Duration) string { return now.Add(-age).Format("2006-01-02.150405") + ".zone1-0000000100" }
	old, good, copied := dated(72*time.Hour), dated(2*time.Hour), dated(time.Hour)
	root := localSplitWith(t, old, good)
	dir := func(ks, name string) string { return filepath.Join(root, ks, "0", name) }
	require.NoError(t, os.CopyFS(dir("ks", copied), os.DirFS(dir("ks", good))))
	require.NoError(t, os.CopyFS(dir("staging", good), os.DirFS(dir("ks", good))))
	shard := []string{"--keyspace=ks", "--shard=0"}
	moved := func(dir, name string) string {
		return regexp.QuoteMeta("split storage: backup " + dir + "/" + name + " is backup ks/0/" + good + " copied or renamed outside vtfifo " +
			"(its completion marker and indexes name ks/0/" + good + "): a backup is read only under the name it was written with, which " +
			"is its time, keyspace and shard, so restores pass over it; nothing says it is damaged (read it as ks/0/" + good + ", or " +
			"remove this copy: vtfifo rm --backup=" + name + ")")
	}
	objects := func(path string) []string {
		entries, err := os.ReadDir(path)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	before := objects(dir("ks", copied))

	out, errOut := runSplit(t, 0, root, append([]string{"ls"}, shard...)...)
	assert.Regexp(t, `(?m)^`+good+`\s+fifo\s+split\s+full\s`, out)
	assert.Regexp(t, `(?m)^`+copied+`\s+\?\s+split\s+.*`+moved("ks/0", copied)+`$`, out)
	assert.Empty(t, errOut)

	out, errOut = runSplit(t, 2, root, append([]string{"verify", "--backup=" + copied}, shard...)...)
	assert.Regexp(t, `^NOT CHECKED: `+moved("ks/0", copied)+"\n$", out)
	assert.Equal(t, "vtfifo verify: checking backup ks/0/"+copied+" (split storage)\n", errOut)
	out, _ = runSplit(t, 2, root, "verify", "--keyspace=staging", "--shard=0", "--json")
	assert.Regexp(t, `"not_checked": "`+moved("staging/0", good), out)
	assert.Contains(t, out, `"ok": false`)

	out, errOut = runSplit(t, 2, root, append([]string{"test-restore", "--backup=" + copied, "--quarantine-on-failure", "--quiet",
		"--scratch-dir=" + t.TempDir()}, shard...)...)
	assert.Empty(t, out)
	assert.Regexp(t, `^vtfifo test-restore: test restore of ks/0/`+copied+` could not run, nothing is recorded: .*`+moved("ks/0", copied)+
		` \(no verdict on the backup\)\n$`, errOut)
	assert.Equal(t, before, objects(dir("ks", copied)), "no record, no quarantine")

	dr := t.TempDir()
	require.NoError(t, os.CopyFS(dr, os.DirFS(root)))
	out, errOut = runSplit(t, 2, root, append([]string{"repair", "--backup=" + copied, "--from=--split-storage-root=" + dr}, shard...)...)
	assert.Empty(t, out)
	assert.Regexp(t, `^vtfifo repair: `+moved("ks/0", copied)+"\n$", errOut)
	assert.Equal(t, before, objects(dir("ks", copied)), "nothing repaired")

	to := t.TempDir()
	out, errOut = runSplit(t, 2, root, append([]string{"copy", "--backup=" + copied, "--to=--split-storage-root=" + to}, shard...)...)
	assert.Empty(t, out)
	assert.Regexp(t, moved("ks/0", copied)+"\n$", errOut)
	assert.NoDirExists(t, filepath.Join(to, "ks", "0", copied), "nothing copied")

	target := filepath.Join(t.TempDir(), "r")
	out, errOut = runSplit(t, 0, root, append([]string{"restore", "--log-level=warning", "--progress=never", "--target-dir=" + target}, shard...)...)
	assert.Regexp(t, `^OK: backup ks/0/`+good+` restored into `, out)
	assert.Regexp(t, `(?m)^vtfifo restore: skipping ks/0/`+copied+`: .*`+moved("ks/0", copied)+`$`, errOut)

	out, _ = runSplit(t, 0, root, append([]string{"prune", "--keep=1", "--dry-run"}, shard...)...)
	assert.Regexp(t, `^keeping ks/0/`+good+`: one of the newest 1 that did not fail a test restore \(--keep\)\n`+
		`keeping ks/0/`+copied+`: newer than the oldest of the newest 1 .*; restores pass over it: .*`+moved("ks/0", copied)+"\n"+
		`would remove ks/0/`+old+"\n$", out)

	out, _ = runSplit(t, 0, root, "ls", "--rebuild-summaries", "--json")
	assert.Regexp(t, `"keyspace": "ks",\s+"shard": "0",\s+"backups": 2,\s+"newest": "`+good+`",\s+"time": "[^"]+",\s+"passed_over": 1,`, out)
	out, _ = runSplit(t, 0, root, "ls")
	assert.Regexp(t, `(?m)^ks/0\s+2\s+`+good+`\s.*\sok \(1 newer passed over by restores: vtfifo ls --keyspace=ks --shard=0 says why\)$`, out)
	assert.Regexp(t, `(?m)^staging/0\s+0\s+-\s.*\sok \(1 newer passed over by restores: vtfifo ls --keyspace=staging --shard=0 says why\)$`, out)

	out, _ = runSplit(t, 0, root, append([]string{"rm", "--backup=" + copied}, shard...)...)
	assert.Equal(t, "removed complete backup ks/0/"+copied+"\n", out)
	_, err := os.Stat(dir("ks", copied))
	assert.ErrorIs(t, err, os.ErrNotExist)
	runSplit(t, 0, root, append([]string{"verify", "--backup=" + good}, shard...)...)
}
