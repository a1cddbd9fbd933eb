package testrestoreplugin

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// TestATestRestoreThisHostCannotRunSaysItIsNoVerdict: vtbackup's test
// restore of its new backup on a host without the server it names fails
// vtbackup saying why nothing says the backup is damaged, and records and
// quarantines nothing.
func TestATestRestoreThisHostCannotRunSaysItIsNoVerdict(t *testing.T) {
	manifest, err := os.ReadFile("../../../vt/mysqlctl/fifobackupengine/testdata/backup-3baf113-fifo/ks/0/2026-11-23.050519.zone1-0000004989/MANIFEST")
	require.NoError(t, err)
	bs := localStorage(t)
	withStorage(t, splitstorage.Name, bs)
	name := time.Now().UTC().Format("2006-01-02.150405") + ".zone1-0000000100"
	bh := splitstoragetest.Plant(t, bs, "ks/0", name, string(manifest))

	was := testRestoreFlags
	t.Cleanup(func() { testRestoreFlags = was })
	fs := pflag.NewFlagSet("vtbackup", pflag.ContinueOnError)
	testRestoreFlags.Register(fs, testRestorePrefix+"-")
	require.NoError(t, fs.Parse([]string{"--fifo-backup-test-restore-mysqld-path=/nonexistent/mariadbd"}))

	tested, err := testNewBackup(context.Background(), "ks/0", nil)
	require.Error(t, err)
	assert.Empty(t, tested)
	assert.Contains(t, err.Error(), "test restore of ks/0/"+name+" could not run, nothing is recorded: ")
	assert.Contains(t, err.Error(), "/nonexistent/mariadbd")
	assert.Regexp(t, `; this host could not finish it \(.+\): nothing says the backup is damaged$`, err.Error())
	rec, err := testrestore.Load(context.Background(), bh)
	require.NoError(t, err)
	assert.Nil(t, rec, "nothing recorded")
	names, err := backupNames(context.Background(), "ks/0")
	require.NoError(t, err)
	assert.Equal(t, []string{name}, names, "nothing quarantined")
}
