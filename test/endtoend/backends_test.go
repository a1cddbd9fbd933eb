package endtoend

import (
	"path/filepath"
	"testing"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"

	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// storageBackend is one storage configuration the flows run against.
type storageBackend struct {
	name string
	impl string // --backup-storage-implementation, also its stats label
	// prepare returns the cluster's PrepareStorage hook (servers are started there).
	prepare func(t *testing.T) func(c *cluster.Cluster) (cluster.Storage, error)
	// open opens the same storage inside the test process, to read manifests.
	open func(c *cluster.Cluster) (backupstorage.BackupStorage, error)
}

// storageBackends lists the backends under test.
// >>> split storage: local disk, S3 (versitygw), GCS (fake-gcs-server) go here once linked. <<<
func storageBackends() []storageBackend {
	return []storageBackend{
		{name: "file", impl: "file", prepare: func(t *testing.T) func(c *cluster.Cluster) (cluster.Storage, error) {
			return func(c *cluster.Cluster) (cluster.Storage, error) {
				dir := filepath.Join(c.Root, "backups")
				return cluster.FileStorage(dir), c.MkdirOwned(dir)
			}
		}, open: func(c *cluster.Cluster) (backupstorage.BackupStorage, error) {
			filebackupstorage.FileBackupStorageRoot = filepath.Join(c.Root, "backups")
			return backupstorage.BackupStorageMap["file"], nil
		}},
	}
}

// engineUnderTest is the engine the flows exercise: fifo once it is linked in, Vitess's
// xtrabackup engine over mariabackup until then.
func engineUnderTest() string { return "xtrabackup" }

// otherEngine is a different default engine for the per-request --backup-engine check.
func otherEngine(engine string) string {
	if engine == "xtrabackup" {
		return "builtin"
	}
	return "xtrabackup"
}

// engineEmitsStats: Vitess's xtrabackup engine reports no per-phase stats (only storage ones).
func engineEmitsStats(engine string) bool { return engine != "xtrabackup" }

// engineFor returns the tablet/vtbackup flags with name as the default engine. The flags
// of every engine are always given, so a per-request --backup-engine can pick another one.
func engineFor(c *cluster.Cluster, name string) cluster.Engine {
	e := cluster.Engine{Name: name}
	{
		e.Flags = []string{
			"--xtrabackup-root-path=" + c.XtrabackupRoot,
			"--xtrabackup-user=vt_dba",
			"--xtrabackup-stream-mode=xbstream",
			"--xtrabackup-stripes=2",
		}
	}
	return e
}
