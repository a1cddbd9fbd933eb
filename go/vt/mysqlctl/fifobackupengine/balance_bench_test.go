package fifobackupengine

import (
	"fmt"
	"strings"
	"testing"

	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/servenv"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// BenchmarkFIFOBalance: on a skewed data set (one table with about half the
// bytes beside 2,000 small ones), backup and restore wall time and lane
// sizes of the FIFO source (the stand-in, which deals whole files to its
// FIFOs round-robin as Percona's ds_xbstream.cc does) with N streams dealt
// to M lanes by bytes, side by side with the stdout source and Vitess's
// xtrabackup engine (stripes = M), all over Vitess's file storage on local
// disk, zstd level 1; medians of the repeats. The streams' own sizes (the
// MANIFEST's StreamBytes) are what each lane held when every FIFO was stored
// as its own lane, before the streams were dealt by bytes.
//
//	go test -run '^$' -bench FIFOBalance -benchtime 1x -timeout 60m ./go/vt/mysqlctl/fifobackupengine/
//
// FIFO_BENCH_BIG_MB (default 256), FIFO_BENCH_REPEAT (default 3).
func BenchmarkFIFOBalance(b *testing.B) {
	bigMB := envInt("FIFO_BENCH_BIG_MB", 256)
	repeat := envInt("FIFO_BENCH_REPEAT", 3)
	fs := servenv.GetFlagSetFor("vttablet")
	f := newFixture(b, mariadbtest.Options{Tables: 2000, RowsPerTable: 200, BigTableBytes: int64(bigMB) << 20, SkipOtherEngines: true})
	f.useFileStorage(b)
	const m = 4
	useVitessXtrabackup(b, fs, mysqlctl.ZstdCompressor)(m)
	fifo := func(n int) Config {
		c := testConfig(m, SourceFIFO, zstdConfig())
		c.ToolPath, c.FIFOStreams, c.Progress = standinPath, n, 0
		return c
	}
	stdout := testConfig(m, SourceStdout, zstdConfig())
	stdout.Progress = 0
	runs := []struct {
		name, engine string
		cfg          Config
	}{
		{"Vitess xtrabackup (mariabackup), 4 stripes", "xtrabackup", stdout},
		{"fifo, source stdout, 4 lanes", engineName, stdout},
		{"fifo, source fifo (stand-in), 4 streams -> 4 lanes", engineName, fifo(4)},
		{"fifo, source fifo (stand-in), 8 streams -> 4 lanes", engineName, fifo(8)},
	}
	type sample struct {
		backup, restore []float64
		lanes, streams  []int64
	}
	results := make([]sample, len(runs))
	for range repeat {
		for i, r := range runs {
			timed := f.timedRoundTrip(b, r.engine, r.cfg, func() {
				if r.engine == engineName {
					man := f.latestManifest(b)
					results[i].lanes, results[i].streams = nil, man.StreamBytes
					for _, l := range man.Lanes {
						results[i].lanes = append(results[i].lanes, l.RawBytes)
					}
				}
			})
			results[i].backup = append(results[i].backup, timed.backup.wall.Seconds())
			results[i].restore = append(results[i].restore, timed.restore.wall.Seconds())
		}
	}

	mb := func(v []int64) (string, float64) {
		if len(v) == 0 {
			return "-", 0
		}
		var s []string
		var total, most int64
		for _, x := range v {
			s = append(s, fmt.Sprintf("%.0f", float64(x)/1e6))
			total += x
			most = max(most, x)
		}
		return strings.Join(s, " / "), float64(most) / (float64(total) / float64(len(v)))
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\nskewed data set (big table %d MiB, 2,000 small tables), zstd level 1, Vitess file storage on local disk, medians of "+
		"%d runs\n\n", bigMB, repeat)
	fmt.Fprintf(&out, "| engine, source | backup wall s | restore wall s | lanes MB | lanes max/mean | tool streams MB (= lanes before) | streams "+
		"max/mean |\n|---|---|---|---|---|---|---|\n")
	for i, r := range runs {
		lanes, lskew := mb(results[i].lanes)
		streams, sskew := mb(results[i].streams)
		fmt.Fprintf(&out, "| %s | %.1f | %.1f | %s | %.3f | %s | %.2f |\n", r.name, median(results[i].backup), median(results[i].restore), lanes, lskew,
			streams, sskew)
	}
	b.Log(out.String())
	fmt.Print(out.String())
}
