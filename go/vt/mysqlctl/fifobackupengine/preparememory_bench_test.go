package fifobackupengine

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// BenchmarkPrepareMemory is the redo-heavy benchmark: a backup of a real
// MariaDB taken while a writer rewrites the big table (the redo its
// prepare applies, last_lsn - to_lsn, is printed from the MANIFEST), then
// restored into a directory once per --fifo-backup-use-memory of
// FIFO_BENCH_USE_MEMORY (default 100MiB, mariabackup's own default;
// 512MiB, this engine's old default; 2GiB; 11GiB, half of what the CI
// machine has available; auto), FIFO_BENCH_REPEAT rounds
// interleaved, printing the prepare's median seconds against memory. A
// benchmark, not a test:
//
//	FIFO_BENCH_DATA_MB=2048 go test -run '^$' -bench PrepareMemory -benchtime 1x -timeout 60m ./go/vt/mysqlctl/fifobackupengine/
func BenchmarkPrepareMemory(b *testing.B) {
	dataMB := envInt("FIFO_BENCH_DATA_MB", 2048)
	repeat := envInt("FIFO_BENCH_REPEAT", 3)
	mems := strings.Split(envString("FIFO_BENCH_USE_MEMORY", "100MiB,512MiB,2GiB,11GiB,auto"), ",")
	f := newFixtureWith(b, mariadbtest.Options{Tables: 200, BigTableBytes: int64(dataMB) << 20}, "innodb_log_file_size=2G\n")
	cfg := testConfig(2, SourceStdout, zstdConfig())
	useEngine(b, cfg)

	stop := rewriteBig(b, f.srv.DB())
	start := time.Now()
	require.NoError(b, f.backup(b, nil))
	took := time.Since(start)
	rewrites := stop()
	m := f.latestManifest(b)
	redo, _ := m.LSN.Redo()
	bhs := f.backupHandles(b)
	bh := bhs[len(bhs)-1]
	var out strings.Builder
	fmt.Fprintf(&out, "\n%d MiB of data, a backup of %.1f s under %d rewrites of 1,000 rows of the big table: %s of redo to apply (LSN %s..%s)\n",
		dataMB, took.Seconds(), rewrites, humanize.IBytes(uint64(redo)), m.LSN.To, m.LSN.Last)

	seconds := map[string][]float64{}
	for range repeat {
		for _, mem := range mems {
			var use int64
			require.NoError(b, flagvalue.AutoSize{P: &use, Allowed: allowedUseMemory}.Set(mem))
			rc := cfg
			rc.UseMemory = use
			var times PhaseTimes
			dir := filepath.Join(b.TempDir(), "data")
			_, err := RestoreToDir(context.Background(), bh, dir, RestoreDirOptions{Config: rc, Prepare: true, OnPhase: times.Begin,
				Logger: newMemoryLogger()})
			require.NoError(b, err)
			for _, p := range times.Done() {
				if p.Phase == PhasePrepare {
					seconds[mem] = append(seconds[mem], p.Seconds)
				}
			}
			require.NoError(b, os.RemoveAll(dir))
		}
	}
	auto := prepareMemory(&Config{UseMemory: UseMemoryAuto}, redo, hostAvailable, newMemoryLogger())
	fmt.Fprintf(&out, "%-16s %10s %s\n", "MEMORY", "PREPARE S", "RUNS")
	for _, mem := range mems {
		name := mem
		if mem == "auto" {
			name = "auto (" + humanize.IBytes(uint64(auto)) + ")"
		}
		fmt.Fprintf(&out, "%-16s %10.2f %v\n", name, median(seconds[mem]), seconds[mem])
	}
	b.Log(out.String())
	fmt.Print(out.String())
}

// rewriteBig rewrites 1,000 rows of sample.big at a time, round the
// table, until the returned function is called; it returns how many
// statements ran.
func rewriteBig(t testing.TB, db *sql.DB) (stop func() int) {
	var maxID int64
	require.NoError(t, db.QueryRow("SELECT MAX(id) FROM "+sampleDB+".big").Scan(&maxID))
	done := make(chan struct{})
	var wg sync.WaitGroup
	n := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for id := int64(0); ; id = (id + 1000) % maxID {
			select {
			case <-done:
				return
			default:
			}
			if _, err := db.Exec("UPDATE "+sampleDB+".big SET pad = REVERSE(pad) WHERE id > ? AND id <= ?", id, id+1000); err != nil {
				t.Errorf("rewriting the big table: %v", err)
				return
			}
			n++
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		return n
	}
}
