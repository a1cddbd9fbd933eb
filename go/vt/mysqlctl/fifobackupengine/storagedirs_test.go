package fifobackupengine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// TestBackupsInsideTheTabletsDirectoriesAreRefused: a split storage whose
// root a restore of this tablet would clear (inside its data directory,
// named through a link from there, or a link that leads there) takes no
// backup, and a restore from it is refused before mysqld stops or a file
// goes: the restore would have deleted every backup there with the old
// files, the one it restores included (real MariaDB and mariabackup).
func TestBackupsInsideTheTabletsDirectoriesAreRefused(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 5})
	useEngine(t, testConfig(2, SourceStdout, zstdConfig()))
	require.NoError(t, f.backup(t, nil))
	outside, cfg := f.root, f.split
	names := f.listBackups(t)
	require.Len(t, names, 1)

	dataDir := f.tb.Cnf.DataDir
	inside := filepath.Join(dataDir, "backups")
	require.NoError(t, os.CopyFS(inside, os.DirFS(outside)))
	linkInside := filepath.Join(f.tb.Cnf.InnodbLogGroupHomeDir, "backups")
	require.NoError(t, os.Symlink(outside, linkInside))
	linkOutside := filepath.Join(t.TempDir(), "backups")
	require.NoError(t, os.Symlink(inside, linkOutside))
	for _, c := range []struct{ name, root, cleared string }{
		{"inside the data directory", inside, dataDir},
		{"a link in the InnoDB log directory", linkInside, f.tb.Cnf.InnodbLogGroupHomeDir},
		{"a link to the data directory", linkOutside, dataDir},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg.File.Root = c.root
			f.useSplitConfig(t, cfg, c.root)
			refusal := "refused: the backup storage keeps its backups in " + c.root + ", inside " + c.cleared + ", which a restore of " +
				"this tablet clears"
			err := f.backup(t, nil)
			require.ErrorContains(t, err, refusal)
			assert.Equal(t, names, f.listBackups(t), "no backup taken")

			_, err = f.restore(t, nil)
			require.ErrorContains(t, err, refusal)
			assert.Equal(t, f.static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"), "the tablet's server still serves its tables")
			assert.Equal(t, names, f.listBackups(t), "the backups are all there")
			assert.NoFileExists(t, filepath.Join(f.tb.Cnf.TabletDir(), "restore_in_progress"))
		})
	}
}
