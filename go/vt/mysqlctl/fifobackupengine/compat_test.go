package fifobackupengine

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// TestRestoresBackupOfEarlierVersion: a FIFO-source backup taken by the
// engine before the tool's streams were dealt to the lanes by bytes (commit
// 3baf113: one lane per FIFO, lanes of 4, 86, 4.5 and 4.3 MB, no FIFOStreams
// or StreamBytes in its MANIFEST; written by the stand-in over mariabackup
// into Vitess's file storage) restores with this version, every table equal
// to its source's checksums recorded then.
func TestRestoresBackupOfEarlierVersion(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 201, RowsPerTable: 1, SkipOtherEngines: true})
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS("testdata/backup-3baf113-fifo")))
	var want map[string]string
	b, err := os.ReadFile("testdata/backup-3baf113-fifo/checksums.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &want))
	f.storage, f.root = "file", root
	filebackupstorage.FileBackupStorageRoot = root

	cfg := testConfig(2, SourceStdout, zstdConfig())
	cfg.ToolPath = standinPath // the backup says its tool is xtrabackup
	useEngine(t, cfg)
	m, err := f.restore(t, nil)
	require.NoError(t, err)
	assert.Equal(t, "2026-11-23.050519.zone1-0000004989", m.BackupName)
	assert.Equal(t, want, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"), "restored tables differ from the source's")
}
