package vtfifocli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/testutil/tmpfs"
)

// standInTool writes a stand-in for the xtrabackup that took the test
// backup: its --version is that tool's, and its --prepare refuses an empty
// directory as Percona's does (no xtrabackup_checkpoints, exit 1; the
// control a failed prepare is judged by) and runs prepare (a /bin/sh
// script's body) on a backup.
func standInTool(t *testing.T, prepare string) string {
	return standInToolOf(t, "8.0.35-30", refusesAnEmptyDirectory+prepare)
}

// refusesAnEmptyDirectory is the start of a stand-in's --prepare that
// refuses a target directory without a backup's checkpoints as Percona's
// does (the control's: empty, but for the backup's backup-my.cnf), in its
// words (xtrabackup.cc, xtrabackup_prepare_func: "failed to read metadata
// from"; mariabackup, built from the same source, prints them here).
const refusesAnEmptyDirectory = `for a; do case "$a" in --target-dir=*) d="${a#*=}";; esac; done
	[ -e "$d/xtrabackup_checkpoints" ] || { echo "xtrabackup: Error: failed to read metadata from '$d/xtrabackup_checkpoints'" >&2; exit 1; }
	`

// standInToolOf is a stand-in of another Percona release whose --prepare
// runs prepare wherever it is run, an empty directory too.
func standInToolOf(t *testing.T, release, prepare string) string {
	tool := filepath.Join(t.TempDir(), "xtrabackup")
	require.NoError(t, os.WriteFile(tool, []byte("#!/bin/sh\ncase \"$*\" in\n*--version*) echo 'xtrabackup version "+release+" based on MySQL "+
		"server "+release+" Linux (x86_64) (revision id: test)';;\n*--prepare*) "+prepare+";;\nesac\n"), 0o755))
	return tool
}

// TestATestRestoreThatThisHostFailsIsNoVerdict: a test restore that fails
// for this host's sake (a scratch file system too small, no tool where
// --fifo-backup-tool-path says, the tool reporting the OS's "No space left
// on device", the tool killed by SIGKILL as the OOM killer does, InnoDB
// refused a directory or giving up on the kernel's AIO contexts) is no
// verdict on the backup: it records
// nothing, quarantines nothing (--quarantine-on-failure), and the backup is
// still the one restores pick. The same backup whose tool reports a
// corrupted page does fail: recorded, quarantined, exit 1. A tool that
// crashes (SIGSEGV) on an empty directory as well is this host's (it was a
// failed backup); one that crashes on the backup's files and refuses an
// empty directory by itself fails the backup.
func TestATestRestoreThatThisHostFailsIsNoVerdict(t *testing.T) {
	root := localSplitCopy(t)
	record := filepath.Join(root, "ks", "0", "copied", ".sidecar-verification")
	scratch := scratchDir(t)
	testRestore := func(code int, tool string) (string, string) {
		return runSplit(t, code, root, "test-restore", "--keyspace=ks", "--shard=0", "--backup=copied", "--quarantine-on-failure",
			"--progress=never", "--quiet", "--scratch-dir="+scratch, "--fifo-backup-tool-path="+tool)
	}
	fullDisk := tmpfs.Mount(t, 1<<20) // the backup's stream is 99 MB
	for _, c := range []struct{ name, tool, scratch, want string }{
		{"a scratch disk too small", standInTool(t, "exit 0"), fullDisk, ": nothing was downloaded; restore it onto a file system with more " +
			"room (no verdict on the backup); this host could not finish it (its disk has too little room for the backup): nothing says the backup is damaged\n"},
		{"the tool on a full disk", standInTool(t, `echo "[ERROR] InnoDB: Error number 28 means 'No space left on device'" >&2; exit 1`), scratch,
			"; this host could not finish it (its disk is full): nothing says the backup is damaged\n"},
		{"the OOM killer", standInTool(t, "kill -KILL $$"), scratch,
			"; this host could not finish it (a program was killed (SIGKILL: the kernel's OOM killer, or an operator)): nothing says the backup is damaged\n"},
		{"a directory InnoDB may not enter", standInTool(t, `echo "[ERROR] InnoDB: Operating system error number 13 in a file operation." >&2; `+
			`echo "[ERROR] InnoDB: The error means mariadbd does not have the access rights to the directory." >&2; exit 1`), scratch,
			"; this host could not finish it (a file or directory is not accessible to it here (its modes, AppArmor or SELinux)): nothing says " +
				"the backup is damaged\n"},
		{"the scratch disk failing under the tool", standInTool(t, `echo "[ERROR] InnoDB: Operating system error number 5 in a file operation." >&2; `+
			`echo "[ERROR] InnoDB: Error number 5 means 'Input/output error'" >&2; exit 1`), scratch,
			"; this host could not finish it (a disk or file system here failed (an input/output error)): nothing says the backup is damaged\n"},
		{"the kernel's AIO contexts used up", standInTool(t, `echo "[ERROR] [MY-012584] [InnoDB] io_setup() failed with EAGAIN after 5 attempts." >&2; `+
			`echo "[ERROR] [MY-012954] [InnoDB] Cannot initialize AIO sub-system" >&2; exit 1`), scratch,
			"; this host could not finish it (the kernel's asynchronous I/O contexts are used up (fs.aio-max-nr: too many servers or tools at " +
				"once)): nothing says the backup is damaged\n"},
		{"a tool that crashes wherever it runs", standInToolOf(t, "8.0.35-30", "kill -SEGV $$"), scratch, "; the same tool, run the same way on an empty " +
			"directory, dies of a signal too (signal: segmentation fault): this host's tool, not the backup (no verdict on the backup); this host " +
			"could not finish it (its backup tool crashes here even on an empty directory, so its crash says nothing about the backup): nothing " +
			"says the backup is damaged\n"},
		// Its lines stamped and naming the directory it was given, as
		// Percona's are: the control's differ in those only.
		{"a tool that fails wherever it runs", standInToolOf(t, "8.0.35-30", `for a; do case "$a" in --target-dir=*) d="${a#*=}";; esac; done
	echo "$(date -u +%Y-%m-%dT%H:%M:%S.%N)-00:00 0 [ERROR] [MY-011825] [Xtrabackup] cannot use the plugin directory for $d" >&2; exit 3`),
			scratch, "; the same tool, run the same way on an empty directory, fails the same way (exit status 3, the same output): it never got " +
				"as far as the backup's files (no verdict on the backup); this host could not finish it (its backup tool fails here the same way " +
				"on an empty directory, so its failure says nothing about the backup): nothing says the backup is damaged\n"},
	} {
		out, errOut := runSplit(t, 3, root, "test-restore", "--keyspace=ks", "--shard=0", "--backup=copied", "--quarantine-on-failure",
			"--progress=never", "--quiet", "--scratch-dir="+c.scratch, "--fifo-backup-tool-path="+c.tool)
		assert.True(t, strings.HasPrefix(out, "FAIL: test restore of ks/0/copied could not run, nothing is recorded: "), "%s: %s", c.name, out)
		assert.True(t, strings.HasSuffix(out, c.want), "%s: %s", c.name, out)
		assert.Empty(t, errOut, c.name)
		assert.NoFileExists(t, record, c.name)
		ls, _ := runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0")
		assert.NotContains(t, ls, "quarantined", c.name)
	}

	out, errOut := testRestore(2, "/nonexistent/xtrabackup")
	assert.Empty(t, out)
	assert.Equal(t, "vtfifo test-restore: test restore of ks/0/copied could not run, nothing is recorded: --fifo-backup-tool-path "+
		`"/nonexistent/xtrabackup" is not an executable: exec: "/nonexistent/xtrabackup": stat /nonexistent/xtrabackup: no such file or directory `+
		"(no verdict on the backup)\n", errOut)
	assert.NoFileExists(t, record)

	// Flags the tool takes nowhere (it refuses them before it looks at
	// its directory, having read the server's settings from the
	// backup-my.cnf there, as Percona's prints them) are named, and are no
	// verdict.
	out, errOut = runSplit(t, 2, root, "test-restore", "--keyspace=ks", "--shard=0", "--backup=copied", "--quarantine-on-failure",
		"--progress=never", "--quiet", "--scratch-dir="+scratch, "--fifo-backup-prepare-flags=--no-such --password=PlantedSecret9", "--fifo-backup-tool-path="+
			standInToolOf(t, "8.0.35-30", `for a; do case "$a" in --target-dir=*) d="${a#*=}";; esac; done
	echo "xtrabackup: recognized server arguments: $(grep '^innodb' "$d/backup-my.cnf" | tr '\n' ' ')" >&2
	case "$*" in *--no-such*) echo "xtrabackup: unknown option '--no-such'" >&2; exit 7;; esac
	`+refusesAnEmptyDirectory))
	assert.Empty(t, out)
	assert.Contains(t, errOut, "xtrabackup --prepare failed: exit status 7; its last output:\nxtrabackup: recognized server arguments: "+
		"innodb_checksum_algorithm=")
	assert.True(t, strings.HasSuffix(errOut, "\nxtrabackup: unknown option '--no-such'; "+
		"the same tool, run the same way on an empty directory, fails the same way (exit status 7), and without "+
		`--fifo-backup-prepare-flags="--no-such --password=****" it does not: those flags do not fit this tool or this host, and nothing says `+
		"the backup is damaged; correct them or leave them out (no verdict on the backup)\n"), errOut)
	assert.NotContains(t, errOut, "PlantedSecret9")
	assert.NoFileExists(t, record)

	// A crash on the backup's files is a verdict: run on an empty
	// directory, the tool ends by itself, refusing it (as mariabackup and
	// xtrabackup do).
	out, _ = runSplit(t, 1, root, "test-restore", "--keyspace=ks", "--shard=0", "--backup=copied", "--record=false", "--progress=never",
		"--quiet", "--scratch-dir="+scratch, "--fifo-backup-tool-path="+standInTool(t, "kill -ABRT $$"))
	assert.Contains(t, out, "FAIL: test restore of ks/0/copied (")
	assert.Contains(t, out, "xtrabackup --prepare failed: signal: aborted")
	assert.True(t, strings.HasSuffix(out, "; the same tool, run the same way on an empty directory, ends by itself (exit status 1): the "+
		"backup's files are what it crashed on\n"), out)
	assert.NoFileExists(t, record)

	// What the tool says of the backup's pages is a verdict.
	out, _ = testRestore(1, standInTool(t, `echo "[ERROR] InnoDB: Database page corruption on disk or a failed read of file './t1.ibd' page [page id: `+
		`space=5, page number=3]" >&2; exit 1`))
	assert.Contains(t, out, "FAIL: test restore of ks/0/copied (")
	assert.Contains(t, out, "xtrabackup --prepare failed: exit status 1")
	assert.NotContains(t, out, "nothing says the backup is damaged")
	assert.FileExists(t, record)
	ls, _ := runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0")
	assert.Contains(t, ls, "quarantined: test restore failed ")
}

// TestATestRestoreOfADamagedManifestFails: a MANIFEST whose part fails its
// checksum is damage, read whole: the test restore fails naming file and
// part, exit 1, and records and quarantines it (before, it said "could not
// run", exit 3, and nothing was recorded).
func TestATestRestoreOfADamagedManifestFails(t *testing.T) {
	root := localSplitCopy(t)
	dir := filepath.Join(root, "ks", "0", "copied")
	manifest := filepath.Join(dir, "MANIFEST.part-00000001")
	b, err := os.ReadFile(manifest)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(manifest, b, 0o644))
	mysqld := filepath.Join(t.TempDir(), "mariadbd")
	require.NoError(t, os.WriteFile(mysqld, []byte("#!/bin/sh\necho '/usr/sbin/mariadbd  Ver 10.11.14-MariaDB for debian-linux-gnu on x86_64'\n"),
		0o755))
	out, errOut := runSplit(t, 1, root, "test-restore", "--keyspace=ks", "--shard=0", "--backup=copied", "--quarantine-on-failure",
		"--progress=never", "--quiet", "--mysqld-path="+mysqld, "--fifo-backup-tool-path="+standInTool(t, "exit 0"))
	assert.Contains(t, out, "FAIL: test restore of ks/0/copied (")
	assert.Contains(t, out, "file MANIFEST, part 1 (ks/0/copied/MANIFEST.part-00000001): checksum mismatch")
	assert.NotContains(t, out+errOut, "nothing says the backup is damaged")
	assert.FileExists(t, filepath.Join(dir, ".sidecar-verification"))
	ls, _ := runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0")
	assert.Contains(t, ls, "quarantined: test restore failed ")
}

// TestARestoreThatThisHostFailsIsNoVerdict: vtfifo restore --prepare whose
// tool reports a full disk exits 3, saying this host could not finish it,
// and leaves no target directory it created; restoring an incremental
// backup without --prepare (which its files need) is a usage error, exit 2,
// naming the flag.
func TestARestoreThatThisHostFailsIsNoVerdict(t *testing.T) {
	_, args := storageCopy(t)
	target := filepath.Join(t.TempDir(), "r")
	tool := standInTool(t, `echo "InnoDB: Error number 28 means 'No space left on device'" >&2; exit 1`)
	out, errOut := runArgs(t, 3, append([]string{"restore", "--prepare", "--progress=never", "--quiet", "--target-dir=" + target,
		"--fifo-backup-tool-path=" + tool}, args...)...)
	assert.Empty(t, out)
	assert.Regexp(t, `^vtfifo restore: FAIL: fifo restore of backup 2026-11-23.050519.zone1-0000004989 into `+target+` failed: xtrabackup --prepare `+
		`failed: exit status 1; its last output:\n.*No space left on device'; this host could not finish it \(its disk is full\): nothing says the `+
		"backup is damaged\n$", errOut)
	assert.NoDirExists(t, target)

	// A prepare that fails with a tool older than the backup's (8.0.35-30)
	// is no proof about it: a usage error naming the release to give. The
	// same failure from the backup's own release is a verdict.
	// (Its words are a stand-in's: only its exit and the two releases count.)
	const refusal = `echo "[ERROR] InnoDB: the redo log format of a later release is not supported" >&2; exit 1`
	_, errOut = runArgs(t, 2, append([]string{"restore", "--prepare", "--progress=never", "--quiet", "--target-dir=" + target,
		"--fifo-backup-tool-path=" + standInToolOf(t, "8.0.30-23", refusal)}, args...)...)
	assert.Contains(t, errOut, "the redo log format of a later release is not supported")
	assert.True(t, strings.HasSuffix(errOut, "; this host's xtrabackup is release 8.0.30, older than the xtrabackup that took the backup (8.0.35): a "+
		"tool may refuse a later release's files, which is no proof about the backup; give xtrabackup 8.0.35 or later (--fifo-backup-tool-path)\n"), errOut)
	assert.NoDirExists(t, target)
	_, errOut = runArgs(t, 1, append([]string{"restore", "--prepare", "--progress=never", "--quiet", "--target-dir=" + target,
		"--fifo-backup-tool-path=" + standInTool(t, refusal)}, args...)...)
	assert.Contains(t, errOut, "FAIL: fifo restore of backup ")
	assert.NotContains(t, errOut, "no proof about the backup")
}

// TestARestoreIntoADirectoryThatCannotHoldItWritesNothing: a restore into
// a directory whose file system has less room than the backup's stream is
// refused before anything is downloaded or made there (exit 3: this host,
// no verdict on the backup), where it filled the file system, which a live
// server may share (MySQL stops when it cannot write its binary log), and
// failed half-way. With --prepare, a tenth more is asked for the prepare.
func TestARestoreIntoADirectoryThatCannotHoldItWritesNothing(t *testing.T) {
	_, args := storageCopy(t)
	small := tmpfs.Mount(t, 1<<20) // the backup's stream is 99 MB
	target := filepath.Join(small, "r")
	for _, prepare := range []bool{false, true} {
		restore := append([]string{"restore", "--progress=never", "--quiet", "--target-dir=" + target}, args...)
		what := `the stream bytes of backup 2026-11-23.050519.zone1-0000004989`
		if prepare {
			restore = append(restore, "--prepare", "--fifo-backup-tool-path="+standInTool(t, "exit 0"))
			what += `, and a tenth more for the prepare`
		}
		what += `, and 1% of the file system left to whatever else writes there`
		out, errOut := runArgs(t, 3, restore...)
		assert.Empty(t, out)
		assert.Regexp(t, `^vtfifo restore: FAIL: `+target+` has `+flagvalue.SizeTextPattern+` free, and restoring backup 2026-11-23.050519.zone1-0000004989 `+
			`needs about `+flagvalue.SizeTextPattern+` there \(`+what+`\): nothing was downloaded; restore it onto a file system with more room; this host could `+
			`not finish it \(its disk has too little room for the backup\): nothing says the backup is damaged\n$`, errOut)
		assert.NoDirExists(t, target)
		assert.Equal(t, int64(0), fsUsedBytes(t, small), "nothing written there")
	}
}

// fsUsedBytes is the bytes in use on dir's file system.
func fsUsedBytes(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	return int64(st.Blocks-st.Bfree) * st.Bsize
}

// runArgs runs vtfifo with args, requires its exit status and returns its
// stdout and stderr.
func runArgs(t *testing.T, wantCode int, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, &out, &errOut)
	require.Equal(t, wantCode, code, "vtfifo %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), out.String(), errOut.String())
	return out.String(), errOut.String()
}

// scratchDir is a test restore's scratch directory that the mysql user can
// reach when the test runs as root (t.TempDir's parent is not traversable
// by others).
func scratchDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "vtfifo-scratch-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	return dir
}

// TestAFailedRestoreKeepsWhatTheOperatorPutBeside: a restore into an empty
// directory that was there (the operator's: a mount point) writes into a
// subdirectory of its own, so that, failing, it removes what it wrote and
// nothing else: here a file the operator put into the directory while the
// restore ran (the stand-in tool writes it during the prepare, then fails).
// The restore's files are gone, and the directory holds only that file.
func TestAFailedRestoreKeepsWhatTheOperatorPutBeside(t *testing.T) {
	_, args := storageCopy(t)
	target := t.TempDir()
	notes := filepath.Join(target, "operator-notes.txt")
	tool := standInTool(t, `echo "restore started" > `+notes+`; echo "[ERROR] InnoDB: page [page id: space=5, page number=3] is corrupted" >&2; exit 1`)
	out, errOut := runArgs(t, 1, append([]string{"restore", "--prepare", "--progress=never", "--quiet", "--target-dir=" + target,
		"--fifo-backup-tool-path=" + tool}, args...)...)
	assert.Empty(t, out)
	assert.Regexp(t, `^vtfifo restore: FAIL: fifo restore of backup 2026-11-23.050519.zone1-0000004989 into `+target+` failed: xtrabackup --prepare `+
		"failed: exit status 1; its last output:\n.*is corrupted\n$", errOut)
	left, err := os.ReadDir(target)
	require.NoError(t, err)
	require.Len(t, left, 1, "%v", left)
	assert.Equal(t, "operator-notes.txt", left[0].Name())
	b, err := os.ReadFile(notes)
	require.NoError(t, err)
	assert.Equal(t, "restore started\n", string(b))
}
