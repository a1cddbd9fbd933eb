// Package engines lists the backup engines linked into vttablet and vtbackup. Importing it
// registers them in mysqlctl.BackupRestoreEngineMap (through the engine packages' init).
package engines

import (
	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// All backup engine plugins. Their flags are validated whatever the default engine is: a
// request may pick any engine (vtctldclient Backup --backup-engine). To link one in, import its package and add a line here.
var All = []plugin.Plugin{
	{Name: "fifo", RegisterFlags: fifobackupengine.RegisterFlags, ValidateFlags: fifobackupengine.ValidateFlags},
}
