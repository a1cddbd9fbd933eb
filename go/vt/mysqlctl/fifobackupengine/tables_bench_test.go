package fifobackupengine

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/testutil/benchdata"
	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// BenchmarkFrames measures what seekable lanes cost and give: for each
// frame size (0: one frame per lane, as before lanes were seekable), the
// backup's and a full restore's wall and CPU seconds and stored bytes, and
// what a table restore of one small table reads. Run it with
//
//	FIFO_BENCH_DATA_MB=1024 FIFO_BENCH_FRAME_MB=0,1,8 FIFO_BENCH_REPEAT=3 \
//	  go test -run '^$' -bench Frames -benchtime 1x -timeout 60m ./go/vt/mysqlctl/fifobackupengine/
//
// Runs of the frame sizes alternate, each from synced disks, and each run's
// backup and table restore are removed before the next, so that neither
// disk writeback nor a filling disk drifts into later runs. The table
// prints medians, and the median of each run's ratio to the run without
// frames of the same repeat (pairs taken side by side cancel slower drift;
// run both orders of FIFO_BENCH_FRAME_MB to cancel the order's effect).
func BenchmarkFrames(b *testing.B) {
	dataMB := envInt("FIFO_BENCH_DATA_MB", 512)
	repeat := envInt("FIFO_BENCH_REPEAT", 3)
	lanes := envInt("FIFO_BENCH_LANES", 2)
	comp := envString("FIFO_BENCH_COMPRESSION", mysqlctl.ZstdCompressor)
	sizes := envInts(b, "FIFO_BENCH_FRAME_MB", "0,1,8")
	f := newFixture(b, mariadbtest.Options{Tables: 200})
	_, err := benchdata.Load(context.Background(), f.srv.DB(), benchdata.Options{Shape: benchdata.Giant, Bytes: int64(dataMB) << 20, Seed: 1,
		DataDir: f.tb.Cnf.DataDir, Log: b.Logf})
	require.NoError(b, err)
	cfg := testConfig(lanes, SourceStdout, CompressionConfig{Enabled: true, Engine: comp, Level: 1, BlockSize: 250000, Blocks: 2})
	cfg.Progress = 0
	old := frameSize
	b.Cleanup(func() { frameSize = old })

	type row struct{ bw, bc, rw, rc, stored, tw, read, readRaw []float64 }
	rows := map[int]*row{}
	for range repeat {
		for _, mb := range sizes {
			frameSize = int64(mb) << 20
			if mb == 0 {
				frameSize = math.MaxInt64
			}
			r := rows[mb]
			if r == nil {
				r = &row{}
				rows[mb] = r
			}
			syscall.Sync()
			timed := f.timedRoundTrip(b, engineName, cfg, nil)
			r.bw, r.bc = append(r.bw, timed.backup.wall.Seconds()), append(r.bc, timed.backup.cpu.Seconds())
			r.rw, r.rc = append(r.rw, timed.restore.wall.Seconds()), append(r.rc, timed.restore.cpu.Seconds())
			bhs := f.backupHandles(b)
			bh := bhs[len(bhs)-1]
			m, err := ReadManifest(context.Background(), bh)
			require.NoError(b, err)
			r.stored = append(r.stored, float64(m.StoredBytes))
			ps, _ := ParseTablePatterns([]string{"bench.t0050"})
			tables := filepath.Join(b.TempDir(), "t")
			start := time.Now()
			rep, err := RestoreToDir(context.Background(), bh, tables, RestoreDirOptions{Config: cfg, Prepare: true, Tables: ps, Logger: logutil.NewMemoryLogger()})
			require.NoError(b, err)
			r.tw = append(r.tw, time.Since(start).Seconds())
			r.read, r.readRaw = append(r.read, float64(rep.ReadBytes)), append(r.readRaw, float64(rep.ReadStreamBytes))
			require.NoError(b, os.RemoveAll(tables))
			f.removeBackups(b)
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n%d MiB of benchdata shape giant (one table of 80%%, 100 small ones), %d lanes, %s level 1, split storage on local disk, "+
		"medians of %d\n", dataMB, lanes, comp, repeat)
	fmt.Fprintf(&out, "%-8s %9s %9s %10s %10s %12s %13s %15s %15s\n", "frame", "backup s", "cpu s", "restore s", "cpu s", "stored MiB", "1 table s",
		"read MiB", "stream MiB")
	for _, mb := range sizes {
		r := rows[mb]
		name := fmt.Sprintf("%d MiB", mb)
		if mb == 0 {
			name = "none"
		}
		fmt.Fprintf(&out, "%-8s %9.2f %9.2f %10.2f %10.2f %12.1f %13.2f %15.1f %15.1f\n", name, median(r.bw), median(r.bc), median(r.rw), median(r.rc),
			median(r.stored)/(1<<20), median(r.tw), median(r.read)/(1<<20), median(r.readRaw)/(1<<20))
	}
	if none := rows[0]; none != nil {
		fmt.Fprintf(&out, "\nmedian of each run's ratio to the run without frames of the same repeat:\n%-8s %9s %9s %10s %10s\n", "frame", "backup", "cpu",
			"restore", "cpu")
		for _, mb := range sizes {
			if r := rows[mb]; mb != 0 {
				fmt.Fprintf(&out, "%-8s %9.3f %9.3f %10.3f %10.3f\n", fmt.Sprintf("%d MiB", mb),
					pairedRatio(r.bw, none.bw), pairedRatio(r.bc, none.bc), pairedRatio(r.rw, none.rw), pairedRatio(r.rc, none.rc))
			}
		}
	}
	b.Log(out.String())
	fmt.Print(out.String())
}

// pairedRatio is the median of a[i]/base[i].
func pairedRatio(a, base []float64) float64 {
	var ratios []float64
	for i := range min(len(a), len(base)) {
		ratios = append(ratios, a[i]/base[i])
	}
	return median(ratios)
}

// BenchmarkTableRestoreS3 is the check of a table restore: a backup
// of FIFO_BENCH_DATA_MB (default 4096) of benchdata shape giant on the split
// storage on S3 (versitygw on 127.0.0.1, behind a proxy that counts the
// bytes it serves), then a table restore of one small table and a full
// restore (both prepared), each FIFO_BENCH_REPEAT times alternating: bytes
// downloaded, counted on the wire, against the backup's stored size, and
// wall times. Run it with
//
//	FIFO_BENCH_DATA_MB=4096 FIFO_BENCH_REPEAT=3 go test -run '^$' -bench TableRestoreS3 \
//	  -benchtime 1x -timeout 60m ./go/vt/mysqlctl/fifobackupengine/
func BenchmarkTableRestoreS3(b *testing.B) {
	dataMB := envInt("FIFO_BENCH_DATA_MB", 4096)
	repeat := envInt("FIFO_BENCH_REPEAT", 3)
	f := newFixture(b, mariadbtest.Options{Tables: 200})
	_, err := benchdata.Load(context.Background(), f.srv.DB(), benchdata.Options{Shape: benchdata.Giant, Bytes: int64(dataMB) << 20, Seed: 1,
		DataDir: f.tb.Cnf.DataDir, Log: b.Logf})
	require.NoError(b, err)
	base := splitstoragetest.StartS3(b)
	proxy := splitstoragetest.NewFaultProxy(b, base.Addr)
	srv := base.WithProxy(proxy)
	srv.Setenv(b)
	scfg := srv.Config
	scfg.PartSize = 64 << 20
	f.useSplitConfig(b, scfg, srv.Dir)
	cfg := testConfig(envInt("FIFO_BENCH_LANES", 2), SourceStdout, zstdConfig())
	cfg.Progress = 0
	useEngine(b, cfg)
	require.NoError(b, f.backup(b, nil))
	bhs := f.backupHandles(b)
	bh := bhs[len(bhs)-1]
	m, err := ReadManifest(context.Background(), bh)
	require.NoError(b, err)
	ps, _ := ParseTablePatterns([]string{"bench.t0050"})

	var tableWall, fullWall, tableBytes, fullBytes []float64
	for range repeat {
		for _, tables := range [][]TablePattern{ps, nil} {
			before := proxy.BytesServed()
			start := time.Now()
			dir := filepath.Join(b.TempDir(), "r")
			_, err = RestoreToDir(context.Background(), bh, dir, RestoreDirOptions{Config: cfg, Prepare: true, Tables: tables, Logger: logutil.NewMemoryLogger()})
			require.NoError(b, err)
			wall, served := time.Since(start).Seconds(), float64(proxy.BytesServed()-before)
			require.NoError(b, os.RemoveAll(dir))
			if tables != nil {
				tableWall, tableBytes = append(tableWall, wall), append(tableBytes, served)
			} else {
				fullWall, fullBytes = append(fullWall, wall), append(fullBytes, served)
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n%d MiB of benchdata shape giant, backup stored %.1f MiB in %d lanes (zstd level 1), split storage on S3 (versitygw), medians of %d\n",
		dataMB, float64(m.StoredBytes)/(1<<20), len(m.Lanes), repeat)
	fmt.Fprintf(&out, "%-34s %14s %10s %8s\n", "restore", "MiB from S3", "% stored", "wall s")
	fmt.Fprintf(&out, "%-34s %14.1f %10.2f %8.2f\n", "one small table (bench.t0050)", median(tableBytes)/(1<<20),
		100*median(tableBytes)/float64(m.StoredBytes), median(tableWall))
	fmt.Fprintf(&out, "%-34s %14.1f %10.2f %8.2f\n", "the whole backup, prepared", median(fullBytes)/(1<<20),
		100*median(fullBytes)/float64(m.StoredBytes), median(fullWall))
	b.Log(out.String())
	fmt.Print(out.String())
}
