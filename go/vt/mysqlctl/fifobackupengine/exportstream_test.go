package fifobackupengine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// TestExportIsAStockXbstream: a backup exported as one stream (split lanes
// from stdout, and lanes dealt from the tool's FIFO streams) is extracted by
// MariaDB's own `mbstream -x` into exactly the tree the restore's extraction
// writes from the lanes; a damaged lane fails the export naming the backup
// and the lane.
func TestExportIsAStockXbstream(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 5, BigTableBytes: 16 << 20})
	fifo := testConfig(4, SourceFIFO, zstdConfig())
	fifo.ToolPath, fifo.FIFOStreams = standinPath, 3
	for name, cfg := range map[string]Config{
		"stdout/3-lanes/zstd":             testConfig(3, SourceStdout, zstdConfig()),
		"fifo-stand-in/3-streams-4-lanes": fifo,
	} {
		t.Run(name, func(t *testing.T) {
			useEngine(t, cfg)
			require.NoError(t, f.backup(t, nil))
			bh, m := f.latestBackup(t)

			var stream bytes.Buffer
			n, err := Export(context.Background(), bh, &stream, ExportOptions{Logger: logutil.NewMemoryLogger()})
			require.NoError(t, err)
			assert.Equal(t, int64(stream.Len()), n)
			byMbstream := filepath.Join(t.TempDir(), "mbstream")
			assert.Empty(t, mariadbtest.MbstreamExtract(t, byMbstream, &stream), "mbstream -x reported a problem")

			byLanes := filepath.Join(t.TempDir(), "lanes")
			lanes := (&storedLanes{bh: bh, m: m, stats: newPhaseStats(nil), logger: logutil.NewMemoryLogger()}).lanes(context.Background())
			_, err = xbstream.Extract(context.Background(), byLanes, lanes, xbstream.ExtractOptions{})
			require.NoError(t, err)
			files := mariadbtest.TreesEqual(t, byLanes, byMbstream)
			t.Logf("%s: exported %d bytes from %d lanes; mbstream -x and the lanes give the same %d entries", name, n, len(m.Lanes), files)
		})
	}

	t.Run("a damaged lane fails naming backup and lane", func(t *testing.T) {
		f.useFileStorage(t)
		useEngine(t, testConfig(3, SourceStdout, CompressionConfig{}))
		require.NoError(t, f.backup(t, nil))
		bhs := f.backupHandles(t)
		bh := bhs[len(bhs)-1]
		lane := filepath.Join(f.root, testKeyspace, testShard, bh.Name(), "lane-002.xbstream")
		data, err := os.ReadFile(lane)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(lane, data[:len(data)/2], 0o640))
		_, err = Export(context.Background(), bh, &bytes.Buffer{}, ExportOptions{Logger: logutil.NewMemoryLogger()})
		require.Error(t, err)
		assert.Contains(t, err.Error(), bh.Name())
		assert.Contains(t, err.Error(), "lane 2")
	})
}
