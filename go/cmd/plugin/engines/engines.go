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

// All backup engine plugins. The engine's own flags are validated whatever the default
// engine is: a request may pick any engine (vtctldclient Backup --backup-engine). Checks
// that involve stock flags run only where fifo is the default engine, so a binary that
// does not use it starts as a stock one would. To link one in, import its package and
// add a line here.
var All = []plugin.Plugin{
	{Name: "fifo", RegisterFlags: fifobackupengine.RegisterFlags, ValidateFlags: fifobackupengine.ValidateFlags, UseFlagSet: fifobackupengine.UseFlagSet},
	{Name: "fifo compression", UseFlagSet: defaultEngine.use, InUse: defaultEngine.isFifo, ValidateFlags: fifobackupengine.ValidateCompressionFlags},
	{Name: "fifo with split storage", UseFlagSet: defaultEngine.use, InUse: fifoWithSplit, ValidateFlags: lanesFitSplitBudget},
}

// defaultEngine reads --backup-engine-implementation from the binary's flag set.
var defaultEngine = &engineFlag{}

type engineFlag struct{ fs *pflag.FlagSet }

func (e *engineFlag) use(fs *pflag.FlagSet) { e.fs = fs }

func (e *engineFlag) isFifo() bool {
	if e.fs == nil {
		return false
	}
	f := e.fs.Lookup("backup-engine-implementation")
	return f != nil && f.Value.String() == "fifo"
}

// fifoWithSplit: the default engine is fifo and the storage is split.
func fifoWithSplit() bool {
	return backupstorage.BackupStorageImplementation == splitstorage.Name && defaultEngine.isFifo()
}

// lanesFitSplitBudget checks at startup what the split storage would otherwise refuse when
// the first backup opens its lanes: every lane holds a filling part, so the memory budget
// must hold one part per lane.
func lanesFitSplitBudget() error {
	lanes := fifobackupengine.FlagConfig().Lanes
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
