package sidebyside

import (
	"fmt"
	"slices"
	"strings"
)

// memoryLimit is the peak RSS growth a fifo+split backup or restore must
// stay under, at any lane count and part size (issue 13).
const memoryLimit = 256 << 20

// MemoryTable renders the memory run mem as a section of another page (the
// figures of docs/benchmarks/side-by-side.md come from a different run): the peak RSS
// growth of every backup and restore, fifo+split beside Vitess's
// xtrabackup engine at the same lanes with the wall-time ratio, then the
// part-size sweep. detail is the memory run's own page ("": this is it).
func MemoryTable(mem *Results, detail string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	mib := func(g *group) float64 {
		if g == nil {
			return -1
		}
		return g.med(func(r Run) float64 { return float64(r.SelfRSS - r.SelfBase) }) / (1 << 20)
	}
	cell := func(v float64) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprintf("+%.0f", v)
	}
	wall := func(g *group) float64 { return g.med(func(r Run) float64 { return r.Wall }) }

	w("## Memory: peak RSS growth by lanes and part size (one run)\n\n")
	if detail == "" { // the memory run's own page
		w("From this page's run: every backup and restore's growth, the restores' included.\n\n")
	} else {
		w("From one run of its own, not the run above: profile %s, started %s, %.0f minutes; every figure, the wall times and the run's notes are in "+
			"[%s](%s). Command:\n\n```\n%s\n```\n\n", mem.Profile, mem.Started, mem.Minutes, detail, detail, mem.Command)
	}
	w("Peak RSS growth of the benchmark process (MiB over its RSS just before; the engine, compressors and storage client run in it), median of the "+
		"repeats; the target is at most %d MiB for every fifo+split cell. vs peer: wall time / the peer's at the same lanes, compressor and storage.\n\n",
		memoryLimit>>20)
	w("| data | storage | compressor | N | backup fifo+split | backup peer | backup vs peer | restore fifo+split | restore peer | restore vs peer |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n")
	// The peer's runs have no part size: a cell is found by everything else.
	type row struct {
		shape, storage, comp string
		size                 float64
		lanes                int
	}
	type cellKey struct {
		row
		engine, op string
	}
	cells := map[cellKey]*group{}
	var rows []row
	gs, order := groups(mem.Runs)
	for _, k := range order {
		r := gs[k].runs[0]
		x := row{r.Shape, r.Storage, r.Compressor, r.SizeGiB, r.Lanes}
		if !slices.Contains(rows, x) {
			rows = append(rows, x)
		}
		cells[cellKey{x, r.Engine, r.Op}] = gs[k]
	}
	worst, measured := 0.0, 0
	for _, x := range rows {
		get := func(engine, op string) *group { return cells[cellKey{x, engine, op}] }
		w("| %s %g GiB | %s | %s | %d", x.shape, x.size, x.storage, x.comp, x.lanes)
		for _, op := range []string{"backup", "restore"} {
			fifo, peer := get("fifo-stdout", op), get("xtrabackup", op)
			ratio := "-"
			if fifo != nil && peer != nil {
				ratio = fmt.Sprintf("%.2fx", wall(fifo)/wall(peer))
			}
			if fifo != nil {
				worst, measured = max(worst, mib(fifo)), measured+1
			}
			w(" | %s | %s | %s", cell(mib(fifo)), cell(mib(peer)), ratio)
		}
		w(" |\n")
	}
	if len(mem.Sweep) > 0 {
		w("\nPart-size sweep (fifo+split, source stdout, local disk): the same backup and its restore with each part size.\n\n")
		w("| data | compressor | N | part MiB | backup | restore | objects |\n|---|---|---|---|---|---|---|\n")
		sg, sorder := groups(mem.Sweep)
		for _, k := range sorder {
			g := sg[k]
			r := g.runs[0]
			if r.Op == "restore" {
				continue
			}
			restore := sg[groupKey(Run{Shape: r.Shape, SizeGiB: r.SizeGiB, Storage: r.Storage, Compressor: r.Compressor, Engine: r.Engine, Lanes: r.Lanes,
				Op: "restore", PartSize: r.PartSize})]
			if restore != nil {
				worst, measured = max(worst, mib(restore)), measured+1
			}
			worst, measured = max(worst, mib(g)), measured+1
			w("| %s %g GiB | %s | %d | %d | %s | %s | %.0f |\n", r.Shape, r.SizeGiB, r.Compressor, r.Lanes, r.PartSize>>20, cell(mib(g)), cell(mib(restore)),
				g.med(func(r Run) float64 { return float64(r.Objects) }))
		}
	}
	w("\nLargest fifo+split cell: +%.0f MiB of %d (%s).\n\n", worst, measured, verdict(worst <= memoryLimit>>20, worst/float64(memoryLimit>>20), 1))
	return b.String()
}
