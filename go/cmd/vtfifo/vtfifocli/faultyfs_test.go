package vtfifocli

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vtfifo/vtfifo/go/testutil/faultyfs"
)

// TestAFileSystemFailingOnTheWayIsNoVerdict: a split storage root read
// through a file system that fails on the way to the data (a real FUSE
// mount, as gcsfuse or s3fs, or NFS: input/output error, stale handle,
// transport not connected, on an open, a read or a stat) is not read, and
// that is no verdict on the backup: verify exits 3 saying so, test-restore
// records and quarantines nothing, ls exits 3. Before, each was damage:
// verify exited 1 and a test restore quarantined the good backup; a part
// whose stat failed was left out of the listing and called missing.
func TestAFileSystemFailingOnTheWayIsNoVerdict(t *testing.T) {
	under := localSplitWith(t, "good")
	mount := faultyfs.Mount(t, under)
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
		{"a lane's part, stat EIO", lane, faultyfs.Stat, syscall.EIO, "input/output error"},
	} {
		mount.Fail(c.file, c.op, c.errno)
		out, errOut := runSplit(t, 3, root, append([]string{"verify", "--backup=good"}, shard...)...)
		assert.True(t, strings.HasPrefix(out, "FAIL: backup ks/0/good: 1 could not be read or reached, so were not checked (nothing says they "+
			"are damaged):\n  backup ks/0/good"), "%s: %s", c.name, out)
		assert.Contains(t, out, c.says, c.name)
		assert.NotContains(t, out+errOut, "damaged:", c.name)

		out, errOut = runSplit(t, 3, root, append([]string{"test-restore", "--backup=good", "--quarantine-on-failure", "--progress=never",
			"--quiet", "--scratch-dir=" + scratchDir(t), "--fifo-backup-tool-path=" + standInTool(t, "exit 0")}, shard...)...)
		assert.True(t, strings.HasPrefix(out, "FAIL: test restore of ks/0/good could not run, nothing is recorded: "), "%s: %s", c.name, out)
		assert.Contains(t, out+errOut, c.says, c.name)
		assert.NoFileExists(t, filepath.Join(under, "ks", "0", "good", ".sidecar-verification"), c.name)

		out, _ = runSplit(t, map[string]int{lane: 0, manifest: 3}[c.file], root, append([]string{"ls"}, shard...)...)
		assert.NotContains(t, out, "quarantined", c.name)
		mount.Heal(c.file)
	}
	runSplit(t, 0, root, append([]string{"verify", "--backup=good"}, shard...)...)
}

// TestACleanupThatCannotSeeRemovesNothing: the commands that remove
// backups (verify --remove-incomplete, prune, rm) on a root read through
// a file system that fails to show a complete backup's completion marker
// (stat: EIO) or its directory (readdir: ENOTCONN) remove nothing: a marker
// not seen is not a marker absent, so a good backup is never taken for an
// incomplete one, and a removal that cannot list what it removes does not
// start. Healed, prune removes the older backup as it should.
func TestACleanupThatCannotSeeRemovesNothing(t *testing.T) {
	const b1, b2 = "2026-11-23.050519.zone1-0000000001", "2026-11-23.050519.zone1-0000000002"
	under := localSplitWith(t, b1, b2)
	mount := faultyfs.Mount(t, under)
	before := snapshot(t, under)
	shard := []string{"--keyspace=ks", "--shard=0", "--split-storage-retry-max-attempts=2"}
	removeIncomplete := []string{"verify", "--remove-incomplete", "--incomplete-min-age=0s"}
	prune := []string{"prune", "--keep=1"}
	rm := []string{"rm", "--backup=" + b1, "--incomplete-min-age=0"}
	cantList := func(cmd, what string) string {
		return "vtfifo " + cmd + ": cannot list the " + what + " of ks/0 in " + mount.Dir + " (split storage): split storage: listing backups in ks/0: stat " +
			mount.Dir + "/ks/0/" + b1 + "/.complete: input/output error\n"
	}
	notConnected := "split storage: removing backup ks/0/" + b1 + ": open " + mount.Dir + "/ks/0/" + b1 + ": transport endpoint is not connected; "
	for _, c := range []struct {
		name, path string
		op         faultyfs.Op
		errno      syscall.Errno
		runs       []struct {
			args   []string
			code   int
			stdout string
			stderr string // a suffix
		}
	}{
		{"its completion marker, stat EIO", "ks/0/" + b1 + "/.complete", faultyfs.Stat, syscall.EIO, []struct {
			args           []string
			code           int
			stdout, stderr string
		}{
			{removeIncomplete, 3, "", cantList("verify", "incomplete backups")},
			{prune, 3, "", cantList("prune", "backups")},
			{rm, 3, "", cantList("rm", "backups")},
		}},
		{"its directory, readdir ENOTCONN", "ks/0/" + b1, faultyfs.List, syscall.ENOTCONN, []struct {
			args           []string
			code           int
			stdout, stderr string
		}{
			{removeIncomplete, 0, "no incomplete backup in ks/0\n", ""},
			{prune, 3, "keeping ks/0/" + b2 + ": one of the newest 1 that did not fail a test restore (--keep)\n", notConnected + "the others go on, run prune again\n"},
			{rm, 3, "", notConnected + "run rm again\n"},
		}},
	} {
		mount.Fail(c.path, c.op, c.errno)
		for _, r := range c.runs {
			out, errOut := runSplit(t, r.code, root(mount), append(r.args, shard...)...)
			if r.stdout != "" || r.code != 0 {
				assert.Equal(t, r.stdout, out, "%s: %v", c.name, r.args)
			}
			assert.True(t, strings.HasSuffix(errOut, r.stderr), "%s: %v: %s", c.name, r.args, errOut)
			assert.Equal(t, before, snapshot(t, under), "%s: %v removed nothing", c.name, r.args)
		}
		mount.Heal(c.path)
	}
	out, _ := runSplit(t, 0, root(mount), append(prune, shard...)...)
	assert.Contains(t, out, "removed ks/0/"+b1)
	assert.NoDirExists(t, filepath.Join(under, "ks", "0", b1))
}

func root(m *faultyfs.FS) string { return m.Dir }
