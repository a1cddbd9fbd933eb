package vtfifocli

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vtfifo/vtfifo/go/testutil/faultyfs"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// TestAFileSystemFailingOnTheWayIsNoVerdict: a split storage root read
// through a file system that fails on the way to the data (a real FUSE
// mount, as gcsfuse or s3fs, or NFS: input/output error, stale handle,
// transport not connected) is not read, and that is no verdict on the
// backup: verify exits 3 saying so, test-restore records and quarantines
// nothing, ls exits 3. Before, each was damage: verify exited 1 and a test
// restore quarantined the good backup.
func TestAFileSystemFailingOnTheWayIsNoVerdict(t *testing.T) {
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	splitCopyAs(t, cfg, "good")
	mount := faultyfs.Mount(t, cfg.File.Root)
	root := mount.Dir
	// A body that fails is read again, as from any store; two attempts
	// are enough to see it.
	shard := []string{"--keyspace=ks", "--shard=0", "--split-storage-retry-max-attempts=2"}
	lane := "ks/0/good/lane-001.xbstream.zst.part-00000001"
	manifest := "ks/0/good/MANIFEST.part-00000001"
	runSplit(t, 0, root, append([]string{"verify", "--backup=good"}, shard...)...)

	for _, c := range []struct {
		name  string
		file  string
		op    faultyfs.Op
		errno syscall.Errno
		says  string
	}{
		{"a lane's part, EIO", lane, faultyfs.Read, syscall.EIO, "input/output error"},
		{"a lane's part, ESTALE", lane, faultyfs.Open, syscall.ESTALE, "stale file handle"},
		{"the MANIFEST, ENOTCONN", manifest, faultyfs.Open, syscall.ENOTCONN, "transport endpoint is not connected"},
	} {
		mount.Fail(c.file, c.op, c.errno)
		out, errOut := runSplit(t, 3, root, append([]string{"verify", "--backup=good"}, shard...)...)
		assert.True(t, strings.HasPrefix(out, "FAIL: backup ks/0/good: 1 could not be read or reached, so were not checked (nothing says they "+
			"are damaged):\n  backup ks/0/good, file "), "%s: %s", c.name, out)
		assert.Contains(t, out, c.says, c.name)
		assert.NotContains(t, out+errOut, "damaged:", c.name)

		out, errOut = runSplit(t, 3, root, append([]string{"test-restore", "--backup=good", "--quarantine-on-failure", "--progress=never",
			"--quiet", "--scratch-dir=" + scratchDir(t), "--fifo-backup-tool-path=" + standInTool(t, "exit 0")}, shard...)...)
		assert.True(t, strings.HasPrefix(out, "FAIL: test restore of ks/0/good could not run, nothing is recorded: "), "%s: %s", c.name, out)
		assert.Contains(t, out+errOut, c.says, c.name)
		assert.NoFileExists(t, filepath.Join(cfg.File.Root, "ks", "0", "good", ".sidecar-verification"), c.name)

		out, _ = runSplit(t, map[string]int{lane: 0, manifest: 3}[c.file], root, append([]string{"ls"}, shard...)...)
		assert.NotContains(t, out, "quarantined", c.name)
		mount.Heal(c.file)
	}
	runSplit(t, 0, root, append([]string{"verify", "--backup=good"}, shard...)...)
}
