// Package fifobackupengine is a Vitess BackupRestoreEngine, registered as
// "fifo", that takes hot physical backups with Percona XtraBackup or MariaDB's
// mariabackup and carries the xbstream through N parallel lanes (compress,
// then store), either from the tool's own FIFO streams (--fifo-streams) or
// by splitting its stdout at chunk boundaries, balanced by bytes. Restore
// reads all lanes in parallel, writes every chunk at its offset, prepares the
// files and moves them into place by rename.
package fifobackupengine

import (
	"vitess.io/vitess/go/vt/mysqlctl"

	tabletmanagerdatapb "vitess.io/vitess/go/vt/proto/tabletmanagerdata"
)

const engineName = "fifo"

// Engine is the fifo backup engine.
type Engine struct {
	// config returns the configuration for one backup or restore; the
	// registered engine reads the flags, tests give their own.
	config func() Config
}

// New returns an engine with a fixed configuration (for tests and tools).
func New(cfg Config) *Engine {
	return &Engine{config: func() Config { return cfg }}
}

func init() {
	mysqlctl.BackupRestoreEngineMap[engineName] = &Engine{config: currentConfig}
}

// Name is the engine's name in --backup-engine-implementation and in the
// MANIFEST's BackupMethod.
func (e *Engine) Name() string { return engineName }

// ShouldDrainForBackup is false: the backup is hot, the tablet keeps serving.
func (e *Engine) ShouldDrainForBackup(*tabletmanagerdatapb.BackupRequest) bool { return false }

// ShouldStartMySQLAfterRestore is true: Vitess starts mysqld (and runs
// mysql_upgrade) once the prepared files are in place.
func (e *Engine) ShouldStartMySQLAfterRestore() bool { return true }

var _ mysqlctl.BackupRestoreEngine = (*Engine)(nil)
