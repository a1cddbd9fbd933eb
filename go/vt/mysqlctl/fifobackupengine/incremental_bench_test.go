package fifobackupengine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// BenchmarkIncrementalChain measures incremental backups on a real MariaDB
// with mariabackup, the split storage on local disk and zstd: a full backup;
// a delta after 1 % and one after 10 % of the big table's pages changed
// (wall time, bytes from the tool, bytes and objects stored); then, after
// one restore not counted, the restore (through mysqlctl.Restore, mysqld
// start included) of the full alone, of the full + 1 delta and of the full
// + 6 deltas. It is a
// benchmark, not a test: run it with
//
//	go test -run '^$' -bench IncrementalChain -benchtime 1x -timeout 60m \
//	  ./go/vt/mysqlctl/fifobackupengine/
//
// FIFO_BENCH_DATA_MB (default 1024) and FIFO_BENCH_LANES (default 2) change
// the set-up.
func BenchmarkIncrementalChain(b *testing.B) {
	dataMB := envInt("FIFO_BENCH_DATA_MB", 1024)
	f := newFixture(b, mariadbtest.Options{Tables: 200, BigTableBytes: int64(dataMB) << 20})
	cfg := incrementalConfig()
	cfg.Lanes = envInt("FIFO_BENCH_LANES", 2)
	cfg.MaxChainLength = 10
	useEngine(b, cfg)

	var rows, pages int64
	f.srv.Exec(b, "ANALYZE TABLE sample.big")
	require.NoError(b, f.srv.DB().QueryRow("SELECT COUNT(*) FROM sample.big").Scan(&rows))
	require.NoError(b, f.srv.DB().QueryRow("SELECT data_length DIV 16384 FROM information_schema.tables WHERE table_schema = 'sample' AND table_name = 'big'").Scan(&pages))
	// changePages updates one row in every 100/pct pages of the big table.
	changePages := func(pct float64) {
		step := max(int64(float64(rows)/float64(pages)*100/pct), 1)
		_, err := f.srv.DB().Exec("UPDATE sample.big SET pad = REVERSE(pad) WHERE id % ? = 0", step)
		require.NoError(b, err)
	}

	type row struct {
		what                    string
		wall                    time.Duration
		read, raw, stored, objs int64
	}
	var table []row
	backup := func(what string) *Manifest {
		checkpoint(b, f.srv.DB())
		// Every backup reads from disk, not from what the last one cached
		// (root only; elsewhere the column counts only cache misses).
		_ = os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0)
		time.Sleep(1100 * time.Millisecond) // backup names have seconds
		start := time.Now()
		require.NoError(b, f.backup(b, nil))
		wall := time.Since(start)
		m := f.latestManifest(b)
		table = append(table, row{what, wall, m.ToolDiskReadBytes, m.RawBytes, m.StoredBytes, countObjects(b, filepath.Join(f.root, testKeyspace, testShard, m.BackupName))})
		return m
	}
	restore := func(what string, m *Manifest) {
		at, err := time.Parse(time.RFC3339, m.BackupTime)
		require.NoError(b, err)
		start := time.Now()
		got, err := f.restoreAt(b, at)
		require.NoError(b, err)
		require.Equal(b, m.BackupName, got.BackupName)
		table = append(table, row{what: what, wall: time.Since(start)})
	}

	full := backup("full backup")
	changePages(1)
	d1 := backup("delta after 1 % of pages changed")
	changePages(10)
	backup("delta after 10 % of pages changed")
	var last *Manifest
	for range 4 {
		changePages(1)
		last = backup("delta after 1 % of pages changed")
	}
	require.Equal(b, 6, last.ChainLength)
	// The first restore also stops the server that loaded the data (a large
	// dirty buffer pool): one not counted, so that all three start alike.
	restore("restore (warm-up, not compared): full + 6 deltas", last)
	restore("restore: full alone", full)
	restore("restore: full + 1 delta", d1)
	restore("restore: full + 6 deltas", last)

	var out strings.Builder
	fmt.Fprintf(&out, "data set %d MiB (%d pages in the big table), %d lanes, zstd, split storage on local disk\n", dataMB, pages, cfg.Lanes)
	fmt.Fprintf(&out, "| what | wall s | read from disk by the tool MiB | from the tool MiB | stored MiB | objects |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range table {
		if r.raw == 0 {
			fmt.Fprintf(&out, "| %s | %.1f | | | | |\n", r.what, r.wall.Seconds())
			continue
		}
		fmt.Fprintf(&out, "| %s | %.1f | %.1f | %.1f | %.1f | %d |\n", r.what, r.wall.Seconds(), float64(r.read)/(1<<20), float64(r.raw)/(1<<20), float64(r.stored)/(1<<20), r.objs)
	}
	// Benchmarks truncate their log: the table goes to stdout.
	fmt.Print(out.String())
}

func countObjects(t testing.TB, dir string) int64 {
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return err
	}))
	return n
}
