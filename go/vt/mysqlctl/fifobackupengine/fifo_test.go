package fifobackupengine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// latestManifest reads the engine's MANIFEST of the newest backup.
func (f *fixture) latestManifest(t testing.TB) *Manifest {
	_, m := f.latestBackup(t)
	return m
}

// latestBackup is the newest backup and its engine's MANIFEST.
func (f *fixture) latestBackup(t testing.TB) (backupstorage.BackupHandle, *Manifest) {
	bhs := f.backupHandles(t)
	require.NotEmpty(t, bhs)
	m, err := ReadManifest(context.Background(), bhs[len(bhs)-1])
	require.NoError(t, err)
	return bhs[len(bhs)-1], m
}

// laneSkew is max lane / mean lane of the uncompressed lane bytes.
func laneSkew(m *Manifest) float64 {
	var total, most int64
	for _, l := range m.Lanes {
		total += l.RawBytes
		most = max(most, l.RawBytes)
	}
	return float64(most) / (float64(total) / float64(len(m.Lanes)))
}

// assertLanesBalanced checks the splitter's promise: no lane holds more than
// xbstream.MaxPassingSpread beyond the smallest (a busy lane is passed over
// within 1/64 of the lanes' bytes or a piece).
func assertLanesBalanced(t *testing.T, m *Manifest) {
	t.Helper()
	least, most := m.Lanes[0].RawBytes, int64(0)
	for _, l := range m.Lanes {
		least, most = min(least, l.RawBytes), max(most, l.RawBytes)
	}
	assert.LessOrEqual(t, most-least, xbstream.MaxPassingSpread(least, lanePieceSize), "lanes from %d to %d bytes", least, most)
}

// TestFIFOProtocol runs the engine against the stand-in, which follows
// Percona XtraBackup's FIFO datasink (see go/testutil/xtrabackupstandin for
// the PXB source each point follows), over real mariabackup data: every point
// of the protocol the engine depends on, and the balance of the lanes
// whatever the tool deals to its streams.
func TestFIFOProtocol(t *testing.T) {
	// Skewed: one table holds about half the bytes, beside a thousand small ones.
	f := newFixture(t, mariadbtest.Options{Tables: 1000, RowsPerTable: 5, BigTableBytes: 96 << 20, SkipOtherEngines: true})
	fifoCfg := func(streams, lanes int) Config {
		c := testConfig(lanes, SourceFIFO, zstdConfig())
		c.ToolPath, c.FIFOStreams = standinPath, streams
		return c
	}

	// ds_xbstream.cc, xbstream_open: files are dealt to the streams
	// round-robin at open, so the stream that gets big.ibd carries about half;
	// the engine deals their chunks to the lanes by bytes.
	for _, nm := range [][2]int{{4, 4}, {8, 8}, {8, 4}} {
		n, m := nm[0], nm[1]
		t.Run(fmt.Sprintf("balance/%d-streams/%d-lanes", n, m), func(t *testing.T) {
			var man *Manifest
			if n == 8 && m == 4 {
				f.roundTrip(t, fifoCfg(n, m)) // restored and compared table by table
				man = f.latestManifest(t)
			} else {
				useEngine(t, fifoCfg(n, m))
				require.NoError(t, f.backup(t, nil))
				man = f.latestManifest(t)
			}
			require.Equal(t, SourceFIFO, man.Source)
			require.Equal(t, n, man.FIFOStreams)
			require.Len(t, man.StreamBytes, n)
			require.Len(t, man.Lanes, m)
			var total, most int64
			for _, b := range man.StreamBytes {
				total += b
				most = max(most, b)
			}
			t.Logf("streams %v (max/mean %.2f) -> lanes max/mean %.4f", man.StreamBytes, float64(most)/(float64(total)/float64(n)), laneSkew(man))
			assertLanesBalanced(t, man)
		})
	}
	for _, m := range []int{4, 8} {
		t.Run(fmt.Sprintf("balance/stdout/%d-lanes", m), func(t *testing.T) {
			useEngine(t, testConfig(m, SourceStdout, zstdConfig()))
			require.NoError(t, f.backup(t, nil))
			man := f.latestManifest(t)
			t.Logf("stdout -> lanes max/mean %.4f", laneSkew(man))
			assertLanesBalanced(t, man)
		})
	}

	// xtrabackup.cc: the FIFOs appear only after the tool has connected and
	// taken LOCK INSTANCE FOR BACKUP; a lock wait longer than --fifo-timeout
	// must not fail the backup (the timeout is the tool's, for its opens).
	t.Run("lock wait longer than the fifo timeout", func(t *testing.T) {
		t.Setenv("XTRABACKUP_STANDIN_LOCK_WAIT", "4s")
		cfg := fifoCfg(3, 2)
		cfg.FIFOTimeout = 2 * time.Second
		f.roundTrip(t, cfg)
	})

	// file_utils.cc, open_fifo_for_write_with_timeout: one control byte before
	// the stream. 'X' (the stand-in's default, used above) is the first byte of
	// the chunk magic; a stream without the byte loses nothing either.
	t.Run("no control byte", func(t *testing.T) {
		t.Setenv("XTRABACKUP_STANDIN_CONTROL_BYTE", "none")
		f.roundTrip(t, fifoCfg(2, 2))
	})
	t.Run("a stream that is not control byte then chunk fails the backup", func(t *testing.T) {
		t.Setenv("XTRABACKUP_STANDIN_CONTROL_BYTE", "ab")
		useEngine(t, fifoCfg(2, 2))
		before := len(f.listBackups(t))
		err := f.backup(t, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "does not start the way Percona XtraBackup's FIFO streams do")
		assert.Len(t, f.listBackups(t), before)
	})
	t.Run("tool fails before creating its FIFOs", func(t *testing.T) {
		t.Setenv("XTRABACKUP_STANDIN_FAIL_LOCK", "1")
		useEngine(t, fifoCfg(3, 3))
		before := len(f.listBackups(t))
		start := time.Now()
		err := f.backup(t, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "LOCK INSTANCE FOR BACKUP")
		assert.Less(t, time.Since(start), time.Minute)
		assert.Len(t, f.listBackups(t), before)
	})

	// ds_fifo.cc, fifo_init and cleanup_on_error: when the tool fails opening
	// a FIFO it closes and unlinks every one and exits. The engine's readers
	// of the FIFOs it never opened (or unlinked) stop at its exit, and the
	// backup fails naming the tool's last error, its FIFO directory removed.
	for _, k := range []string{"0", "1", "2"} {
		t.Run("tool fails opening FIFO "+k, func(t *testing.T) {
			t.Setenv("XTRABACKUP_STANDIN_FAIL_OPEN", k)
			cfg := fifoCfg(3, 2)
			cfg.FIFODir = t.TempDir()
			useEngine(t, cfg)
			before := len(f.listBackups(t))
			start := time.Now()
			err := f.backup(t, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "exited with an error")
			assert.Contains(t, err.Error(), "timeout waiting 30s for a reader on FIFO")
			assert.Less(t, time.Since(start), time.Minute, "the backup ends with the tool, never hangs")
			assert.Len(t, f.listBackups(t), before)
			left, _ := os.ReadDir(cfg.FIFODir)
			assert.Empty(t, left, "the FIFO directory is removed")
		})
	}

	// Version detection reads the build number: 8.0.33-27 has no FIFO streams.
	t.Run("8.0.33-27 streams to stdout", func(t *testing.T) {
		t.Setenv("XTRABACKUP_STANDIN_VERSION", "8.0.33-27")
		cfg := fifoCfg(3, 3)
		cfg.Source = SourceAuto
		useEngine(t, cfg)
		require.NoError(t, f.backup(t, nil))
		m := f.latestManifest(t)
		assert.Equal(t, SourceStdout, m.Source)
		assert.Equal(t, manifestFormatVersion, m.FormatVersion, "a new MANIFEST records its format")
		assert.Equal(t, int64(16384), m.InnoDBPageSize, "and the server's innodb_page_size")
		cfg.Source = SourceFIFO
		useEngine(t, cfg)
		err := f.backup(t, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "8.0.33-28")
	})

	// xbstream_write.cc: a chunk is as large as --read-buffer-size; a 32MiB read
	// buffer gives 32MiB chunks that the backup parses and deals in pieces.
	t.Run("32MiB read buffer", func(t *testing.T) {
		args := filepath.Join(t.TempDir(), "args")
		t.Setenv("XTRABACKUP_STANDIN_ARGS_TO", args)
		cfg := fifoCfg(4, 2)
		cfg.Compression = CompressionConfig{}
		cfg.ReadBufferSize = 32 << 20
		cfg.Parallel = 2
		m := f.roundTrip(t, cfg)
		require.NotNil(t, m)
		got, err := os.ReadFile(args)
		require.NoError(t, err)
		assert.Contains(t, string(got), "--parallel=4", "--parallel raised to --fifo-streams")
		// The tool's 32MiB chunks (the stand-in's own test pins their size) were
		// parsed whole and dealt to the lanes in pieces.
		assert.Equal(t, lanePieceSize, f.largestChunk(t, f.latestManifest(t)))
	})

	// The one-level directory: a missing --fifo-backup-fifo-dir is refused before the tool runs.
	t.Run("fifo dir must exist", func(t *testing.T) {
		cfg := fifoCfg(2, 2)
		cfg.FIFODir = filepath.Join(t.TempDir(), "missing")
		useEngine(t, cfg)
		err := f.backup(t, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--fifo-backup-fifo-dir")
	})

	// --fifo-backup-fifo-dir may be the tablet's tmp dir, the parent of the
	// backup's work directory: the backup runs there and leaves it as it was
	// (on 2a7a9fd every such backup failed, its FIFO directory named as its
	// work directory).
	t.Run("fifo dir is the tablet's tmp dir", func(t *testing.T) {
		cfg := fifoCfg(2, 2)
		cfg.FIFODir = f.tb.Cnf.TmpDir
		useEngine(t, cfg)
		before, err := os.ReadDir(cfg.FIFODir)
		require.NoError(t, err)
		require.NoError(t, f.backup(t, nil))
		after, err := os.ReadDir(cfg.FIFODir)
		require.NoError(t, err)
		assert.Equal(t, before, after)
	})
}

// largestChunk reads every lane of the newest backup (stored uncompressed)
// and returns the largest chunk payload.
func (f *fixture) largestChunk(t testing.TB, man *Manifest) int {
	ctx := context.Background()
	bhs := f.backupHandles(t)
	require.NotEmpty(t, bhs)
	bh := bhs[len(bhs)-1]
	largest := 0
	for _, l := range man.Lanes {
		rc, err := bh.ReadFile(ctx, l.File)
		require.NoError(t, err)
		r := xbstream.NewReader(rc)
		for {
			c, err := r.Next()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			largest = max(largest, len(c.Payload))
		}
		rc.Close()
	}
	return largest
}
