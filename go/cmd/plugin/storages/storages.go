// Package storages lists the backup storages linked into vttablet, vtbackup and vtctld.
// Importing it registers them in backupstorage.BackupStorageMap (through the storage
// packages' init).
package storages

import (
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// All backup storage plugins. To link one in, import its package and add a line here.
var All = []plugin.Plugin{
	{Name: "split", RegisterFlags: splitstorage.RegisterFlags, ValidateFlags: splitstorage.ValidateFlags, InUse: using(splitstorage.Name)},
}

// using reports whether name is the configured --backup-storage-implementation.
func using(name string) func() bool {
	return func() bool { return backupstorage.BackupStorageImplementation == name }
}
