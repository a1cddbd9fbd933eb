package sidebyside

import (
	_ "embed"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// notes is hand-written analysis appended to the generated report.
//
//go:embed notes.md
var notes string

// group is the runs of one configuration (all repeats).
type group struct {
	key  string
	runs []Run
}

func (g *group) med(f func(Run) float64) float64 {
	var v []float64
	for _, r := range g.runs {
		v = append(v, f(r))
	}
	return median(v)
}

func groupKey(r Run) string {
	return fmt.Sprintf("%s|%g|%s|%s|%s|%d|%s|%d", r.Shape, r.SizeGiB, r.Storage, r.Compressor, r.Engine, r.Lanes, r.Op, r.PartSize)
}

func groups(runs []Run) (map[string]*group, []string) {
	m := map[string]*group{}
	var order []string
	for _, r := range runs {
		k := groupKey(r)
		if m[k] == nil {
			m[k] = &group{key: k}
			order = append(order, k)
		}
		m[k].runs = append(m[k].runs, r)
	}
	return m, order
}

func (res *Results) ceiling(shape string, size float64, name string) *Ceiling {
	for i := range res.Ceilings {
		c := &res.Ceilings[i]
		if c.Shape == shape && c.SizeGiB == size && c.Name == name {
			return c
		}
	}
	return nil
}

// backupCeiling is the slowest part alone (the tool, the compressor or the
// storage write: they run as a pipeline, so the slowest bounds the whole), or,
// when the parts together need more CPU than the machine has, their CPU
// seconds over its cores: on 2 cores the stages share the cores they were
// each measured with alone. The runs through the xtrabackup stand-in start
// from the stand-in's own stream where the run measured it (an extra process
// that parses and writes every chunk again: real xtrabackup's FIFOs cost
// nothing of the kind). The tool's own stream time is the faster of its
// stream to /dev/null and through a drained pipe (runs since 2026-12-04
// measure both: on 2 cores the pipe was the faster).
func (res *Results) backupCeiling(shape string, size float64, comp, storage, engine string) (float64, string) {
	source := "tool-devnull"
	if p, d := res.ceiling(shape, size, "tool-pipe"), res.ceiling(shape, size, source); p != nil && (d == nil || median(p.Wall) < median(d.Wall)) {
		source = "tool-pipe"
	}
	if engine == "fifo-fifo-standin" && res.ceiling(shape, size, "standin-devnull") != nil {
		source = "standin-devnull"
	}
	return res.pipelineCeiling(shape, size, source, "compress-"+comp, "storage-write-"+storage)
}

// restoreCeiling is the pipeline of the storage read, the decompression and
// the files written (they overlap in a restore), then the tool's prepare,
// which starts only when every file is written. Results without the last two
// ceilings (runs before they were measured) have none: read and decompression
// alone made restores read 4-17x their ceiling, a ratio that meant nothing.
// The prepare is the faster of the ceiling's (one backup taken for the
// ceilings, prepared alone) and the restores' own Prepare phase (runs is the
// cell's): how long a prepare takes depends on the redo its backup holds,
// which varied 0.05-0.53 s from one ceiling backup to the next while the
// restores' own prepares took 0.13-0.19 s; the faster is the harsher ceiling.
func (res *Results) restoreCeiling(shape string, size float64, comp, storage string, runs []Run) (float64, string) {
	p := res.ceiling(shape, size, "prepare")
	if p == nil || res.ceiling(shape, size, "write-files-local") == nil {
		return 0, ""
	}
	wall, what := res.pipelineCeiling(shape, size, "decompress-"+comp, "storage-read-"+storage, "write-files-local")
	prepare, which := median(p.Wall), "prepare"
	var own []float64
	for _, r := range runs {
		if s, ok := phaseSeconds(r.PhaseTable, "Prepare"); ok {
			own = append(own, s)
		}
	}
	if len(own) > 0 && median(own) < prepare {
		prepare, which = median(own), "the restores' own prepare"
	}
	return wall + prepare, what + " + " + which
}

// phaseSeconds is an operation's SECONDS in the fifo engine's per-phase
// table (PHASE OPERATION GiB SECONDS MiB/s).
func phaseSeconds(table, operation string) (float64, bool) {
	for line := range strings.Lines(table) {
		f := strings.Fields(line)
		if len(f) == 5 && f[1] == operation {
			if s, err := strconv.ParseFloat(f[3], 64); err == nil {
				return s, true
			}
		}
	}
	return 0, false
}

func (res *Results) pipelineCeiling(shape string, size float64, stages ...string) (float64, string) {
	best, what, cpu := 0.0, "", 0.0
	for _, n := range stages {
		if c := res.ceiling(shape, size, n); c != nil {
			cpu += median(c.CPU)
			if median(c.Wall) > best {
				best, what = median(c.Wall), n
			}
		}
	}
	if cores, err := strconv.Atoi(res.Machine["nproc"]); err == nil && cores > 0 && cpu/float64(cores) > best {
		best, what = cpu/float64(cores), fmt.Sprintf("cpu: %.1f CPU-s of the stages / %d cores", cpu, cores)
	}
	return best, what
}

func engineLabel(e string) string {
	switch e {
	case "xtrabackup":
		return "Vitess xtrabackup (mariabackup), stripes"
	case "fifo-stdout":
		return "fifo+split, source stdout, lanes"
	case "fifo-fifo-standin":
		return "fifo+split, source fifo via **stand-in**, lanes"
	}
	return e
}

// laterMeasurements points to what was measured apart from this report,
// after the figures published here.
const laterMeasurements = `> **Memory since the spool (2026-11-23)**: the figures below were measured with parts held in
> memory. Since then parts wait on disk and reads stream 256 KiB blocks. The memory of the current
> model is the section **Memory: peak RSS growth by lanes and part size** below, from a 4 GiB run
> of its own ([memory-4g.md](memory-4g.md), 2026-11-24: lanes 1 to 64 x part
> sizes 16 MiB to 5 GiB where the spool fits, zstd and pgzip, local and S3, every fifo+split cell
> at most +201 MiB);
> 1 GiB runs: [archive/memory-1g.md](archive/memory-1g.md),
> [archive/memory-16-32.md](archive/memory-16-32.md), [archive/memory-64.md](archive/memory-64.md),
> and pgzip in the lanes after the spool's write buffer: [pgzip-in-lane.md](pgzip-in-lane.md).

> **Incremental backups (2026-11-23)**: a delta after 1 % and 10 % of the pages of a 4 GiB data
> set changed, side by side with the full, and the restore of full + 1 and full + 6 deltas
> against the full alone: [incremental.md](incremental.md).

> **Encryption (2026-11-24)**: backup and restore wall and CPU time with
> --split-storage-encryption-key-file against the same storage in the clear, at 2 and 8 lanes:
> [encryption.md](encryption.md).

> **Restoring one table (2026-11-24)**: from a 4 GiB backup on S3, one small table downloads
> 10.8 MiB (0.67 % of the stored backup, counted on the wire) and is restored and exported in
> 1.09 s, against 7.89 s for the whole backup; 1 MiB frames store 0.2 % more:
> [table-restore.md](../table-restore.md).

> **16 cores (2026-12-04, 3 repeats, 4 GiB)**: on a 16-core host, 16 lanes, fifo+split backed up
> in 0.96x the peer's time with pgzip (1.24x before), 0.37-0.47x with zstd and 1.04x with lz4
> (1 GiB), and restored at its ceiling (0.27x the peer); from stdout every backup took 1.5x the
> tool's stream alone, the lanes waiting for the tool: [16-cores.md](16-cores.md).

`

// SVGFor is the chart beside doc: img/<doc's name>-time.svg in doc's folder
// (docs/benchmarks/img/), so that a page other than
// docs/benchmarks/side-by-side.md (BENCH_DOC) never replaces its chart.
func SVGFor(doc string) string {
	return filepath.Join(filepath.Dir(doc), "img", strings.TrimSuffix(filepath.Base(doc), ".md")+"-time.svg")
}

// Render writes docPath, the report of res, and its chart at svgPath.
func Render(res *Results, docPath, svgPath string) error {
	return RenderWith(res, docPath, svgPath, "")
}

// page is a report being written: its text, and the targets its tables
// measure, which the page lists after them.
type page struct {
	b       strings.Builder
	targets []string
}

func (p *page) w(format string, args ...any) { fmt.Fprintf(&p.b, format, args...) }

// config is what one results table holds: a data set on one storage through
// one compressor.
type config struct {
	shape   string
	size    float64
	storage string
	comp    string
}

// RenderWith is Render with a section from elsewhere (a MemoryTable) after
// the results.
func RenderWith(res *Results, docPath, svgPath, section string) error {
	p := &page{}
	gs, order := groups(res.Runs)
	p.header(res)
	p.datasets(res)
	p.ceilings(res)
	p.results(res, gs, order)
	p.w("![backup and restore wall time by engine and lane count](img/%s)\n\n", filepath.Base(svgPath))
	p.sweep(res)
	p.b.WriteString(section)
	p.targetTable()
	p.toolWaits(res, gs, order)
	if filepath.Base(docPath) == "side-by-side.md" {
		// notes.md reads the standard run's figures: not another page's.
		p.b.WriteString(notes)
		p.w("\n")
	}
	p.phaseTables(gs, order)
	if err := os.MkdirAll(filepath.Dir(svgPath), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(svgPath, []byte(chart(res)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(docPath, []byte(p.b.String()), 0o644)
}

// header: the title, the command, the machine and the versions.
func (p *page) header(res *Results) {
	p.w("# Benchmarks: fifo + split side by side with Vitess's xtrabackup engine\n\n")
	p.w("<!-- Generated by go/testutil/benchdata/sidebyside (`make bench`) from build/bench/results.json; edit report.go and notes.md there, not this " +
		"file; re-render with `go run ./go/testutil/benchdata/sidebyside/render`. -->\n\n")
	p.w("Published figures: profile **%s**, started %s, %.0f minutes. Command:\n\n```\n%s\n```\n\n", res.Profile, res.Started, res.Minutes, res.Command)
	p.w("> **The machine is shared and noisy**: other jobs may use the same cores while this runs (see the notes for this run). ")
	p.w("Every figure is the median of the repeats listed; take differences under ~20%% as noise. ")
	p.w("The S3 server (versitygw) runs on the same cores as everything else; there is no network.\n\n")
	p.w("%s", laterMeasurements)
	p.w("## Machine and versions\n\n| | |\n|---|---|\n")
	for _, k := range sortedKeys(res.Machine) {
		p.w("| %s | `%s` |\n", k, res.Machine[k])
	}
	for _, k := range sortedKeys(res.Versions) {
		p.w("| %s | `%s` |\n", k, res.Versions[k])
	}
	for _, k := range sortedKeys(res.Settings) {
		p.w("| %s | %s |\n", k, strings.ReplaceAll(res.Settings[k], "|", "/"))
	}
}

func (p *page) datasets(res *Results) {
	p.w("\n## Data sets\n\nGenerated by `go/testutil/benchdata` (deterministic from the seed; rows mix random bytes, numbers, dates and text; InnoDB " +
		"pages flushed to disk before the first backup).\n\n")
	p.w("| shape | size | bytes on disk | tables | rows | load s | tool stream MB | zstd -1 MB | ratio |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, d := range res.Datasets {
		zstd, ratio := "-", "-" // a run without zstd did not compress it
		if d.ZstdBytes > 0 {
			zstd, ratio = fmt.Sprintf("%.0f", float64(d.ZstdBytes)/1e6), fmt.Sprintf("%.2fx", float64(d.RawBytes)/float64(d.ZstdBytes))
		}
		p.w("| %s | %g GiB | %d MiB | %d | %d | %.0f | %.0f | %s | %s |\n", d.Shape, d.SizeGiB, d.Bytes>>20, d.Tables, d.Rows, d.LoadS,
			float64(d.RawBytes)/1e6, zstd, ratio)
	}

}

func (p *page) ceilings(res *Results) {
	p.w("\n## Ceilings (each part of the path alone, same data, same run)\n\n")
	p.w("| data | ceiling | what | MB | wall s | CPU s | MB/s |\n|---|---|---|---|---|---|---|\n")
	for _, c := range res.Ceilings {
		p.w("| %s %g GiB | %s | %s | %.0f | %.2f | %.2f | %.0f |\n", c.Shape, c.SizeGiB, c.Name, c.What, float64(c.Bytes)/1e6, median(c.Wall), median(c.CPU),
			float64(c.Bytes)/1e6/median(c.Wall))
	}
	p.w("\nThe backup ceiling of a configuration is the slowest of: the tool's stream alone (the faster of tool-devnull and, where measured, tool-pipe), the compressor alone, the storage write alone (a pipeline is " +
		"no faster than its slowest stage), unless the stages together need more CPU than the machine has: then it is their CPU seconds summed over the " +
		"cores (each stage alone had every core to itself; in the pipeline they share them). The runs through the xtrabackup stand-in take the " +
		"stand-in's own stream to /dev/null in place of the tool's where the run measured it (`standin-devnull`): the stand-in is a process of its " +
		"own that parses every chunk and writes it again, a cost real xtrabackup's FIFOs do not have. The restore ceiling is built the same way from the storage " +
		"read alone, decompression alone and writing the stream's files to the restores' disk alone (they overlap in a restore), plus the tool's " +
		"`--prepare` alone, which starts only once every file is written (the faster of the ceiling's prepare and the restores' own Prepare phase: a " +
		"prepare's time depends on the redo its backup holds, and the ceiling's backup is not theirs); it leaves out the move into place (renames on " +
		"one file system). A data set " +
		"measured before writing the files and the prepare were measured alone has no restore ceiling (its restores show `-`): read and decompression " +
		"alone would make any restore look 4-17x slower than it can be.\n")

}

// results: a table per configuration, a row per operation, engine and lane
// count.
func (p *page) results(res *Results, gs map[string]*group, order []string) {
	p.w("\n## Results\n\n")
	p.w("Wall and CPU are medians. CPU = this process (engine, compressor, storage client) + the tools it waited for (mariabackup, mbstream, the " +
		"stand-in); the S3 server's CPU is its own column. ")
	p.w("MB/CPU-s = the tool's uncompressed stream (10^6 bytes) per CPU second. RSS growth: peak RSS of the benchmark process during the run minus its " +
		"RSS just before (the engine, compressors and storage client run in it; VmHWM reset before each run; the baseline, which holds the tablet " +
		"harness and, in the published run, ~400 MB of the ceiling measurements' buffers, is in brackets). Tool RSS: peak of the largest child process " +
		"(the backup tool, mbstream, the stand-in). ")
	p.w("Objects: objects/files the backup added to the store. Requests: HTTP requests seen by the S3 server (through an in-process counting proxy, " +
		"whose CPU is in the process's CPU for both engines). ")
	p.w("vs peer: wall time / Vitess xtrabackup engine's wall at the same N, compressor and storage. vs ceiling: wall / the ceiling above.\n\n")
	var cfgs []config
	seen := map[config]bool{}
	for _, run := range res.Runs {
		k := config{run.Shape, run.SizeGiB, run.Storage, run.Compressor}
		if !seen[k] {
			seen[k] = true
			cfgs = append(cfgs, k)
		}
	}
	for _, c := range cfgs {
		p.w("### %s %g GiB, storage %s, %s level 1\n\n", c.shape, c.size, c.storage, c.comp)
		p.w("| op | engine | N | reps | wall s | CPU s | MB/CPU-s | server CPU s | RSS growth MiB (base) | tool RSS MiB | objects | stored MB | requests | " +
			"vs peer | vs ceiling |\n")
		p.w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, op := range []string{"backup", "restore"} {
			for _, k := range order {
				g := gs[k]
				r0 := g.runs[0]
				if r0.Shape != c.shape || r0.SizeGiB != c.size || r0.Storage != c.storage || r0.Compressor != c.comp || r0.Op != op {
					continue
				}
				p.row(res, gs, c, op, g)
			}
		}
		p.w("\n")
	}
}

// row writes one row of a results table, and the targets it measures.
func (p *page) row(res *Results, gs map[string]*group, c config, op string, g *group) {
	r0 := g.runs[0]
	wall, cpu := g.med(func(r Run) float64 { return r.Wall }), g.med(func(r Run) float64 { return r.CPU })
	peer := gs[groupKey(Run{Shape: r0.Shape, SizeGiB: r0.SizeGiB, Storage: r0.Storage, Compressor: r0.Compressor, Engine: "xtrabackup",
		Lanes: r0.Lanes, Op: op})]
	vsPeer := "-"
	if peer != nil && r0.Engine != "xtrabackup" {
		pw := peer.med(func(r Run) float64 { return r.Wall })
		vsPeer = fmt.Sprintf("%.2fx", wall/pw)
		limit := map[string]float64{"backup": 0.8, "restore": 0.6}[op]
		p.targets = append(p.targets, fmt.Sprintf("| %s at most %.1fx peer | %s %g GiB %s %s, %s N=%d | %.2fx | %s |", op, limit, c.shape, c.size, c.storage,
			c.comp, r0.Engine, r0.Lanes, wall/pw, verdict(wall/pw <= limit, wall/pw, limit)))
	}
	var ceil float64
	var bound string
	if op == "backup" {
		ceil, bound = res.backupCeiling(c.shape, c.size, c.comp, c.storage, r0.Engine)
	} else {
		ceil, bound = res.restoreCeiling(c.shape, c.size, c.comp, c.storage, g.runs)
	}
	vsCeil := "-"
	if ceil > 0 {
		vsCeil = fmt.Sprintf("%.2fx", wall/ceil)
		if r0.Engine != "xtrabackup" {
			p.targets = append(p.targets, fmt.Sprintf("| %s within 1.15x of ceiling | %s %g GiB %s %s, %s N=%d | %.2fx (ceiling %.2fs, %s) | %s |", op, c.shape,
				c.size, c.storage, c.comp, r0.Engine, r0.Lanes, wall/ceil, ceil, bound, verdict(wall/ceil <= 1.15, wall/ceil, 1.15)))
		}
	}
	selfRSS := g.med(func(r Run) float64 { return float64(r.SelfRSS - r.SelfBase) })
	if r0.Engine != "xtrabackup" {
		lim := float64(256 << 20)
		p.targets = append(p.targets, fmt.Sprintf("| peak RSS growth at most %d MiB | %s %g GiB %s %s, %s N=%d %s | +%.0f MiB over a %.0f MiB "+
			"baseline | %s |", int64(lim)>>20, c.shape, c.size, c.storage, c.comp, r0.Engine, r0.Lanes, op, selfRSS/(1<<20),
			g.med(func(r Run) float64 { return float64(r.SelfBase) })/(1<<20), verdict(selfRSS <= lim, selfRSS/lim, 1)))
	}
	req := "-"
	if r0.Requests >= 0 {
		req = fmt.Sprintf("%.0f", g.med(func(r Run) float64 { return float64(r.Requests) }))
	}
	objects := "-"
	if op == "backup" {
		objects = fmt.Sprintf("%.0f", g.med(func(r Run) float64 { return float64(r.Objects) }))
	}
	srvCPU := "-"
	if c.storage == "s3" {
		srvCPU = fmt.Sprintf("%.1f", g.med(func(r Run) float64 { return r.ServerCPU }))
	}
	p.w("| %s | %s | %d | %d | %.1f | %.1f | %.0f | %s | %.0f (%.0f) | %.0f %s | %s | %.0f | %s | %s | %s |\n",
		op, engineLabel(r0.Engine), r0.Lanes, len(g.runs), wall, cpu, float64(r0.RawBytes)/1e6/cpu, srvCPU,
		selfRSS/(1<<20), g.med(func(r Run) float64 { return float64(r.SelfBase) })/(1<<20),
		g.med(func(r Run) float64 { return float64(r.ToolRSS) })/(1<<20), r0.ToolComm, objects,
		g.med(func(r Run) float64 { return float64(r.Stored) })/1e6, req, vsPeer, vsCeil)
}

// sweep: the part-size sweep's table, when the run has one.
func (p *page) sweep(res *Results) {
	if len(res.Sweep) == 0 {
		return
	}
	p.w("## Part-size sweep (fifo+split, source stdout, local disk)\n\n")
	p.w("| data | compressor | part MiB | N | budget MiB | reps | backup wall s | objects | objects per TiB stored | vs 16 MiB | backup RSS growth MiB " +
		"|\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	sg, sorder := groups(res.Sweep)
	// vs 16 MiB: the same backup (data, compressor, lanes) with 16 MiB parts.
	refKey := func(r Run) string { return fmt.Sprintf("%s|%g|%s|%d", r.Shape, r.SizeGiB, r.Compressor, r.Lanes) }
	ref := map[string]float64{}
	layoutTarget := false
	for _, k := range sorder {
		g := sg[k]
		if g.runs[0].PartSize == 16<<20 && g.runs[0].Op == "backup" {
			ref[refKey(g.runs[0])] = g.med(func(r Run) float64 { return r.Wall })
		}
	}
	for _, k := range sorder {
		g := sg[k]
		r0 := g.runs[0]
		if r0.Op == "restore" {
			continue // in the memory table (MemoryTable)
		}
		wall := g.med(func(r Run) float64 { return r.Wall })
		obj := g.med(func(r Run) float64 { return float64(r.Objects) })
		// Per TiB: parts of a TiB of lane data + the per-file and per-backup objects.
		perTiB := math.Ceil(float64(1<<40)/float64(r0.PartSize)) + float64(r0.Lanes+1) + 2
		vs := "-"
		if rw := ref[refKey(r0)]; rw > 0 {
			vs = fmt.Sprintf("%.2fx", wall/rw)
			if r0.PartSize == 256<<20 {
				p.targets = append(p.targets, fmt.Sprintf("| default part at most 1.05x the 16 MiB time | %s %g GiB, %s, N=%d | %.2fx | %s |", r0.Shape, r0.SizeGiB,
					r0.Compressor, r0.Lanes, wall/rw, verdict(wall/rw <= 1.05, wall/rw, 1.05)))
			}
			if r0.PartSize == 256<<20 && !layoutTarget {
				layoutTarget = true // the same for every compressor and lane count
				p.targets = append(p.targets, fmt.Sprintf("| at most 4,096 objects per TiB at the default part | layout | %.0f part objects per TiB (+%d "+
					"index/MANIFEST/marker objects per backup) | %s |", math.Ceil(float64(1<<40)/float64(r0.PartSize)), r0.Lanes+1+2,
					verdict(float64(1<<40)/float64(r0.PartSize) <= 4096, 1, 1)))
			}
		}
		rss := g.med(func(r Run) float64 { return float64(r.SelfRSS - r.SelfBase) })
		p.w("| %s %g GiB | %s | %d | %d | %d | %d | %.1f | %.0f | %.0f | %s | +%.0f |\n", r0.Shape, r0.SizeGiB, r0.Compressor, r0.PartSize>>20, r0.Lanes,
			r0.Budget>>20, len(g.runs), wall, obj, perTiB, vs, rss/(1<<20))
	}
	p.w("\n")
}

func (p *page) targetTable() {
	p.w("## Targets (reported, not asserted)\n\n| target | configuration | measured | verdict |\n|---|---|---|---|\n")
	for _, t := range p.targets {
		p.w("%s\n", t)
	}
	p.w("\n")
}

// toolWaits: for the backups that measured it (since 2026-12-04), what the
// tool and the engine waited for: the CPU, Go's scheduler, the disk; and,
// where the run measured them, the tool alone and beside the codec's work.
func (p *page) toolWaits(res *Results, gs map[string]*group, order []string) {
	head := false
	for _, k := range order {
		g := gs[k]
		r := g.runs[0]
		if r.Op != "backup" || r.Disk == nil {
			continue
		}
		if !head {
			p.w("## What the backups waited for (medians)\n\nThe tool's run queue: seconds its threads waited for a CPU while runnable " +
				"(schedstat, sampled every 50 ms). Goroutines: seconds this process's goroutines waited to run once runnable, summed, and one " +
				"wait's 99th percentile (runtime/metrics). Disk: MB read and written on the machine's disks during the backup, and the busiest " +
				"disk's share of the wall time with I/O in flight (/proc/diskstats). The tool alone: its stream to /dev/null (`tool-devnull`); " +
				"beside the codec: the same while the codec compresses each 8 MiB as the tool writes it, as many goroutines as lanes " +
				"(`tool-beside-<codec>`, runs since 2026-12-04): what sharing the host with the compression costs the tool, whatever the engine. " +
				"Without the tool: the stream file `cat` into the engine's pipe, dealt and compressed as the engine's lanes do (`split-<codec>`): " +
				"how fast the engine's path goes when the tool is not the bound.\n\n")
			p.w("| data | storage | codec | engine | N | wall s | tool alone s | tool beside the codec s | without the tool s | tool's run queue s | " +
				"goroutines' wait s | p99 ms | disk read MB | disk written MB | busiest disk |\n")
			p.w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
			head = true
		}
		disk := func(f func(diskUse) float64) float64 {
			return g.med(func(r Run) float64 {
				if r.Disk == nil {
					return 0
				}
				return f(*r.Disk)
			})
		}
		ceilingWall := func(name string) string {
			if c := res.ceiling(r.Shape, r.SizeGiB, name); c != nil {
				return fmt.Sprintf("%.1f", median(c.Wall))
			}
			return "-"
		}
		p.w("| %s %g GiB | %s | %s | %s | %d | %.1f | %s | %s | %s | %.2f | %.2f | %.1f | %.0f | %.0f | %.0f%% |\n", r.Shape, r.SizeGiB, r.Storage,
			r.Compressor, r.Engine, r.Lanes, g.med(func(r Run) float64 { return r.Wall }), ceilingWall("tool-devnull"),
			ceilingWall("tool-beside-"+r.Compressor), ceilingWall("split-"+r.Compressor),
			g.med(func(r Run) float64 { return r.ToolRunQueue }),
			g.med(func(r Run) float64 { return r.GoSchedWait }), 1e3*g.med(func(r Run) float64 { return r.GoSchedP99 }),
			disk(func(d diskUse) float64 { return d.ReadMB }), disk(func(d diskUse) float64 { return d.WriteMB }),
			100*disk(func(d diskUse) float64 { return d.Busy }))
	}
	if head {
		p.w("\n")
	}
}

// phaseTables: the fifo engine's own per-phase table of the last repeat of
// each fifo run.
func (p *page) phaseTables(gs map[string]*group, order []string) {
	p.w("## Where the time goes (the fifo engine's own per-phase table, last repeat)\n\nSeconds are busy time summed over lanes; `Source:Read` on " +
		"backup is time waiting for the tool.\n\n")
	for _, k := range order {
		g := gs[k]
		r := g.runs[len(g.runs)-1]
		if r.PhaseTable == "" {
			continue
		}
		p.w("<details><summary>%s %g GiB %s %s %s N=%d %s</summary>\n\n```\n%s```\n</details>\n\n", r.Shape, r.SizeGiB, r.Storage, r.Compressor, r.Engine,
			r.Lanes, r.Op, strings.TrimRight(r.PhaseTable, "\n")+"\n")
	}
}

func verdict(ok bool, got, limit float64) string {
	if ok {
		return "met"
	}
	return fmt.Sprintf("**missed** by %.0f%%", (got/limit-1)*100)
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// chart draws grouped bars: for each (storage, lane count) one group, one
// bar per engine, backup and restore side by side (restore hatched lighter).
func chart(res *Results) string {
	gs, order := groups(res.Runs)
	type bar struct {
		engine string
		op     string
		wall   float64
	}
	type grp struct {
		title string
		bars  []bar
	}
	var groupsOut []grp
	idx := map[string]int{}
	for _, k := range order {
		g := gs[k]
		r := g.runs[0]
		gk := fmt.Sprintf("%s %g GiB, %s, %s, N=%d", r.Shape, r.SizeGiB, r.Storage, r.Compressor, r.Lanes)
		i, ok := idx[gk]
		if !ok {
			i = len(groupsOut)
			idx[gk] = i
			groupsOut = append(groupsOut, grp{title: gk})
		}
		groupsOut[i].bars = append(groupsOut[i].bars, bar{engine: r.Engine, op: r.Op, wall: g.med(func(r Run) float64 { return r.Wall })})
	}
	maxWall := 1.0
	for _, g := range groupsOut {
		for _, b := range g.bars {
			maxWall = math.Max(maxWall, b.wall)
		}
	}
	colors := map[string]string{"xtrabackup": "#999999", "fifo-stdout": "#1f77b4", "fifo-fifo-standin": "#2ca02c"}
	const barW, gap, left, top, plotH = 18, 40, 60, 40, 260
	width := left + 20
	for _, g := range groupsOut {
		width += len(g.bars)*barW + gap
	}
	width = max(width, 960)
	height := top + plotH + 150
	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&s, `<text x="%d" y="18" font-size="14">Wall seconds (median), backup (solid) and restore (light), by engine and lane count (profile `+
		`%s, shared 2-core VM)</text>`+"\n", left, res.Profile)
	step := niceStep(maxWall)
	for v := 0.0; v <= maxWall+step/2; v += step {
		y := float64(top+plotH) - v/maxWall*plotH
		if y < top-1 {
			break
		}
		fmt.Fprintf(&s, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", left, width-10,
			y, y, left-5, y+4, v)
	}
	x := left + 10
	for _, g := range groupsOut {
		x0 := x
		for _, b := range g.bars {
			h := b.wall / maxWall * plotH
			op := 1.0
			if b.op == "restore" {
				op = 0.45
			}
			fmt.Fprintf(&s, `<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="%s" fill-opacity="%.2f"><title>%s %s %.1fs</title></rect>`+"\n", x,
				float64(top+plotH)-h, barW-2, h, colors[b.engine], op, b.engine, b.op, b.wall)
			fmt.Fprintf(&s, `<text x="%d" y="%.1f" font-size="9" text-anchor="middle">%.0f</text>`+"\n", x+barW/2-1, float64(top+plotH)-h-3, b.wall)
			x += barW
		}
		fmt.Fprintf(&s, `<text transform="translate(%d,%d) rotate(30)">%s</text>`+"\n", x0, top+plotH+14, g.title)
		x += gap
	}
	ly := height - 20
	lx := left
	for _, e := range []string{"xtrabackup", "fifo-stdout", "fifo-fifo-standin"} {
		fmt.Fprintf(&s, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", lx, ly-10, colors[e], lx+16, ly,
			strings.NewReplacer("**", "").Replace(engineLabel(e))+" N")
		lx += 300
	}
	s.WriteString("</svg>\n")
	return s.String()
}

func niceStep(max float64) float64 {
	raw := max / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return raw
}
