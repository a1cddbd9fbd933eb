package vtfifocli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCapabilitiesNameTheStorage: a command that needs what only the split
// storage does, run on Vitess's file storage, is a usage error (exit 2)
// that names the storage in use and what it cannot do (verify's flags for
// it are refused at startup, naming them).
func TestCapabilitiesNameTheStorage(t *testing.T) {
	_, args := storageCopy(t) // --backup-storage-implementation=file, ks/0
	fileOnly := make([]string, 0, len(args))
	for _, a := range args {
		if !strings.HasPrefix(a, "--keyspace") && !strings.HasPrefix(a, "--shard") {
			fileOnly = append(fileOnly, a)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"key-check"}, args...), "the file storage cannot name its encryption keys: that needs the split storage (--backup-storage-implementation=split)"},
		{append([]string{"release", "--backup=2026-11-23.050519.zone1-0000004989"}, args...), "the file storage cannot release a quarantined backup: that needs the split storage (--backup-storage-implementation=split)"},
		{append([]string{"copy", "--to=--split-storage-root=" + t.TempDir()}, args...), "the file storage cannot copy a backup: that needs the split storage (--backup-storage-implementation=split)"},
		{append([]string{"verify", "--list-incomplete"}, args...), "--list-incomplete and --remove-incomplete need --backup-storage-implementation=split (it is file)"},
		{append([]string{"ls"}, fileOnly...), "the file storage cannot list its shards (give --keyspace and --shard): that needs the split storage (--backup-storage-implementation=split)"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, Main(context.Background(), c.args, &stdout, &stderr), "%v: %s", c.args, stderr.String())
		assert.Contains(t, stderr.String(), c.want, c.args)
	}
}

// TestAnotherEnginesBackupIsNotJudged: a backup of an engine a command
// does not read is refused (exit 2, naming its engine and storage), never
// called damaged: Vitess's builtin engine's by every command that reads a
// backup, its xtrabackup engine's by those that read fifo backups only;
// verify, test-restore and restore, which read that engine's stream,
// refuse one whose MANIFEST they cannot read, saying why.
func TestAnotherEnginesBackupIsNotJudged(t *testing.T) {
	const name = "2026-11-20.000000.zone1-0000000100"
	fifoOnly := [][]string{{"show"}, {"export", "-o", filepath.Join(t.TempDir(), "x")}}
	streams := [][]string{{"verify"}, {"test-restore"}, {"restore", "--target-dir=" + filepath.Join(t.TempDir(), "r")}}
	for _, c := range []struct {
		engine string
		cmds   [][]string
		says   func(cmd string) string
	}{
		{"builtin", append(fifoOnly, streams...), func(cmd string) string {
			if cmd == "verify" || cmd == "test-restore" || cmd == "restore" {
				return "was taken by Vitess's builtin engine (in the file storage): vtfifo " + cmd + " reads fifo and xtrabackup backups only"
			}
			return "was taken by Vitess's builtin engine (in the file storage): vtfifo " + cmd + " reads fifo backups only"
		}},
		{"xtrabackup", fifoOnly, func(cmd string) string {
			return "was taken by Vitess's xtrabackup engine (in the file storage): vtfifo " + cmd + " reads fifo backups only"
		}},
		{"xtrabackup", streams, func(cmd string) string {
			return "was taken by Vitess's xtrabackup engine (in the file storage): vtfifo " + cmd + " cannot read it: its xtrabackup MANIFEST names no " +
				"FileName (a backup older than Vitess recording it); Vitess restores it with its own engine"
		}},
	} {
		root := t.TempDir()
		b := filepath.Join(root, "ks", "0", name)
		require.NoError(t, os.MkdirAll(b, 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(b, "MANIFEST"), []byte(`{"BackupMethod":"`+c.engine+`","BackupName":"`+name+`"}`), 0o640))
		args := []string{"--backup-storage-implementation=file", "--file-backup-storage-root=" + root, "--keyspace=ks", "--shard=0"}
		for _, cmd := range c.cmds {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, Main(context.Background(), append(cmd, args...), &stdout, &stderr), "%s %v: %s", c.engine, cmd, stderr.String())
			assert.Contains(t, stderr.String(), "backup ks/0/"+name+" "+c.says(cmd[0]), "%s %v", c.engine, cmd)
			assert.Empty(t, stdout.String(), "%s %v", c.engine, cmd)
			assert.NotContains(t, stderr.String(), "FAIL", "%s %v", c.engine, cmd)
		}
	}
}
