package fifobackupengine

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// BenchmarkIncrementalChain measures incremental backups on a real MariaDB
// with mariabackup, the split storage on local disk and zstd: a full backup;
// a delta after 1 % and one after 10 % of the big table's pages changed
// (wall time, bytes from the tool, bytes and objects stored), then four more
// after 1 % each; then, after one restore not counted, the restore (through
// mysqlctl.Restore, mysqld start included) of the full alone, of the first
// incremental and of the sixth: with --fifo-backup-incremental-base=latest
// that is the full + 6 deltas, with full (differential) the full + 1. It is
// a benchmark, not a test: run it with
//
//	go test -run '^$' -bench IncrementalChain -benchtime 1x -timeout 60m \
//	  ./go/vt/mysqlctl/fifobackupengine/
//
// FIFO_BENCH_DATA_MB (default 1024), FIFO_BENCH_LANES (default 2),
// FIFO_BENCH_STORAGE (local, the default, or s3: versitygw on 127.0.0.1) and
// FIFO_BENCH_RESTORE_REPEAT (default 1: each restore once; more prints every
// wall time and their median) and FIFO_BENCH_INCREMENTAL_BASE (latest or
// full; default the flag's) change the set-up.
func BenchmarkIncrementalChain(b *testing.B) {
	dataMB := envInt("FIFO_BENCH_DATA_MB", 1024)
	repeat := envInt("FIFO_BENCH_RESTORE_REPEAT", 1)
	storage := envString("FIFO_BENCH_STORAGE", "local")
	f := newFixture(b, mariadbtest.Options{Tables: 200, BigTableBytes: int64(dataMB) << 20})
	if storage == "s3" {
		srv := splitstoragetest.StartS3(b)
		srv.Setenv(b)
		cfg := srv.Config
		cfg.PartSize = f.split.PartSize
		f.useSplitConfig(b, cfg, srv.Dir)
	}
	be, err := splitstorage.OpenBackend(context.Background(), f.split)
	require.NoError(b, err)
	cfg := incrementalConfig()
	cfg.Lanes = envInt("FIFO_BENCH_LANES", 2)
	cfg.MaxChainLength = 10
	cfg.IncrementalBase = envString("FIFO_BENCH_INCREMENTAL_BASE", defaultFlagConfig().IncrementalBase)
	require.NoError(b, cfg.Validate())
	useEngine(b, cfg)

	var rows, pages int64
	f.srv.Exec(b, "ANALYZE TABLE sample.big")
	require.NoError(b, f.srv.DB().QueryRow("SELECT COUNT(*) FROM sample.big").Scan(&rows))
	require.NoError(b, f.srv.DB().QueryRow("SELECT data_length DIV 16384 FROM information_schema.tables WHERE table_schema = 'sample' AND "+
		"table_name = 'big'").Scan(&pages))
	// changePages updates one row in every 100/pct pages of the big table,
	// in other pages each round (a page's worth of ids further on), as days
	// of changes would: the same pages each time would keep a differential
	// at the size of the first.
	round := int64(0)
	changePages := func(pct float64) {
		perPage := max(rows/pages, 1)
		step := max(int64(float64(perPage)*100/pct), 1)
		_, err := f.srv.DB().Exec("UPDATE sample.big SET pad = REVERSE(pad) WHERE id % ? = ?", step, (round*perPage)%step)
		require.NoError(b, err)
		round++
	}

	type row struct {
		what                    string
		wall                    time.Duration
		read, raw, stored, objs int64
	}
	var table []row
	backup := func(what string) *Manifest {
		mariadbtest.Checkpoint(b, f.srv.DB())
		// Every backup reads from disk, not from what the last one cached
		// (root only; elsewhere the column counts only cache misses).
		_ = os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0)
		time.Sleep(1100 * time.Millisecond) // backup names have seconds
		start := time.Now()
		require.NoError(b, f.backup(b, nil))
		wall := time.Since(start)
		m := f.latestManifest(b)
		objs, err := be.List(context.Background(), testKeyspace+"/"+testShard+"/"+m.BackupName+"/", false)
		require.NoError(b, err)
		table = append(table, row{what, wall, m.ToolDiskReadBytes, m.RawBytes, m.StoredBytes, int64(len(objs))})
		return m
	}
	var restoreOrder []string
	restoreWalls := map[string][]float64{}
	restore := func(what string, m *Manifest) {
		at, err := time.Parse(time.RFC3339, m.BackupTime)
		require.NoError(b, err)
		start := time.Now()
		got, err := f.restoreAt(b, at)
		require.NoError(b, err)
		require.Equal(b, m.BackupName, got.BackupName)
		if restoreWalls[what] == nil {
			restoreOrder = append(restoreOrder, what)
		}
		restoreWalls[what] = append(restoreWalls[what], time.Since(start).Seconds())
	}

	kind := map[string]string{BaseLatest: "delta", BaseFull: "differential"}[cfg.IncrementalBase]
	full := backup("full backup")
	changePages(1)
	d1 := backup(kind + " after 1 % of pages changed")
	changePages(10)
	backup(kind + " after 10 % more of pages changed")
	var last *Manifest
	for range 4 {
		changePages(1)
		last = backup(kind + " after 1 % more of pages changed")
	}
	sixth := "full + 6 deltas"
	if cfg.IncrementalBase == BaseLatest {
		require.Equal(b, 6, last.ChainLength)
	} else {
		require.Equal(b, 1, last.ChainLength)
		sixth = "full + 1 differential (the 6th)"
	}
	// The first restore also stops the server that loaded the data (a large
	// dirty buffer pool): one not counted, so that all three start alike.
	restore("restore (warm-up, not compared): "+sixth, last)
	for range repeat {
		// Interleaved, so that drift on the machine falls on all three alike.
		restore("restore: full alone", full)
		restore("restore: full + 1 delta", d1)
		restore("restore: "+sixth, last)
	}

	var out strings.Builder
	fmt.Fprintf(&out, "data set %d MiB (%d pages in the big table), %d lanes, zstd, split storage on %s, --fifo-backup-incremental-base=%s\n", dataMB,
		pages, cfg.Lanes, storage, cfg.IncrementalBase)
	fmt.Fprintf(&out, "| what | wall s | read from disk by the tool MiB | from the tool MiB | stored MiB | objects |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range table {
		if r.raw == 0 {
			fmt.Fprintf(&out, "| %s | %.1f | | | | |\n", r.what, r.wall.Seconds())
			continue
		}
		fmt.Fprintf(&out, "| %s | %.1f | %.1f | %.1f | %.1f | %d |\n", r.what, r.wall.Seconds(), float64(r.read)/(1<<20), float64(r.raw)/(1<<20),
			float64(r.stored)/(1<<20), r.objs)
	}
	fmt.Fprintf(&out, "\n| restore | wall s (median) | runs |\n|---|---:|---|\n")
	for _, what := range restoreOrder {
		var runs []string
		for _, w := range restoreWalls[what] {
			runs = append(runs, fmt.Sprintf("%.1f", w))
		}
		fmt.Fprintf(&out, "| %s | %.1f | %s |\n", what, median(restoreWalls[what]), strings.Join(runs, ", "))
	}
	// Benchmarks truncate their log: the table goes to stdout.
	fmt.Print(out.String())
}
