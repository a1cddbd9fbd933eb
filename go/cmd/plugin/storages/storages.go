// Package storages lists the backup storages linked into vttablet, vtbackup and vtctld.
// Importing it registers them in backupstorage.BackupStorageMap (through the storage
// packages' init).
package storages

import (
	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// All backup storage plugins. To link one in, import its package and add a line here.
var All = []plugin.Plugin{
	{Name: "split", RegisterFlags: splitstorage.RegisterFlags, ValidateFlags: splitstorage.ValidateFlags},
}
