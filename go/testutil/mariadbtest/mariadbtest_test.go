package mariadbtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	code := m.Run()
	CleanupCache()
	os.Exit(code)
}

func TestStartLoadBackupExtract(t *testing.T) {
	srv := Start(t)
	require.NotZero(t, srv.PID())
	assert.Contains(t, srv.Query(t, "SELECT VERSION()"), "MariaDB")

	LoadSampleData(t, srv, Options{Tables: 10, BigTableBytes: 8 << 20})
	assert.Equal(t, "10", srv.Query(t, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='sample' AND table_name LIKE 't0%'"))
	assert.Equal(t, "Aria", srv.Query(t, "SELECT engine FROM information_schema.tables WHERE table_schema='sample' AND table_name='aria_t'"))
	fi, err := os.Stat(filepath.Join(srv.DataDir, "sample", "big.ibd"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, fi.Size(), int64(8<<20))

	srv.Restart()
	assert.Equal(t, "20", srv.Query(t, "SELECT COUNT(*) FROM sample.t0003"))

	stream := filepath.Join(t.TempDir(), "s.xb")
	n := BackupToFile(t, srv, stream)
	assert.Greater(t, n, int64(8<<20))

	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	for _, d := range []string{a, b} {
		f, err := os.Open(stream)
		require.NoError(t, err)
		MbstreamExtract(t, d, f)
		f.Close()
	}
	n2 := TreesEqual(t, a, b)
	assert.Greater(t, n2, 10)
	_, err = os.Stat(filepath.Join(a, "sample", "big.ibd"))
	require.NoError(t, err)

	// TreesEqual must be able to fail.
	require.NoError(t, os.WriteFile(filepath.Join(b, "extra"), []byte("x"), 0o640))
	assert.NotEmpty(t, TreeDiff(Tree(t, a), Tree(t, b)))
}
