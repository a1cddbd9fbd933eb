package fifobackupengine

import (
	"github.com/dustin/go-humanize"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/hostmem"
)

// UseMemoryAuto is Config.UseMemory for a prepare sized to the backup and
// the host.
const UseMemoryAuto = flagvalue.AutoSizeValue

// The sizes of an auto-sized prepare. It takes what the redo to apply
// needs (its parsed records and the pages they touch: twice the redo),
// never less than the floor, and never more than the cap or half of what
// the host has available: a buffer pool far past the need made
// mariabackup's prepare slower, not faster
// (docs/benchmarks/prepare-memory.md). Where the redo is not known (a
// backup of Vitess's xtrabackup engine), the engine's former fixed
// default. A host with less than twice the floor available keeps the
// tool's own default (mariabackup 100MiB, Percona 128MiB).
const (
	minAutoPrepareMemory     = 128 << 20
	maxAutoPrepareMemory     = 4 << 30
	unknownRedoPrepareMemory = 512 << 20
)

// prepareMemory is the --use-memory of a prepare under cfg (0: the tool's
// default) that applies redo bytes of redo (-1: not known): the configured
// size, or for UseMemoryAuto the need within what available reports (the
// host's MemAvailable and its cgroup's room, halved: the rest is left to
// what else runs there, so nothing swaps). It says what it chose and why.
func prepareMemory(cfg *Config, redo int64, available func() (int64, string, error), logger logutil.Logger) int64 {
	if cfg.UseMemory != UseMemoryAuto {
		return cfg.UseMemory
	}
	avail, by, err := available()
	switch {
	case err != nil:
		logger.Warningf("fifo restore: the prepare takes the tool's default memory: what this host has available is not known (%v); "+
			"set --fifo-backup-use-memory", err)
		return 0
	case avail < 2*minAutoPrepareMemory:
		logger.Warningf("fifo restore: the prepare takes the tool's default memory: only %s is available (%s)", humanize.IBytes(uint64(avail)), by)
		return 0
	}
	need, why := int64(unknownRedoPrepareMemory), "the redo to apply is not known"
	if redo >= 0 {
		need, why = max(2*redo, minAutoPrepareMemory), "twice the "+humanize.IBytes(uint64(redo))+" of redo to apply"
	}
	use := min(need, maxAutoPrepareMemory, avail/2)
	logger.Infof("fifo restore: the prepare takes %s (--fifo-backup-use-memory=auto: %s, at most %s and half of the %s available, %s)",
		humanize.IBytes(uint64(use)), why, humanize.IBytes(maxAutoPrepareMemory), humanize.IBytes(uint64(avail)), by)
	return use
}

// chainRedo is the most redo one prepare of the chain applies (-1: not
// known for one of them).
func chainRedo(chain []member) int64 {
	most := int64(-1)
	for i, c := range chain {
		n, ok := c.m.LSN.Redo()
		if !ok {
			return -1
		}
		if i == 0 || n > most {
			most = n
		}
	}
	return most
}

// hostAvailable is what prepareMemory sizes to on a real host.
var hostAvailable = hostmem.Available
