package fifobackupengine

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/procident"
)

// cutClaimEnv makes the test binary a process that creates work directories
// and is killed before it finishes claiming them
// (TestAWorkDirCutBeforeItsRecordIsStillOurs).
const cutClaimEnv = "FIFO_TEST_CUT_CLAIM_PARENT"

// TestAWorkDirCutBeforeItsRecordIsStillOurs: a process killed between
// creating its work directory and writing the owner record (none, or an
// empty one: killed inside the write) leaves a directory its name proves
// ours: the next run removes it and the cut record. Names that only look
// like one (another host's, a check that does not hold, an operator's) and
// a live process's are kept.
func TestAWorkDirCutBeforeItsRecordIsStillOurs(t *testing.T) {
	if parent := os.Getenv(cutClaimEnv); parent != "" {
		self := procident.Self()
		norecord, err := mkWorkDir(parent, stagingDirPrefix, self)
		require.NoError(t, err)
		cut, err := mkWorkDir(parent, stagingDirPrefix, self)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cut+ownerSuffix, nil, 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(cut, "xtrabackup_checkpoints"), []byte("backup_type = full-backuped\n"), 0o600))
		os.Stdout.WriteString(norecord + "\n" + cut + "\n")
		select {}
	}
	parent := t.TempDir()
	child, lines := startChild(t, cutClaimEnv+"="+parent)
	var cut []string
	for len(cut) < 2 && lines.Scan() {
		cut = append(cut, lines.Text())
	}
	require.Len(t, cut, 2, "the child never made its directories")
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()

	self := procident.Self()
	live, err := mkWorkDir(parent, stagingDirPrefix, self)
	require.NoError(t, err)
	otherHost := self
	otherHost.Host, otherHost.PID = "dr-host", child.Process.Pid
	dead := self
	dead.PID = child.Process.Pid
	deadName := filepath.Base(cut[0])
	kept := []string{
		live,
		filepath.Join(parent, workDirName(stagingDirPrefix, otherHost, "0123456789abcdef")),
		filepath.Join(parent, deadName[:len(deadName)-1]+otherLast(deadName)),
		filepath.Join(parent, stagingDirPrefix+strings.TrimPrefix(workDirName(workDirPrefix, dead, "0123456789abcdef"), workDirPrefix)),
		filepath.Join(parent, stagingDirPrefix+"1-2-operator-notes"),
	}
	for _, dir := range kept[1:] {
		require.NoError(t, os.Mkdir(dir, 0o700))
	}
	require.NoError(t, os.WriteFile(kept[2]+ownerSuffix, nil, 0o600))

	logger := logutil.NewMemoryLogger()
	removeStaleWorkDirs(parent, stagingDirPrefix, os.RemoveAll, logger)
	for _, dir := range cut {
		assert.NoDirExists(t, dir, "a directory its name proves ours, of a dead process, is removed")
		assert.NoFileExists(t, dir+ownerSuffix)
	}
	for _, dir := range kept {
		assert.DirExists(t, dir, "not provably ours and dead: kept")
	}
	assert.FileExists(t, kept[2]+ownerSuffix)
	assert.Contains(t, logger.String(), "fifo: removed "+cut[1]+" left by a run whose process ("+
		strings.Split(strings.TrimPrefix(filepath.Base(cut[1]), stagingDirPrefix), "-")[0]+") is gone")
}

func TestWorkDirNamesCheckThemselves(t *testing.T) {
	self := procident.Self()
	name := workDirName(stagingDirPrefix, self, "0123456789abcdef")
	o, ok := nameOwner(stagingDirPrefix, name, self)
	require.True(t, ok, name)
	assert.Equal(t, self, o)
	for _, change := range []func(*procident.Owner){
		func(v *procident.Owner) { v.Host = "dr-host" },
		func(v *procident.Owner) { v.Boot = "another-boot" },
		func(v *procident.Owner) { v.PIDNamespace = "pid:[4026532000]" },
	} {
		viewer := self
		change(&viewer)
		_, ok := nameOwner(stagingDirPrefix, name, viewer)
		assert.False(t, ok, "a name made elsewhere proves nothing here: %+v", viewer)
	}
	for _, other := range []string{name[:len(name)-1] + otherLast(name), strings.Replace(name, "-", "-1", 1), name + "0",
		workDirPrefix + strings.TrimPrefix(name, stagingDirPrefix)} {
		_, ok := nameOwner(stagingDirPrefix, other, self)
		assert.False(t, ok, other)
	}
}

// otherLast is a hex digit other than s's last.
func otherLast(s string) string {
	if strings.HasSuffix(s, "0") {
		return "1"
	}
	return "0"
}
