package fifobackupengine

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/procident"
)

// A backup works only in a FIFO directory it made, and removes from it only
// the tool's FIFOs: the tool itself takes a directory that is there
// (ds_fifo.cc, fifo_init) and leaves its FIFOs behind.
func TestTheFIFODirectoryHoldsOnlyWhatTheBackupRemoves(t *testing.T) {
	t.Run("the tool's FIFOs and the directory go", func(t *testing.T) {
		parent := t.TempDir()
		logger := logutil.NewMemoryLogger()
		dir, release, err := newFIFODir(parent, logger)
		require.NoError(t, err)
		assert.Equal(t, parent, filepath.Dir(dir))
		for _, name := range []string{"thread_0", "thread_1", "thread_63"} {
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, name), 0o600))
		}
		release()
		assert.Empty(t, dirNames(t, parent), "the FIFOs, the directory and its owner record are gone")
		assert.Empty(t, logger.String())
	})
	t.Run("what is not the tool's FIFO stays, named", func(t *testing.T) {
		parent := t.TempDir()
		logger := logutil.NewMemoryLogger()
		dir, release, err := newFIFODir(parent, logger)
		require.NoError(t, err)
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "thread_0"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "thread_1"), []byte("not a FIFO"), 0o600))
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "thread_64"), 0o600)) // beyond any stream
		release()
		assert.Equal(t, []string{"thread_1", "thread_64"}, dirNames(t, dir))
		assert.Contains(t, logger.String(), "fifo: cannot remove the directory of the tool's FIFO streams "+dir+": it holds thread_1, "+
			"thread_64, which the backup tool did not make: left alone")
	})
	t.Run("one that cannot be made is refused, naming the flag", func(t *testing.T) {
		parent := filepath.Join(t.TempDir(), "a-file")
		require.NoError(t, os.WriteFile(parent, nil, 0o600))
		_, _, err := newFIFODir(parent, logutil.NewMemoryLogger())
		require.Error(t, err)
		assert.Regexp(t, `^cannot make a directory for the backup tool's FIFO streams under `+parent+`: mkdir `+parent+`/fifo-streams-\S+: `+
			`not a directory \(give --fifo-backup-fifo-dir a directory this user can write in\)$`, err.Error())
	})
	// --fifo-backup-fifo-dir may be the tablet's tmp dir, where the work
	// directories are made: the two directories never take each other's name.
	t.Run("beside the work directories", func(t *testing.T) {
		parent := t.TempDir()
		logger := logutil.NewMemoryLogger()
		work, releaseWork, err := newWorkDir(parent, workDirPrefix, logger)
		require.NoError(t, err)
		fifos, releaseFIFOs, err := newFIFODir(parent, logger)
		require.NoError(t, err)
		assert.NotEqual(t, work, fifos)
		releaseFIFOs()
		assert.DirExists(t, work)
		releaseWork()
		assert.Empty(t, dirNames(t, parent))
	})
}

// A backup killed with SIGKILL leaves its FIFOs in --fifo-backup-fifo-dir:
// the next backup removes them, and their directory, when their run's process
// is provably gone; a live run's, an entry of someone else's, or a directory
// whose owner is not known, are left.
func TestAKilledBackupsFIFOsAreSweptByTheNext(t *testing.T) {
	parent := t.TempDir()
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	gone := procident.Self()
	gone.PID, gone.ProcStart = dead.Process.Pid, "12345"
	killedRun := func(extra ...string) string {
		dir, err := mkWorkDir(parent, fifoDirPrefix, gone)
		require.NoError(t, err)
		record, err := json.Marshal(gone)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dir+ownerSuffix, record, 0o600))
		for _, name := range append([]string{"thread_0", "thread_1"}, extra...) {
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, name), 0o600))
		}
		return dir
	}
	live, releaseLive, err := newFIFODir(parent, logutil.NewMemoryLogger())
	require.NoError(t, err)
	defer releaseLive()
	swept := killedRun()
	withOther := killedRun("operator.fifo")
	require.NoError(t, syscall.Mkfifo(filepath.Join(live, "thread_0"), 0o600))
	unknown := filepath.Join(parent, fifoDirPrefix+"1-2-operator")
	require.NoError(t, os.Mkdir(unknown, 0o700))
	require.NoError(t, syscall.Mkfifo(filepath.Join(unknown, "thread_0"), 0o600))

	logger := logutil.NewMemoryLogger()
	next, release, err := newFIFODir(parent, logger)
	require.NoError(t, err)
	release()
	assert.NoDirExists(t, swept)
	assert.NoFileExists(t, swept+ownerSuffix)
	assert.NoDirExists(t, next)
	assert.Equal(t, []string{"operator.fifo"}, dirNames(t, withOther), "the killed run's FIFOs go, the rest stays")
	assert.Equal(t, []string{"thread_0"}, dirNames(t, live))
	assert.Equal(t, []string{"thread_0"}, dirNames(t, unknown))
	assert.Contains(t, logger.String(), "fifo: removed "+swept+" left by a run whose process ("+strings.Split(filepath.Base(swept), "-")[2]+") is gone")
	assert.Contains(t, logger.String(), "fifo: cannot remove "+withOther+" left by dead process")
	assert.Contains(t, logger.String(), "it holds operator.fifo, which the backup tool did not make: left alone")
}
