package selftest

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/testutil/testbin"
	"github.com/vtfifo/vtfifo/go/testutil/tier"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// standinPath is the xtrabackup stand-in (go/testutil/xtrabackupstandin).
var standinPath string

func TestMain(m *testing.M) { testbin.Main(m, testbin.Standin(&standinPath)) }

func workDir(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755)) // the mysql user reaches it
	for d := filepath.Dir(dir); d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			require.NoError(t, os.Chmod(d, st.Mode().Perm()|0o011))
		}
	}
	return dir
}

func stepOf(t *testing.T, rep Report, prefix string) Step {
	i := slices.IndexFunc(rep.Steps, func(s Step) bool { return strings.HasPrefix(s.Name, prefix) })
	require.GreaterOrEqual(t, i, 0, "no step %q in %v", prefix, rep.Steps)
	return rep.Steps[i]
}

func text(rep Report) string {
	var b bytes.Buffer
	rep.WriteText(&b)
	return b.String()
}

// TestSelfTestThroughTheStandIn: with a tool that has FIFO streams (the
// stand-in for Percona XtraBackup, on MariaDB data), the full and the last
// backups read FIFO streams, the middle one stdout; every step passes and
// nothing is left behind.
func TestSelfTestThroughTheStandIn(t *testing.T) {
	tier.Integration(t, "MariaDB and mariabackup")
	dir := workDir(t)
	rep := Run(t.Context(), Options{WorkDir: dir, ToolPath: standinPath, Scale: 20, Logger: logutil.NewMemoryLogger()})
	out := text(rep)
	require.True(t, rep.Passed, "%s", out)
	assert.Contains(t, out, "vtfifo selftest: PASSED")
	assert.Contains(t, stepOf(t, rep, "full backup while writing (source fifo)").Detail, "source fifo")
	assert.Contains(t, stepOf(t, rep, "incremental backup while writing (source stdout)").Detail, "source stdout")
	assert.Contains(t, stepOf(t, rep, "restore the chain").Detail, "equal to the source")
	for _, s := range rep.Steps {
		if s.Name != "an encrypted table" {
			assert.Equal(t, Passed, s.Status, "%s: %s", s.Name, s.Detail)
		}
	}
	assert.Contains(t, rep.Versions["tool"], "stand-in")
	assert.Contains(t, stepOf(t, rep, "start a scratch server").Detail, ", no TCP port;")
	assert.Contains(t, stepOf(t, rep, "load the data set").Detail, "DATA DIRECTORY")
	assert.Equal(t, "no host option file given (--host-cnf), so no keyring is known", stepOf(t, rep, "an encrypted table").Detail)
	left, _ := os.ReadDir(dir)
	assert.Empty(t, left, "the scratch directory is removed")
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"passed":true`)
}

// TestSelfTestWithAKeyring: a host that loads file_key_management gets an
// encrypted table in the data set, under the scratch server's own key file
// (never the host's), backed up, restored and compared with the rest.
func TestSelfTestWithAKeyring(t *testing.T) {
	tier.Integration(t, "MariaDB and mariabackup")
	dir := workDir(t)
	hostKeys := filepath.Join(t.TempDir(), "host-keys.txt")
	require.NoError(t, os.WriteFile(hostKeys, []byte("1;"+strings.Repeat("ab", 32)+"\n"), 0o600))
	cnf := filepath.Join(t.TempDir(), "my.cnf")
	require.NoError(t, os.WriteFile(cnf, []byte("[mariadb]\nplugin_load_add = file_key_management\nfile_key_management_filename = "+hostKeys+"\n"), 0o600))
	rep := Run(t.Context(), Options{WorkDir: dir, Scale: 3, HostCnf: cnf, Logger: logutil.NewMemoryLogger()})
	out := text(rep)
	require.True(t, rep.Passed, "%s", out)
	assert.Contains(t, stepOf(t, rep, "start a scratch server").Detail, "a keyring of its kind (file_key_management with a scratch key file)")
	assert.Contains(t, stepOf(t, rep, "load the data set").Detail, "encrypted (ENCRYPTED=YES)")
	assert.Contains(t, stepOf(t, rep, "restore the chain").Detail, "equal to the source")
	assert.NotContains(t, out, "an encrypted table")
	b, err := os.ReadFile(hostKeys)
	require.NoError(t, err)
	assert.Equal(t, "1;"+strings.Repeat("ab", 32)+"\n", string(b), "the host's key file is untouched")
}

// TestSelfTestIntoAnS3Bucket: with a storage the operator names (here an S3
// server on 127.0.0.1), the backups go there under a shard of the run's own
// and are removed at the end, as a step of the report.
func TestSelfTestIntoAnS3Bucket(t *testing.T) {
	tier.Integration(t, "MariaDB, mariabackup and an S3 server")
	srv := splitstoragetest.StartS3(t)
	srv.Setenv(t)
	dir := workDir(t)
	rep := Run(t.Context(), Options{WorkDir: dir, Scale: 3, Storage: &srv.Config, Logger: logutil.NewMemoryLogger()})
	out := text(rep)
	require.True(t, rep.Passed, "%s", out)
	loc := srv.Config.Location()
	assert.True(t, strings.HasPrefix(loc, "s3://"), loc)
	assert.Contains(t, stepOf(t, rep, "start a scratch server").Detail, "backups into "+loc+", vtfifo-selftest/")
	rm := stepOf(t, rep, "remove the self-test's backups from "+loc)
	assert.Equal(t, Passed, rm.Status)
	assert.Contains(t, rm.Detail, "3 backups removed from vtfifo-selftest/")
	bs, err := splitstorage.New(srv.Config)
	require.NoError(t, err)
	defer bs.Close()
	_, runDir, ok := strings.Cut(rm.Detail, " removed from ")
	require.True(t, ok, rm.Detail)
	bhs, err := bs.ListBackups(t.Context(), runDir)
	require.NoError(t, err)
	assert.Empty(t, bhs, "nothing left in %s", runDir)
	left, err := bs.ListIncomplete(t.Context(), runDir)
	require.NoError(t, err)
	assert.Empty(t, left, "nothing left in %s", runDir)
}

// TestSelfTestNamesADamagedPart: a part damaged after the backups fails
// the verification step, naming the backup; the later steps are skipped,
// the report's first error is the verification's.
func TestSelfTestNamesADamagedPart(t *testing.T) {
	tier.Integration(t, "MariaDB and mariabackup")
	dir := workDir(t)
	rep := Run(t.Context(), Options{WorkDir: dir, Scale: 5, Logger: logutil.NewMemoryLogger(), Keep: true,
		AfterBackups: func(c splitstorage.Config) error { return damageLargestFile(c.File.Root) }})
	out := text(rep)
	require.False(t, rep.Passed, "%s", out)
	assert.Contains(t, out, "vtfifo selftest: FAILED")
	v := stepOf(t, rep, "verify every backup")
	assert.Equal(t, Failed, v.Status)
	assert.Contains(t, rep.FirstError, "verify every backup: backup ")
	assert.Equal(t, Skipped, stepOf(t, rep, "restore the chain").Status)
	assert.Contains(t, out, "  FAIL  verify every backup")
	assert.Contains(t, out, "kept for a bug report (server stopped): "+rep.Kept)
	assert.DirExists(t, rep.Kept)
	assert.Zero(t, processesUnder(rep.Kept), "nothing runs on the kept directory: its server and mysqld_safe are gone")
	require.NoError(t, os.RemoveAll(rep.Kept))
}

// TestSelfTestToolExitsEarly: a tool that fails mid-stream fails the full
// backup, with the tool's own last words; everything is stopped and removed.
func TestSelfTestToolExitsEarly(t *testing.T) {
	tier.Integration(t, "MariaDB and mariabackup")
	t.Setenv("XTRABACKUP_STANDIN_FAIL_AFTER", "2000000")
	dir := workDir(t)
	rep := Run(t.Context(), Options{WorkDir: dir, ToolPath: standinPath, Scale: 5, Logger: logutil.NewMemoryLogger()})
	require.False(t, rep.Passed, "%s", text(rep))
	full := stepOf(t, rep, "full backup while writing")
	assert.Equal(t, Failed, full.Status)
	assert.Contains(t, full.Error, "failing on purpose")
	assert.Contains(t, rep.FirstError, "full backup while writing (source fifo): ")
	assert.Equal(t, Skipped, stepOf(t, rep, "verify every backup").Status)
	left, _ := os.ReadDir(dir)
	assert.Empty(t, left, "the scratch directory is removed")
}

// damageLargestFile flips a byte in the middle of the largest file under
// root: a lane's part.
func damageLargestFile(root string) error {
	var largest string
	var size int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if info, err := d.Info(); err == nil && info.Size() > size {
			largest, size = p, info.Size()
		}
		return nil
	})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(largest, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size/2); err != nil {
		return err
	}
	b[0] ^= 0xff
	_, err = f.WriteAt(b, size/2)
	return err
}

// TestHostSettings: the settings that shape a backup's files come from the
// host's option file (its server groups, includes resolved); paths and
// other settings do not.
func TestHostSettings(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "my.cnf")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inc.cnf"), []byte("[mysqld]\ninnodb_undo_tablespaces = 3\n"), 0o600))
	require.NoError(t, os.WriteFile(p, []byte("[mysqld]\ninnodb-page-size=32k\ndatadir=/var/lib/mysql\n[client]\nlower_case_table_names=1\n!include "+
		filepath.Join(dir, "inc.cnf")+"\n"), 0o600))
	lines, taken, err := hostSettings(p)
	require.NoError(t, err)
	assert.Equal(t, "innodb_page_size=32k\ninnodb_undo_tablespaces=3\n", lines)
	assert.Equal(t, "innodb_page_size=32k, innodb_undo_tablespaces=3", taken)
	lines, _, err = hostSettings("")
	require.NoError(t, err)
	assert.Empty(t, lines)
	_, _, err = hostSettings(filepath.Join(dir, "missing.cnf"))
	assert.Error(t, err)
}

// TestRemoveScratchWaitsForItsProcesses: a process still writing into the
// scratch directory after the server's shutdown returned (mysqld_safe's last
// lines) is waited for; the directory is gone, and stays gone.
func TestRemoveScratchWaitsForItsProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scratch")
	require.NoError(t, os.Mkdir(dir, 0o755))
	late := exec.Command("sh", "-c", `sleep 0.5; mkdir -p "$1/late"; touch "$1/late/log"`, "late-writer", dir)
	require.NoError(t, late.Start())
	done := make(chan error, 1)
	go func() { done <- late.Wait() }()
	require.NoError(t, removeScratch(dir, 10*time.Second))
	require.NoError(t, <-done)
	_, err := os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "the directory is gone after its last writer: %v", err)
}
