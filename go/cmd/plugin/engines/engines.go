// Package engines lists the backup engines linked into vttablet and vtbackup. Importing it
// registers them in mysqlctl.BackupRestoreEngineMap (through the engine packages' init).
package engines

import (
	"fmt"

	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
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
		return lanesFitSplitBudget()
	}
	return nil
}

// lanesFitSplitBudget checks at startup what the split storage would otherwise refuse when
// the first backup opens its lanes: every lane holds a filling part, so the memory budget
// must hold one part per lane.
func lanesFitSplitBudget() error {
	lanes := fifobackupengine.FlagConfig().Lanes
	if lanes == 0 {
		return nil // auto: sized to the budget at each backup
	}
	s := splitstorage.FlagConfig()
	if s.Validate() != nil {
		return nil // the split storage's own validation names its flag
	}
	if parts := s.MemoryBudget / s.PartSize; int64(lanes) > parts {
		return fmt.Errorf("invalid value \"%d\" for --fifo-backup-lanes: allowed values are 1..%d with --split-storage-memory-budget=%s and --split-storage-part-size=%s "+
			"(every lane holds a part, and the budget holds %d): lower the lanes, raise the budget or lower the part size",
			lanes, parts, flagvalue.FormatSize(s.MemoryBudget), flagvalue.FormatSize(s.PartSize), parts)
	}
	return nil
}
