package fifobackupengine

import (
	"context"
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/xbstream"
)

// restoreScope is what a restore restores: every file of its backups
// (wholeBackup), or some tables (*tableRestore, restore-table's path). The
// restore's spine calls it at each step instead of asking which it is.
type restoreScope interface {
	// frames sets up the extraction of one backup of the chain: it returns
	// the paths that must come out (nil: the lanes say), the stored bytes
	// to read and a line saying what is read.
	frames(ctx context.Context, c member, from *storedLanes, opts *xbstream.ExtractOptions) (want []string, toRead int64, what string, err error)
	// extracted checks what the extraction of one backup of the chain gave.
	extracted(c member, want []string, got map[string]int64) error
	// beforePrepare checks the extracted full backup before any prepare.
	beforePrepare(dir string, tool *backupTool, m *Manifest, prepareFlags string) error
	// exports: the last prepare exports the tables (--export).
	exports() bool
	// alongside: the chain's first delta may be extracted while its full
	// is (a table restore learns its tables' files from the full first).
	alongside() bool
	// prepared checks the prepared directory.
	prepared(dir string) error
}

var (
	_ restoreScope = wholeBackup{}
	_ restoreScope = (*tableRestore)(nil)
)

// wholeBackup restores every file: whole lanes, nothing more to check than
// the extraction and the prepare do.
type wholeBackup struct{}

func (wholeBackup) frames(_ context.Context, c member, _ *storedLanes, _ *xbstream.ExtractOptions) ([]string, int64, string, error) {
	m := c.m
	return nil, m.StoredBytes, fmt.Sprintf("%d lanes of %s (%d bytes)", len(m.Lanes), m.BackupName, m.RawBytes), nil
}

func (wholeBackup) extracted(member, []string, map[string]int64) error         { return nil }
func (wholeBackup) beforePrepare(string, *backupTool, *Manifest, string) error { return nil }
func (wholeBackup) exports() bool                                              { return false }
func (wholeBackup) alongside() bool                                            { return true }
func (wholeBackup) prepared(string) error                                      { return nil }

// tableRestore restores some tables (tables.go): only their files and the
// tool's, from only the frames that hold them where a lane index says,
// prepared with --export.
type tableRestore struct {
	subset tableSubset
	logger logutil.Logger
	// tables is what the chain's full backup holds of them.
	tables []*TableFiles
	// readStreamBytes is what the frames read hold, every backup of the chain.
	readStreamBytes int64
	// onTables, if set, is told the tables once they are known
	// (RestoreDirOptions.OnTables).
	onTables func([]TableFiles) error
	// dir is where the files go: its free space is checked against what
	// the frames hold before any is read.
	dir string
}

// beforePrepare refuses, on MySQL 8, encrypted tables whose keyring the
// prepare would not have (encrypted.go).
func (t *tableRestore) beforePrepare(dir string, tool *backupTool, m *Manifest, prepareFlags string) error {
	if tool.Flavor != FlavorXtrabackup || strings.Contains(m.MySQLVersion, "MariaDB") {
		return nil
	}
	return checkEncryptedTables(dir, t.tables, prepareFlags)
}

func (t *tableRestore) exports() bool { return true }

func (t *tableRestore) alongside() bool { return false }

func (t *tableRestore) prepared(dir string) error { return checkExported(dir, t.tables) }
