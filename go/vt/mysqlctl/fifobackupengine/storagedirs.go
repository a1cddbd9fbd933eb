package fifobackupengine

import (
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/pathin"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/backuphandle"
)

// storageDirs are the directories of this host that bh's storage keeps its
// backups in: the split storage's file root (backuphandle.LocalDirs),
// Vitess's file storage's root; none for a store elsewhere.
func storageDirs(bh backupstorage.BackupHandle) []string {
	switch h := bh.(type) {
	case backuphandle.LocalDirs:
		return h.LocalDirs()
	case *filebackupstorage.FileBackupHandle:
		if filebackupstorage.FileBackupStorageRoot != "" {
			return []string{filebackupstorage.FileBackupStorageRoot}
		}
	}
	return nil
}

// checkStorageOutside refuses a backup or a restore whose storage keeps its
// backups in a path a tablet's restore clears (clearedPaths, as Vitess's own
// restore does: the data, InnoDB and log directories): the next restore
// would delete every backup there, the one it restores included. Checked
// before anything is written or deleted; paths are compared as named and
// as they resolve through symbolic links (pathin.Dir).
func checkStorageOutside(cnf *mysqlctl.Mycnf, bh backupstorage.BackupHandle) error {
	dirs := storageDirs(bh)
	if len(dirs) == 0 {
		return nil
	}
	cleared, _, err := clearedPaths(cnf)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		for _, c := range cleared {
			if pathin.Dir(d, c) {
				return errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "refused: the backup storage keeps its backups in %s, inside %s, which a "+
					"restore of this tablet clears (Vitess's contract: the data, InnoDB and log directories and the binary and relay logs): "+
					"every backup there, the one restored included, would be deleted with the old files; give the storage a root outside "+
					"the tablet's data and log directories (--split-storage-root, --file-backup-storage-root)", d, c)
			}
		}
	}
	return nil
}
