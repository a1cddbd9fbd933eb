package sidebyside

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRenderWritesRatiosAndWellFormedSVG renders a small synthetic result set: the document has the
// side-by-side row with its ratio, and the chart is well-formed SVG.
func TestRenderWritesRatiosAndWellFormedSVG(t *testing.T) {
	res := &Results{
		Profile: "test", Command: "scripts/bench.sh", Started: "2026-01-01T00:00:00Z", Minutes: 1,
		Machine: map[string]string{"cpus": "2"}, Versions: map[string]string{"vitess": "v0.24.3"},
		Settings: map[string]string{"compressor": "zstd"},
		Datasets: []Dataset{{Shape: "mixed", SizeGiB: 1, Bytes: 1 << 30, Tables: 50, RawBytes: 1 << 30, ZstdBytes: 1 << 28}},
	}
	for rep := range 3 {
		for _, e := range []struct {
			engine string
			wall   float64
		}{{"xtrabackup", 10}, {"fifo-stdout", 5}} {
			for _, op := range []string{"backup", "restore"} {
				res.Runs = append(res.Runs, Run{Shape: "mixed", SizeGiB: 1, Storage: "local", Compressor: "zstd",
					Engine: e.engine, Lanes: 2, Op: op, Rep: rep, Wall: e.wall + float64(rep), CPU: e.wall,
					RawBytes: 1 << 30, Stored: 1 << 28, Objects: 8, Requests: -1})
			}
		}
	}
	dir := t.TempDir()
	doc, svg := filepath.Join(dir, "side-by-side.md"), filepath.Join(dir, "img", "chart.svg")
	require.NoError(t, os.MkdirAll(filepath.Dir(svg), 0o755))
	require.NoError(t, Render(res, doc, svg))

	md, err := os.ReadFile(doc)
	require.NoError(t, err)
	assert.Contains(t, string(md), "xtrabackup")
	assert.Contains(t, string(md), "0.55", "fifo's median 6 s against the peer's 11 s")

	f, err := os.Open(svg)
	require.NoError(t, err)
	defer f.Close()
	d := xml.NewDecoder(f)
	var elems int
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "the chart is not well-formed XML")
		if se, ok := tok.(xml.StartElement); ok {
			elems++
			if elems == 1 {
				assert.Equal(t, "svg", strings.ToLower(se.Name.Local))
			}
		}
	}
	assert.Greater(t, elems, 5)
}

func TestMedianOfOddEvenAndNone(t *testing.T) {
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
	require.Equal(t, 0.0, median(nil))
}

// TestPipelineCeiling: the slowest stage bounds a pipeline, unless the stages
// together need more CPU than the machine has.
func TestPipelineCeiling(t *testing.T) {
	res := &Results{Machine: map[string]string{"nproc": "2"}, Ceilings: []Ceiling{
		{Shape: "mixed", SizeGiB: 1, Name: "tool-devnull", Wall: []float64{1.5}, CPU: []float64{1.5}},
		{Shape: "mixed", SizeGiB: 1, Name: "compress-zstd", Wall: []float64{2.3}, CPU: []float64{4.6}},
		{Shape: "mixed", SizeGiB: 1, Name: "storage-write-local", Wall: []float64{0.4}, CPU: []float64{0.3}},
	}}
	c, what := res.backupCeiling("mixed", 1, "zstd", "local", "fifo-stdout")
	assert.InDelta(t, 3.2, c, 1e-9)
	assert.Contains(t, what, "cpu")
	c, _ = res.backupCeiling("mixed", 1, "zstd", "local", "fifo-fifo-standin")
	assert.InDelta(t, 3.2, c, 1e-9, "a run without the stand-in's ceiling: the tool's")
	res.Ceilings = append(res.Ceilings, Ceiling{Shape: "mixed", SizeGiB: 1, Name: "standin-devnull", Wall: []float64{2.5}, CPU: []float64{3.1}})
	c, _ = res.backupCeiling("mixed", 1, "zstd", "local", "fifo-fifo-standin")
	assert.InDelta(t, 4.0, c, 1e-9, "the stand-in's runs start from its stream")
	c, _ = res.backupCeiling("mixed", 1, "zstd", "local", "fifo-stdout")
	assert.InDelta(t, 3.2, c, 1e-9)
	res.Machine["nproc"] = "16"
	c, what = res.backupCeiling("mixed", 1, "zstd", "local", "fifo-stdout")
	assert.InDelta(t, 2.3, c, 1e-9)
	assert.Equal(t, "compress-zstd", what)
	c, what = res.backupCeiling("mixed", 1, "zstd", "local", "fifo-fifo-standin")
	assert.InDelta(t, 2.5, c, 1e-9)
	assert.Equal(t, "standin-devnull", what)

	// The tool's stream time: the faster of /dev/null and a drained pipe.
	res.Ceilings[0].Wall = []float64{2.4}
	c, what = res.backupCeiling("mixed", 1, "zstd", "local", "fifo-stdout")
	assert.InDelta(t, 2.4, c, 1e-9)
	assert.Equal(t, "tool-devnull", what)
	res.Ceilings = append(res.Ceilings, Ceiling{Shape: "mixed", SizeGiB: 1, Name: "tool-pipe", Wall: []float64{2.35}, CPU: []float64{1.5}})
	c, what = res.backupCeiling("mixed", 1, "zstd", "local", "fifo-stdout")
	assert.InDelta(t, 2.35, c, 1e-9)
	assert.Equal(t, "tool-pipe", what)
	res.Ceilings[len(res.Ceilings)-1].Wall = []float64{2.6}
	_, what = res.backupCeiling("mixed", 1, "zstd", "local", "fifo-stdout")
	assert.Equal(t, "tool-devnull", what)
}

// TestRestoreCeiling: reading, decompressing and writing the files overlap;
// the prepare comes after them.
func TestRestoreCeiling(t *testing.T) {
	res := &Results{Machine: map[string]string{"nproc": "16"}, Ceilings: []Ceiling{
		{Shape: "mixed", SizeGiB: 1, Name: "decompress-zstd", Wall: []float64{0.3}, CPU: []float64{0.6}},
		{Shape: "mixed", SizeGiB: 1, Name: "storage-read-local", Wall: []float64{0.4}, CPU: []float64{0.5}},
		{Shape: "mixed", SizeGiB: 1, Name: "write-files-local", Wall: []float64{1.1}, CPU: []float64{0.9}},
	}}
	c, what := res.restoreCeiling("mixed", 1, "zstd", "local", nil)
	assert.Zero(t, c, "an older run without prepare has no restore ceiling")
	assert.Empty(t, what)
	res.Ceilings = append(res.Ceilings, Ceiling{Shape: "mixed", SizeGiB: 1, Name: "prepare", Wall: []float64{2}, CPU: []float64{1.8}})
	c, what = res.restoreCeiling("mixed", 1, "zstd", "local", nil)
	assert.InDelta(t, 3.1, c, 1e-9)
	assert.Equal(t, "write-files-local + prepare", what)

	// The restores' own prepare, where faster than the ceiling's (less
	// redo in their backups), is the harsher ceiling; where slower, the
	// ceiling's stays.
	restores := func(prepares ...string) []Run {
		var runs []Run
		for _, s := range prepares {
			runs = append(runs, Run{PhaseTable: "fifo restore x: per-phase stats (wall 3.0s)\nPHASE        OPERATION                   GiB    SECONDS      MiB/s\n" +
				"Source       Source:Read               0.354       0.09     4092.2\nPrepare      Prepare                   0.000       " + s + "          -\n"})
		}
		return runs
	}
	c, what = res.restoreCeiling("mixed", 1, "zstd", "local", restores("0.50", "0.40", "0.90"))
	assert.InDelta(t, 1.6, c, 1e-9)
	assert.Equal(t, "write-files-local + the restores' own prepare", what)
	c, what = res.restoreCeiling("mixed", 1, "zstd", "local", restores("2.50", "2.40", "2.90"))
	assert.InDelta(t, 3.1, c, 1e-9)
	assert.Equal(t, "write-files-local + prepare", what)
}

// TestMergeReplacesOnlyTheRerunDataSet: a re-run data set replaces the first run's figures for it, and
// only for it.
func TestMergeReplacesOnlyTheRerunDataSet(t *testing.T) {
	run := func(shape string, wall float64) Run {
		return Run{Shape: shape, SizeGiB: 1, Engine: "fifo-stdout", Op: "backup", Wall: wall}
	}
	first := &Results{
		Datasets: []Dataset{{Shape: "mixed", SizeGiB: 1}, {Shape: "many", SizeGiB: 1}},
		Runs:     []Run{run("mixed", 9), run("many", 5)},
		Sweep:    []Run{run("mixed", 9)},
		Ceilings: []Ceiling{{Shape: "mixed", SizeGiB: 1, Name: "tool-devnull"}, {Shape: "many", SizeGiB: 1, Name: "tool-devnull"}},
		Minutes:  60,
	}
	later := &Results{Started: "later", Minutes: 20, Command: "BENCH_PLANS=mixed-1024 scripts/bench.sh",
		Datasets: []Dataset{{Shape: "mixed", SizeGiB: 1}}, Runs: []Run{run("mixed", 4)},
		Ceilings: []Ceiling{{Shape: "mixed", SizeGiB: 1, Name: "tool-devnull", Wall: []float64{1}}}}
	first.Merge(later)
	assert.Equal(t, []Run{run("mixed", 4), run("many", 5)}, first.Runs, "the re-run data set keeps its place")
	assert.Empty(t, first.Sweep)
	require.Len(t, first.Ceilings, 2)
	assert.Equal(t, []float64{1}, first.Ceilings[0].Wall)
	assert.Equal(t, []Dataset{{Shape: "mixed", SizeGiB: 1}, {Shape: "many", SizeGiB: 1}}, first.Datasets)
	assert.Contains(t, first.Settings["re-run"], "mixed 1 GiB measured again from later")
	assert.Equal(t, 80.0, first.Minutes)
}

// TestMemoryTable: each lane count's fifo+split and peer growth side by side
// with the wall-time ratio, the sweep's backup and restore per part size, and
// a verdict that names the largest fifo+split cell.
func TestMemoryTable(t *testing.T) {
	const mib = 1 << 20
	run := func(engine, op string, lanes int, rss int64, wall float64) Run {
		return Run{Shape: "mixed", SizeGiB: 4, Storage: "local", Compressor: "zstd", Engine: engine, Lanes: lanes, Op: op,
			Wall: wall, SelfBase: 100 * mib, SelfRSS: (100 + rss) * mib, PartSize: 256 * mib}
	}
	mem := &Results{Profile: "standard", Started: "2026-11-24T10:55:40Z", Minutes: 50, Command: "BENCH_SIZES_MIB=4096 scripts/bench.sh",
		Runs: []Run{
			run("xtrabackup", "backup", 64, 700, 20), run("fifo-stdout", "backup", 64, 160, 15),
			run("xtrabackup", "restore", 64, 600, 40), run("fifo-stdout", "restore", 64, 230, 10),
		}}
	mem.Runs[0].PartSize, mem.Runs[2].PartSize = 0, 0 // the peer has no parts
	for _, part := range []int64{16, 5120} {
		bk, rs := run("fifo-stdout", "backup", 4, 90, 12), run("fifo-stdout", "restore", 4, 70+part/1024, 8)
		bk.PartSize, rs.PartSize = part*mib, part*mib
		mem.Sweep = append(mem.Sweep, bk, rs)
	}
	md := MemoryTable(mem, "memory-4g.md")
	assert.Contains(t, md, "[memory-4g.md](memory-4g.md)")
	assert.Contains(t, md, "| mixed 4 GiB | local | zstd | 64 | +160 | +700 | 0.75x | +230 | +600 | 0.25x |")
	assert.Contains(t, md, "| mixed 4 GiB | zstd | 4 | 16 | +90 | +70 | 0 |")
	assert.Contains(t, md, "| mixed 4 GiB | zstd | 4 | 5120 | +90 | +75 | 0 |")
	assert.Contains(t, md, "Largest fifo+split cell: +230 MiB of 6 (met)")

	mem.Runs[3].SelfRSS = 400 * mib // a restore at +300 MiB
	assert.Contains(t, MemoryTable(mem, "x.md"), "Largest fifo+split cell: +300 MiB of 6 (**missed** by 17%)")
}

// TestToolWaitsTable: backups that measured what they waited for get a row
// of medians; runs from before (no disk figures) and restores get none.
func TestToolWaitsTable(t *testing.T) {
	var runs []Run
	for rep := range 3 {
		runs = append(runs,
			Run{Shape: "mixed", SizeGiB: 4, Storage: "local", Compressor: "pgzip", Engine: "fifo-stdout", Lanes: 16, Op: "backup", Rep: rep,
				Wall: 4 + float64(rep), ToolRunQueue: 0.5 * float64(rep+1), GoSchedWait: 0.1, GoSchedP99: 0.002,
				Disk: &diskUse{ReadMB: 2000, WriteMB: 1900 + float64(rep), Busy: 0.8 + 0.05*float64(rep)}},
			Run{Shape: "mixed", SizeGiB: 4, Storage: "local", Compressor: "pgzip", Engine: "fifo-stdout", Lanes: 16, Op: "restore", Rep: rep, Wall: 2},
			Run{Shape: "mixed", SizeGiB: 4, Storage: "local", Compressor: "pgzip", Engine: "xtrabackup", Lanes: 16, Op: "backup", Rep: rep, Wall: 5})
	}
	res := &Results{Ceilings: []Ceiling{
		{Shape: "mixed", SizeGiB: 4, Name: "tool-devnull", Wall: []float64{3.1, 2.9, 3.0}},
		{Shape: "mixed", SizeGiB: 4, Name: "tool-beside-pgzip", Wall: []float64{4.4, 4.2, 4.3}},
		{Shape: "mixed", SizeGiB: 4, Name: "split-pgzip", Wall: []float64{1.2, 1.4, 1.3}},
		{Shape: "mixed", SizeGiB: 4, Name: "split-zstd", Wall: []float64{0.9}},
	}}
	gs, order := groups(runs)
	p := &page{}
	p.toolWaits(res, gs, order)
	out := p.b.String()
	assert.Contains(t, out, "| mixed 4 GiB | local | pgzip | fifo-stdout | 16 | 5.0 | 3.0 | 4.3 | 1.3 | 1.00 | 0.10 | 2.0 | 2000 | 1901 | 85% |")
	assert.Equal(t, 1, strings.Count(out, "| mixed 4 GiB |"), "one row: the restore and the run without figures have none")

	p = &page{}
	p.toolWaits(&Results{}, gs, order)
	assert.Contains(t, p.b.String(), "| mixed 4 GiB | local | pgzip | fifo-stdout | 16 | 5.0 | - | - | - | 1.00 |", "a run without those ceilings")

	p = &page{}
	gs, order = groups(runs[1:2])
	p.toolWaits(res, gs, order)
	assert.Empty(t, p.b.String(), "no backup measured it: no section")
}
