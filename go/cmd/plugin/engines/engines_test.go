package engines

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/cmd/plugin/storages"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// The engine reads Vitess's compression flags whose variables Vitess keeps
// unexported (--compression-level, --backup-storage-compress): installed into
// a command, it must see the values parsed by that command, whatever the
// order in which packages registered their flags.
func TestEngineReadsVitessCompressionFlagsOfTheCommand(t *testing.T) {
	cmd := &cobra.Command{Use: "vttablet", RunE: func(*cobra.Command, []string) error { return nil }}
	// Stand-ins for the flags Vitess's mysqlctl registers on vttablet.
	cmd.Flags().Int("compression-level", 1, "")
	cmd.Flags().Bool("backup-storage-compress", true, "")
	cmd.Flags().Int("backup-storage-number-blocks", 2, "")
	plugin.Install(cmd, All...)
	cmd.SetArgs([]string{"--compression-level=7", "--backup-storage-compress=false", "--backup-storage-number-blocks=6", "--fifo-backup-lanes=3"})
	require.NoError(t, cmd.Execute())

	c := fifobackupengine.FlagConfig()
	assert.Equal(t, 3, c.Lanes)
	assert.Equal(t, 7, c.Compression.Level)
	assert.False(t, c.Compression.Enabled)
	assert.Equal(t, 6, c.Compression.Blocks)
}

// With fifo as the default engine and split as the storage, more lanes than the spool's
// whole file system could hold parts for stop the process at startup naming the flags.
func TestLanesMustFitTheSplitSpoolAtStartup(t *testing.T) {
	spoolDir := t.TempDir()
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(spoolDir, &st))
	fsSize := int64(st.Blocks) * st.Bsize
	// 64 lanes and 256 uploads of parts of this size exceed the file system.
	part := min(max(fsSize/300, 1<<20), 5<<30)
	require.Greater(t, part*(64+256), fsSize, "a file system over 1.6 TB: pick larger numbers")
	run := func(args ...string) error {
		cmd := &cobra.Command{Use: "vttablet", RunE: func(*cobra.Command, []string) error { return nil }}
		cmd.Flags().String("backup-engine-implementation", "builtin", "")
		cmd.Flags().StringVar(&backupstorage.BackupStorageImplementation, "backup-storage-implementation", "", "")
		plugin.Install(cmd, All...)
		plugin.Install(cmd, storages.All...)
		cmd.SetArgs(append([]string{"--split-storage-root=" + t.TempDir(), "--split-storage-spool-dir=" + spoolDir,
			fmt.Sprintf("--split-storage-part-size=%d", part), "--split-storage-upload-concurrency=256"}, args...))
		return cmd.Execute()
	}
	err := run("--backup-engine-implementation=fifo", "--backup-storage-implementation=split", "--fifo-backup-lanes=64")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `invalid value "64" for --fifo-backup-lanes: the file system of --split-storage-spool-dir (`+spoolDir)
	assert.Contains(t, err.Error(), "allowed values are 1..")
	assert.Contains(t, err.Error(), "--split-storage-upload-concurrency=256")
	assert.Contains(t, err.Error(), spoolDir)

	// Auto lanes, or another default engine: no startup check.
	require.NoError(t, run("--backup-engine-implementation=fifo", "--backup-storage-implementation=split"))
	require.NoError(t, run("--backup-storage-implementation=split", "--fifo-backup-lanes=64"))
}

// With default flags and 64 explicit lanes, the engine and the storage start.
func TestSixtyFourLanesStartWithDefaults(t *testing.T) {
	cmd := &cobra.Command{Use: "vttablet", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.Flags().String("backup-engine-implementation", "builtin", "")
	cmd.Flags().StringVar(&backupstorage.BackupStorageImplementation, "backup-storage-implementation", "", "")
	plugin.Install(cmd, All...)
	plugin.Install(cmd, storages.All...)
	cmd.SetArgs([]string{"--backup-engine-implementation=fifo", "--backup-storage-implementation=split", "--split-storage-root=" + t.TempDir(),
		"--fifo-backup-lanes=64"})
	require.NoError(t, cmd.Execute())
}

// With no engine or storage flag but the storage's root, fifo and split start on a host of
// any CPU count, and the lanes a backup then opens (--fifo-backup-lanes=0, auto) are all
// admitted by a real split storage with its defaults (spooled parts: no memory budget to fit).
func TestDefaultsStartOnAnyCPUCount(t *testing.T) {
	root := t.TempDir()
	cmd := &cobra.Command{Use: "vttablet", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.Flags().String("backup-engine-implementation", "builtin", "")
	cmd.Flags().StringVar(&backupstorage.BackupStorageImplementation, "backup-storage-implementation", "", "")
	plugin.Install(cmd, All...)
	plugin.Install(cmd, storages.All...)
	cmd.SetArgs([]string{"--backup-engine-implementation=fifo", "--backup-storage-implementation=split", "--split-storage-root=" + root})
	require.NoError(t, cmd.Execute())
	require.Equal(t, 0, fifobackupengine.FlagConfig().Lanes, "the default is auto")

	storage, err := splitstorage.New(splitstorage.FlagConfig())
	require.NoError(t, err)
	defer storage.Close()
	for _, cpus := range []int{1, 2, 9, 16, 64, 128} {
		bh, err := storage.StartBackup(context.Background(), "ks/0", fmt.Sprintf("cpus-%d", cpus))
		require.NoError(t, err)
		lanes := fifobackupengine.AutoLanes(cpus, bh)
		headroom := bh.(interface{ WritableFilesAtOnce() int }).WritableFilesAtOnce()
		require.Greater(t, headroom, 0, "the spool has no room for a part")
		assert.Equal(t, min(cpus, 64, headroom), lanes, "%d CPUs: one lane per CPU, up to 64 and to the parts the spool's free space holds", cpus)
		var writers []io.WriteCloser
		for i := range lanes {
			w, err := bh.AddFile(context.Background(), fmt.Sprintf("lane-%03d", i), 0)
			require.NoError(t, err, "%d CPUs: lane %d of %d refused by the storage", cpus, i, lanes)
			writers = append(writers, w)
		}
		for _, w := range writers {
			require.NoError(t, w.Close())
		}
		require.NoError(t, bh.AbortBackup(context.Background()))
	}
}
