package fifobackupengine

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// TestDataDirectoryTables: tables created with DATA DIRECTORY (InnoDB, and a
// partitioned one with one partition outside) on real MariaDB. The restore
// refuses to write outside the data directory until the operator allows the
// directory (the backup stays whole), then puts each .ibd where its .isl
// says, the tables equal the source, and the next backup and restore work
// (over the tablespaces the first restore placed).
func TestDataDirectoryTables(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 5})
	tabletDir := f.tb.Cnf.TabletDir()
	ext := filepath.Join(filepath.Dir(tabletDir), "external-tablespaces")
	require.NoError(t, os.MkdirAll(ext, 0o750))
	if st, err := os.Stat(tabletDir); err == nil {
		sys := st.Sys().(*syscall.Stat_t)
		require.NoError(t, os.Chown(ext, int(sys.Uid), int(sys.Gid)))
	}
	f.srv.Exec(t, fmt.Sprintf("CREATE TABLE sample.dd (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB DATA DIRECTORY='%s'", ext))
	f.srv.Exec(t, fmt.Sprintf("CREATE TABLE sample.ddp (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=InnoDB PARTITION BY RANGE (id) "+
		"(PARTITION p0 VALUES LESS THAN (50) DATA DIRECTORY='%s', PARTITION p1 VALUES LESS THAN MAXVALUE)", ext))
	for i := range 100 {
		f.srv.Exec(t, fmt.Sprintf("INSERT INTO sample.dd VALUES (%d, REPEAT('x', %d))", i, i))
		f.srv.Exec(t, fmt.Sprintf("INSERT INTO sample.ddp VALUES (%d, REPEAT('y', %d))", i, i))
	}
	f.static = mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes")
	external := []string{filepath.Join(ext, "sample/dd.ibd"), filepath.Join(ext, "sample/ddp#P#p0.ibd")}
	for _, p := range external {
		require.FileExists(t, p, "MariaDB put the tablespace outside the data directory")
	}

	cfg := testConfig(3, SourceStdout, zstdConfig())
	useEngine(t, cfg)
	require.NoError(t, f.backup(t, nil))

	// Not allowed: the restore fails naming the table, the path and the flag.
	_, err := f.restore(t, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sample/dd.ibd (dd.isl) lived at "+external[0])
	assert.Contains(t, err.Error(), "--fifo-backup-external-tablespace-dirs")

	cfg.ExternalTablespaceDirs = []string{ext}
	useEngine(t, cfg)
	for round := 1; round <= 2; round++ {
		_, err = f.restore(t, nil)
		require.NoError(t, err, "round %d", round)
		for _, p := range external {
			assert.FileExists(t, p, "round %d", round)
		}
		assert.NoFileExists(t, filepath.Join(f.tb.Cnf.DataDir, "sample/dd.ibd"), "round %d: the .ibd belongs where its .isl says", round)
		assert.FileExists(t, filepath.Join(f.tb.Cnf.DataDir, "sample/dd.isl"), "round %d", round)
		assert.Equal(t, f.static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"), "round %d: restored tables differ", round)
		require.NoError(t, f.backup(t, nil), "round %d: the next backup", round)
	}
}
