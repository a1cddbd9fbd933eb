package fifobackupengine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// BenchmarkRestorePrediction measures how far the predicted restore time
// (restoretime.go) is from the restore's: on a real MariaDB with
// mariabackup, four backups unlike each other (a full of a quiet server, a
// full under writes, a delta on it, a delta on that one under writes: a
// chain of three), each restored into a directory FIFO_BENCH_REPEAT times
// (default 2; download and prepare timed as test restores time them), then
// each predicted from the other three's restores alone (leave one out), as
// a new backup is predicted from older ones. It prints predicted against
// actual per phase. A benchmark, not a test:
//
//	go test -run '^$' -bench RestorePrediction -benchtime 1x -timeout 60m ./go/vt/mysqlctl/fifobackupengine/
//
// FIFO_BENCH_DATA_MB (default 1024) sizes the data.
func BenchmarkRestorePrediction(b *testing.B) {
	dataMB := envInt("FIFO_BENCH_DATA_MB", 1024)
	repeat := envInt("FIFO_BENCH_REPEAT", 2)
	// A redo log that holds what the writer writes during a backup.
	f := newFixtureWith(b, mariadbtest.Options{Tables: 200, BigTableBytes: int64(dataMB) << 20}, "innodb_log_file_size=2G\n")
	full := testConfig(2, SourceStdout, zstdConfig())
	incremental := full
	incremental.FullInterval = time.Hour

	type backup struct {
		what    string
		work    RestoreWork
		samples []RestoreSample
	}
	var backups []*backup
	take := func(what string, cfg Config, underWrites bool) {
		useEngine(b, cfg)
		time.Sleep(1100 * time.Millisecond) // backup names have seconds
		stop := func() int { return 0 }
		if underWrites {
			stop = rewriteBig(b, f.srv.DB())
		}
		require.NoError(b, f.backup(b, nil))
		stop()
		backups = append(backups, &backup{what: what})
	}
	take("full, quiet server", full, false)
	take("full, under writes", full, true)
	f.srv.Exec(b, "UPDATE sample.big SET pad = REVERSE(pad) WHERE id % 50 = 0")
	take("delta on the full, quiet", incremental, false)
	take("delta on that delta, under writes", incremental, true)

	bhs := f.backupHandles(b)
	require.Len(b, bhs, len(backups))
	for range repeat {
		for i, bk := range backups {
			var times PhaseTimes
			dir := filepath.Join(b.TempDir(), "data")
			rep, err := RestoreToDir(context.Background(), bhs[i], dir, RestoreDirOptions{Config: full, Prepare: true, OnPhase: times.Begin,
				Logger: newMemoryLogger()})
			require.NoError(b, err)
			bk.work = rep.Work
			s := RestoreSample{Work: rep.Work}
			for _, p := range times.Done() {
				switch p.Phase {
				case PhaseDownload:
					s.Download += p.Seconds
				case PhasePrepare:
					s.Prepare += p.Seconds
				}
			}
			bk.samples = append(bk.samples, s)
			require.NoError(b, os.RemoveAll(dir))
		}
	}

	var out strings.Builder
	fmt.Fprintf(&out, "\n%d MiB of data, 2 lanes, zstd, split storage on local disk; actual: medians of %d restores; predicted: from the "+
		"other three backups' restores\n", dataMB, repeat)
	fmt.Fprintf(&out, "| backup | stream MiB | redo MiB | prepares | download s actual / predicted | prepare s actual / predicted | "+
		"total s actual / predicted | error |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, bk := range backups {
		var others []RestoreSample
		for j, o := range backups {
			if j != i {
				others = append(others, o.samples...)
			}
		}
		rates, ok := FitRestoreRates(others)
		require.True(b, ok)
		p := rates.Predict(bk.work)
		var downloads, prepares []float64
		for _, s := range bk.samples {
			downloads, prepares = append(downloads, s.Download), append(prepares, s.Prepare)
		}
		actual := median(downloads) + median(prepares)
		predicted := (p.Download + p.Prepare).Seconds()
		fmt.Fprintf(&out, "| %s | %.0f | %.0f | %d | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %+.0f %% |\n", bk.what,
			float64(bk.work.StreamBytes)/(1<<20), float64(bk.work.RedoBytes)/(1<<20), bk.work.Prepares, median(downloads), p.Download.Seconds(),
			median(prepares), p.Prepare.Seconds(), actual, predicted, (predicted-actual)/actual*100)
		fmt.Fprintf(&out, "|   rates from the other three | | | | %.0f MiB/s | %.2f s per prepare + %.0f MiB/s of redo%s | | |\n",
			rates.DownloadBytesPerSecond/(1<<20), rates.SecondsPerPrepare, rates.RedoBytesPerSecond/(1<<20), map[bool]string{true: " (assumed)"}[rates.RedoRateAssumed])
	}
	// Benchmarks truncate their log: the table goes to stdout.
	fmt.Print(out.String())
}
