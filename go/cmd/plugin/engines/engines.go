// Package engines lists the backup engines linked into vttablet and vtbackup. Importing it
// registers them in mysqlctl.BackupRestoreEngineMap (through the engine packages' init).
package engines

import (
	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// All backup engine plugins. To link one in, import its package and add a line here.
var All = []plugin.Plugin{
	{Name: "fifo", RegisterFlags: fifobackupengine.RegisterFlags, ValidateFlags: validateFifo},
}

// validateFifo is the engine's own validation plus the one rule between the engine and the
// split storage, which only the command layer, linking both, can check.
func validateFifo(fs *pflag.FlagSet) error {
	if err := fifobackupengine.ValidateFlags(fs); err != nil {
		return err
	}
	if backupstorage.BackupStorageImplementation == splitstorage.Name && fifobackupengine.IsDefaultEngine(fs) {
		return lanesFitSplitSpool()
	}
	return nil
}

// lanesFitSplitSpool checks at startup what no backup could ever do: every lane fills a
// part in the split storage's spool, beside the backup's uploads, so an explicit lane count
// whose parts exceed the whole spool file system stops the process. Free space changes; it
// is checked when each backup starts.
func lanesFitSplitSpool() error {
	lanes := fifobackupengine.FlagConfig().Lanes
	if lanes == 0 {
		return nil // auto: sized to the spool's free space at each backup
	}
	s := splitstorage.FlagConfig()
	if s.Validate() != nil {
		return nil // the split storage's own validation names its flag
	}
	return s.SpoolCanHold(lanes, "--fifo-backup-lanes")
}
