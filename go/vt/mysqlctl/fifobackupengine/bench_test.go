package fifobackupengine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/servenv"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// BenchmarkVersusXtrabackupEngine runs Vitess's xtrabackup engine (stripes =
// N, with xtrabackup/xbstream pointing at mariabackup/mbstream) and the fifo
// engine (lanes = N) side by side on the same data, the same local disk
// (Vitess's file storage) and the same compressor, and prints wall and CPU
// seconds of ExecuteBackup and ExecuteRestore with the fifo/xtrabackup ratio
// (medians of the repeats). It is a benchmark, not a test: run it with
//
//	go test -run '^$' -bench VersusXtrabackupEngine -benchtime 1x -timeout 60m \
//	  ./go/vt/mysqlctl/fifobackupengine/
//
// FIFO_BENCH_DATA_MB (default 512), FIFO_BENCH_LANES (default "1,2"),
// FIFO_BENCH_REPEAT (default 3) and FIFO_BENCH_COMPRESSION (default zstd)
// change the set-up.
func BenchmarkVersusXtrabackupEngine(b *testing.B) {
	dataMB := envInt("FIFO_BENCH_DATA_MB", 512)
	repeat := envInt("FIFO_BENCH_REPEAT", 3)
	comp := envString("FIFO_BENCH_COMPRESSION", mysqlctl.ZstdCompressor)
	lanes := envInts(b, "FIFO_BENCH_LANES", "1,2")

	// Registering Vitess's flags resets their variables to the defaults:
	// build the flag set before the fixture points the file storage.
	fs := servenv.GetFlagSetFor("vttablet")
	f := newFixture(b, mariadbtest.Options{Tables: 200, BigTableBytes: int64(dataMB) << 20})
	f.useFileStorage(b)

	setStripes := useVitessXtrabackup(b, fs, comp)

	type sample struct{ wall, cpu []float64 }
	results := map[string]*sample{}
	record := func(key string, m measure) {
		s := results[key]
		if s == nil {
			s = &sample{}
			results[key] = s
		}
		s.wall = append(s.wall, m.wall.Seconds())
		s.cpu = append(s.cpu, m.cpu.Seconds())
	}

	for _, n := range lanes {
		setStripes(n)
		cfg := testConfig(n, SourceStdout, CompressionConfig{Enabled: true, Engine: comp, Level: 1, BlockSize: 250000, Blocks: 2})
		cfg.Progress = 0
		for range repeat {
			for _, engine := range []string{"xtrabackup", engineName} {
				timed := f.timedRoundTrip(b, engine, cfg, nil)
				record(fmt.Sprintf("%s/%d/backup", engine, n), timed.backup)
				record(fmt.Sprintf("%s/%d/restore", engine, n), timed.restore)
			}
		}
	}

	var out strings.Builder
	fmt.Fprintf(&out, "\n%d MiB of data, compressor %s level 1, Vitess file storage on local disk, medians of %d runs\n", dataMB, comp, repeat)
	fmt.Fprintf(&out, "%-8s %-3s %12s %12s %12s %12s %10s %10s\n", "OP", "N", "xtra wall s", "xtra cpu s", "fifo wall s", "fifo cpu s", "wall ratio", "cpu ratio")
	for _, n := range lanes {
		for _, op := range []string{"backup", "restore"} {
			x := results[fmt.Sprintf("xtrabackup/%d/%s", n, op)]
			y := results[fmt.Sprintf("%s/%d/%s", engineName, n, op)]
			xw, xc, yw, yc := median(x.wall), median(x.cpu), median(y.wall), median(y.cpu)
			fmt.Fprintf(&out, "%-8s %-3d %12.2f %12.2f %12.2f %12.2f %10.2f %10.2f\n", op, n, xw, xc, yw, yc, yw/xw, yc/xc)
		}
	}
	b.Log(out.String())
	fmt.Print(out.String())
}

// useVitessXtrabackup points Vitess's xtrabackup engine at mariabackup and
// mbstream, with compressor comp at level 1, for one benchmark; setStripes
// sets its stripes through its own flags (parsed in fs).
func useVitessXtrabackup(b *testing.B, fs *pflag.FlagSet, comp string) (setStripes func(n int)) {
	rootPath := b.TempDir()
	require.NoError(b, os.Symlink("/usr/bin/mariabackup", filepath.Join(rootPath, "xtrabackup")))
	require.NoError(b, os.Symlink("/usr/bin/mbstream", filepath.Join(rootPath, "xbstream")))
	oldComp := mysqlctl.CompressionEngineName
	mysqlctl.CompressionEngineName = comp
	b.Cleanup(func() { mysqlctl.CompressionEngineName = oldComp })
	return func(n int) {
		require.NoError(b, fs.Parse([]string{
			"--xtrabackup-root-path=" + rootPath, "--xtrabackup-user=vt_dba",
			"--xtrabackup-stream-mode=xbstream", fmt.Sprintf("--xtrabackup-stripes=%d", n),
			"--compression-level=1",
		}))
	}
}

// timedRoundTrip backs up with engine (cfg for fifo), calls afterBackup if
// set, and restores, timing both.
func (f *fixture) timedRoundTrip(b *testing.B, engine string, cfg Config, afterBackup func()) *timedEngine {
	timed := useTimedEngine(b, engine, cfg)
	f.engine = engine
	require.NoError(b, f.backup(b, nil))
	if afterBackup != nil {
		afterBackup()
	}
	// Stop mysqld before the timed restore, so its lifetime CPU (reaped at
	// exit) is not counted as the restore's.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	require.NoError(b, f.tb.Mysqld.Shutdown(ctx, f.tb.Cnf, true, time.Minute))
	cancel()
	_, err := f.restore(b, nil)
	require.NoError(b, err)
	return timed
}

// removeBackups removes every backup of the fixture's shard.
func (f *fixture) removeBackups(t testing.TB) {
	bhs := f.backupHandles(t)
	bs, err := backupstorage.GetBackupStorage()
	require.NoError(t, err)
	defer bs.Close()
	for _, bh := range bhs {
		require.NoError(t, bs.RemoveBackup(context.Background(), bh.Directory(), bh.Name()))
	}
}

type measure struct{ wall, cpu time.Duration }

// timedEngine measures ExecuteBackup/ExecuteRestore of the engine it wraps:
// wall time, and CPU time of this process and of the tools it waited for.
type timedEngine struct {
	mysqlctl.BackupRestoreEngine
	backup, restore measure
}

func (e *timedEngine) ExecuteBackup(ctx context.Context, p mysqlctl.BackupParams, bh backupstorage.BackupHandle) (mysqlctl.BackupResult, error) {
	start, cpu := time.Now(), cpuTime()
	r, err := e.BackupRestoreEngine.ExecuteBackup(ctx, p, bh)
	e.backup = measure{time.Since(start), cpuTime() - cpu}
	return r, err
}

func (e *timedEngine) ExecuteRestore(ctx context.Context, p mysqlctl.RestoreParams, bh backupstorage.BackupHandle) (*mysqlctl.BackupManifest, error) {
	start, cpu := time.Now(), cpuTime()
	m, err := e.BackupRestoreEngine.ExecuteRestore(ctx, p, bh)
	e.restore = measure{time.Since(start), cpuTime() - cpu}
	if err == nil && os.Geteuid() == 0 {
		// Vitess's xtrabackup engine leaves --move-back's files owned by
		// root; the mysql user that runs mysqld here needs them (untimed).
		err = matchOwner(p.Cnf, []string{p.Cnf.DataDir, p.Cnf.InnodbDataHomeDir, p.Cnf.InnodbLogGroupHomeDir})
	}
	return m, err
}

func useTimedEngine(b *testing.B, name string, cfg Config) *timedEngine {
	inner := mysqlctl.BackupRestoreEngineMap[name]
	if name == engineName {
		inner = New(cfg)
	}
	if te, ok := inner.(*timedEngine); ok {
		inner = te.BackupRestoreEngine
	}
	te := &timedEngine{BackupRestoreEngine: inner}
	old := mysqlctl.BackupRestoreEngineMap[name]
	mysqlctl.BackupRestoreEngineMap[name] = te
	b.Cleanup(func() { mysqlctl.BackupRestoreEngineMap[name] = old })
	return te
}

// cpuTime is user+system time of this process and its waited-for children.
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// envInts reads a comma-separated list of integers (def when unset).
func envInts(b *testing.B, name, def string) []int {
	var out []int
	for _, s := range strings.Split(envString(name, def), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		require.NoError(b, err, "%s", name)
		out = append(out, n)
	}
	return out
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
