package fifobackupengine

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// TestManyTablesUnderLowOpenFilesLimit: ~5,000 tables backed up by a
// process whose soft limit of open files is 1024, as runuser/PAM gives: the
// tool gets --open-files-limit at the hard limit and the backup restores
// every table. (Children inherit this process's soft limit once it has
// called setrlimit itself.)
func TestManyTablesUnderLowOpenFilesLimit(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 5000, RowsPerTable: 2})
	var rl syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl))
	require.GreaterOrEqual(t, rl.Max, uint64(5000+openFilesSlack), "the hard limit here must allow the test")
	low := rl
	low.Cur = 1024
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl) })

	useEngine(t, testConfig(3, SourceStdout, zstdConfig()))
	require.NoError(t, f.backup(t, nil))
	_, err := f.restore(t, nil)
	require.NoError(t, err)
	assert.Equal(t, f.static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"), "restored tables differ")
}

// TestOpenFilesHardLimitTooLow: more tablespaces than the hard limit allows
// is an error before the tool runs, with the numbers and what to raise.
func TestOpenFilesHardLimitTooLow(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "db"+strconv.Itoa(i%3)), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "db"+strconv.Itoa(i%3), "t"+strconv.Itoa(i)+".ibd"), nil, 0o640))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ts.ibd"), nil, 0o640))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "db0", "t.frm"), nil, 0o640))
	assert.Equal(t, 41, countTablespaces(dir))

	_, err := checkOpenFiles(dir, 41, 200)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "needs about 297 open files (41 InnoDB tablespaces in "+dir)
	assert.Contains(t, err.Error(), "hard limit of open files is 200")
	assert.Contains(t, err.Error(), "ulimit -Hn")
	n, err := checkOpenFiles(dir, 41, 4096)
	require.NoError(t, err)
	assert.Equal(t, uint64(4096), n)
}
