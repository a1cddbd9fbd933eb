package fifobackupengine

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
)

// A backup works only in a FIFO directory it made, and removes from it only
// the tool's FIFOs: the tool itself takes a directory that is there
// (ds_fifo.cc, fifo_init) and leaves its FIFOs behind.
func TestTheFIFODirectoryHoldsOnlyWhatTheBackupRemoves(t *testing.T) {
	t.Run("one that is there is refused, and kept whole", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "fifo")
		require.NoError(t, os.Mkdir(dir, 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "thread_0"), []byte("an operator's"), 0o600))
		_, err := makeFIFODir(dir, 2)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot make the directory for the backup tool's FIFO streams: mkdir "+dir+": file exists (a backup "+
			"removes only what it made, so it never works in a directory it finds): move it away, or give --fifo-backup-fifo-dir another directory")
		got, err := os.ReadFile(filepath.Join(dir, "thread_0"))
		require.NoError(t, err)
		assert.Equal(t, "an operator's", string(got))
	})
	t.Run("the tool's FIFOs and the directory go", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "fifo")
		remove, err := makeFIFODir(dir, 3)
		require.NoError(t, err)
		for _, name := range []string{"thread_0", "thread_1", "thread_2"} {
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, name), 0o600))
		}
		logger := logutil.NewMemoryLogger()
		remove(logger)
		assert.NoDirExists(t, dir)
		assert.Empty(t, logger.String())
	})
	t.Run("what is not the tool's FIFO stays, named", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "fifo")
		remove, err := makeFIFODir(dir, 2)
		require.NoError(t, err)
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "thread_0"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "thread_1"), []byte("not a FIFO"), 0o600))
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "thread_2"), 0o600)) // beyond the streams
		logger := logutil.NewMemoryLogger()
		remove(logger)
		left, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		assert.Equal(t, []string{"thread_1", "thread_2"}, names)
		assert.Contains(t, logger.String(), "the directory of the tool's FIFO streams "+dir+" is left")
	})
}
