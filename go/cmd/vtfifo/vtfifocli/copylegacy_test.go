package vtfifocli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// plantLegacy writes a backup as Vitess's file storage lays it out
// (root/ks/0/name/file).
func plantLegacy(t *testing.T, root, name string, files map[string]string) {
	t.Helper()
	dir := filepath.Join(root, "ks", "0", name)
	require.NoError(t, os.MkdirAll(dir, 0o750))
	for f, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(body), 0o640))
	}
}

// TestCopyFromLegacyStorage: a backup of the legacy storage (Vitess's file
// storage, named by --split-storage-legacy) is copied into the split
// storage file by file, whichever engine took it (fifo, Vitess's
// xtrabackup with stripes, builtin): listed there as the split storage's,
// every file the same bytes, the fifo one verified by vtfifo verify
// without the legacy storage. A second copy, --remove-source and an engine
// whose files are not known are refused, saying why.
func TestCopyFromLegacyStorage(t *testing.T) {
	legacyRoot, _ := storageCopy(t) // a fifo backup in Vitess's file storage
	const fifo, xtra, builtin, shell = "2026-11-23.050519.zone1-0000004989", "2026-11-20.000000.zone1-0000000100", "2026-11-21.000000.zone1-0000000100",
		"2026-11-22.000000.zone1-0000000100"
	plantLegacy(t, legacyRoot, xtra, map[string]string{
		"MANIFEST":               `{"BackupMethod":"xtrabackup","BackupName":"` + xtra + `","FileName":"backup.xbstream.gz","NumStripes":2}`,
		"backup.xbstream.gz-000": "stripe zero", "backup.xbstream.gz-001": "stripe one"})
	plantLegacy(t, legacyRoot, builtin, map[string]string{
		"MANIFEST": `{"BackupMethod":"builtin","BackupName":"` + builtin + `","FileEntries":[{"Base":"Data","Name":"a"},{"Base":"Data","Name":"b"}]}`,
		"0":        "first file", "1": "second file"})
	plantLegacy(t, legacyRoot, shell, map[string]string{"MANIFEST": `{"BackupMethod":"mysqlshell","BackupName":"` + shell + `"}`})
	splitRoot := t.TempDir()
	args := []string{"--split-storage-legacy=file", "--file-backup-storage-root=" + legacyRoot, "--keyspace=ks", "--shard=0", "--progress=never"}
	copyArgs := func(name string, more ...string) []string {
		return append(append([]string{"copy", "--backup=" + name, "--to=--split-storage-backend=file", "--to=--split-storage-root=" + splitRoot}, more...),
			args...)
	}
	for name, files := range map[string]int{fifo: 5, xtra: 3, builtin: 3} {
		out, _ := runSplit(t, 0, splitRoot, copyArgs(name)...)
		assert.Contains(t, out, "OK: backup ks/0/"+name+" of the legacy file storage copied file by file: ")
		assert.Contains(t, out, fmt.Sprintf(" %d files ", files))
	}
	// Copied, it is the split storage's own: copied again, it is there already.
	_, errOut := runSplit(t, 2, splitRoot, copyArgs(xtra)...)
	assert.Contains(t, errOut, "already holds it complete, so nothing was copied")
	_, errOut = runSplit(t, 2, splitRoot, copyArgs(shell, "--remove-source")...)
	assert.Contains(t, errOut, "is the legacy file storage's: --remove-source is refused for it")
	_, errOut = runSplit(t, 2, splitRoot, copyArgs(shell)...)
	assert.Contains(t, errOut, `its engine "mysqlshell" keeps files this tool does not know`)
	assert.NotContains(t, errOut, "FAIL", "another engine's backup is not a damaged one")
	// A file the MANIFEST names and the backup lacks: the backup's fault
	// (exit 1, naming it). A file that cannot be read (here a directory in
	// its place): exit 3, nothing says the backup is damaged. Neither
	// leaves a backup in the split storage.
	const lacking, unread = "2026-11-22.100000.zone1-0000000100", "2026-11-22.110000.zone1-0000000100"
	for _, name := range []string{lacking, unread} {
		plantLegacy(t, legacyRoot, name, map[string]string{
			"MANIFEST":               `{"BackupMethod":"xtrabackup","BackupName":"` + name + `","FileName":"backup.xbstream.gz","NumStripes":2}`,
			"backup.xbstream.gz-000": "stripe zero"})
	}
	require.NoError(t, os.Mkdir(filepath.Join(legacyRoot, "ks", "0", unread, "backup.xbstream.gz-001"), 0o750))
	out, errOut := runSplit(t, 1, splitRoot, copyArgs(lacking)...)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "FAIL: backup ks/0/"+lacking+": copying backup.xbstream.gz-001: ")
	assert.NotContains(t, errOut, "nothing says the backup is damaged")
	out, errOut = runSplit(t, 3, splitRoot, copyArgs(unread)...)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "FAIL: backup ks/0/"+unread+": copying backup.xbstream.gz-001: ")
	assert.Contains(t, errOut, "it could not be read or reached: nothing says the backup is damaged")

	// In the split storage alone: the three, each file as in the legacy one.
	st := localSplit(t, splitRoot)
	ctx := context.Background()
	bhs, err := st.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 3, "nothing of the failed copies is listed")
	for _, bh := range bhs {
		entries, err := os.ReadDir(filepath.Join(legacyRoot, "ks", "0", bh.Name()))
		require.NoError(t, err)
		for _, e := range entries {
			want, err := os.ReadFile(filepath.Join(legacyRoot, "ks", "0", bh.Name(), e.Name()))
			require.NoError(t, err)
			r, err := bh.ReadFile(ctx, e.Name())
			require.NoError(t, err, "%s/%s", bh.Name(), e.Name())
			got, err := io.ReadAll(r)
			r.Close()
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "%s/%s", bh.Name(), e.Name())
		}
	}
	out, _ = runSplit(t, 0, splitRoot, "verify", "--backup="+fifo, "--keyspace=ks", "--shard=0", "--progress=never")
	assert.Contains(t, out, "OK")
}

// TestLegacyListingFailureIsNotAnEmptyList: a legacy storage that cannot
// list fails ls (stdout empty, the storage and flag named on stderr), never
// an empty list that would hide its backups.
func TestLegacyListingFailureIsNotAnEmptyList(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, nil, 0o640))
	out, errOut := runSplit(t, 3, t.TempDir(), "ls", "--split-storage-legacy=file", "--file-backup-storage-root="+notADir, "--keyspace=ks", "--shard=0")
	assert.Empty(t, out)
	assert.Contains(t, errOut, "listing the backups of the legacy file storage (--split-storage-legacy) in ks/0")
}
