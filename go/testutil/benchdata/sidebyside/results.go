// Package sidebyside measures the fifo engine with the split storage side by side
// with Vitess's xtrabackup engine, and against the ceilings of the machine
// (the backup tool alone, the compressor alone, the storage alone). The
// benchmark itself is bench_test.go (it needs a real MariaDB); this file
// holds the results it writes as JSON and report.go renders
// docs/benchmarks/side-by-side.md and the chart from them.
package sidebyside

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Run is one timed backup or restore.
type Run struct {
	Shape      string  `json:"shape"`
	SizeGiB    float64 `json:"size_gib"`
	Storage    string  `json:"storage"` // local | s3
	Compressor string  `json:"compressor"`
	Engine     string  `json:"engine"` // xtrabackup | fifo-stdout | fifo-fifo-standin
	Lanes      int     `json:"lanes"`
	Op         string  `json:"op"` // backup | restore
	Rep        int     `json:"rep"`
	PartSize   int64   `json:"part_size,omitempty"`
	Budget     int64   `json:"budget,omitempty"`

	Wall      float64 `json:"wall_s"`
	CPU       float64 `json:"cpu_s"`        // this process + waited-for children (tool, mbstream)
	ServerCPU float64 `json:"server_cpu_s"` // the local S3 server's CPU (not in CPU)
	RawBytes  int64   `json:"raw_bytes"`    // the tool's uncompressed stream
	Stored    int64   `json:"stored_bytes"` // bytes of the backup's objects
	Objects   int     `json:"objects"`
	Requests  int64   `json:"requests"` // S3 HTTP requests (-1: not counted)
	SelfRSS   int64   `json:"self_peak_rss"`
	SelfBase  int64   `json:"self_base_rss"`
	ToolRSS   int64   `json:"tool_peak_rss"`
	ToolComm  string  `json:"tool_comm"`
	// Where a backup's tool may be held back (since 2026-12-04): how long its
	// threads waited for a CPU, and how long this process's goroutines waited
	// to run once runnable (summed; and the 99th percentile of one wait).
	ToolRunQueue float64  `json:"tool_runqueue_s,omitempty"`
	GoSchedWait  float64  `json:"go_sched_wait_s,omitempty"`
	GoSchedP99   float64  `json:"go_sched_p99_s,omitempty"`
	Disk         *diskUse `json:"disk,omitempty"`        // what the disks did during the run
	PhaseTable   string   `json:"phase_table,omitempty"` // the fifo engine's own per-phase table
}

// Ceiling is one measurement of a part of the path alone.
type Ceiling struct {
	Shape   string    `json:"shape"`
	SizeGiB float64   `json:"size_gib"`
	Name    string    `json:"name"` // tool-devnull | compress-zstd | decompress-zstd | storage-write-local | ...
	What    string    `json:"what"`
	Bytes   int64     `json:"bytes"`
	Wall    []float64 `json:"wall_s"`
	CPU     []float64 `json:"cpu_s"`
}

// Dataset is one loaded data set.
type Dataset struct {
	Shape     string  `json:"shape"`
	SizeGiB   float64 `json:"size_gib"`
	Bytes     int64   `json:"bytes"`
	Tables    int     `json:"tables"`
	Rows      int64   `json:"rows"`
	LoadS     float64 `json:"load_s"`
	RawBytes  int64   `json:"raw_bytes"`  // the tool's stream
	ZstdBytes int64   `json:"zstd_bytes"` // that stream through zstd level 1
}

// Results is everything one benchmark run measured.
type Results struct {
	Profile  string            `json:"profile"`
	Command  string            `json:"command"`
	Started  string            `json:"started"`
	Minutes  float64           `json:"minutes"`
	Machine  map[string]string `json:"machine"`
	Versions map[string]string `json:"versions"`
	Settings map[string]string `json:"settings"`
	Datasets []Dataset         `json:"datasets"`
	Runs     []Run             `json:"runs"`
	Sweep    []Run             `json:"sweep"`
	Ceilings []Ceiling         `json:"ceilings"`
}

// Load reads results written by the benchmark.
func Load(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	return &r, json.Unmarshal(b, &r)
}

// Save writes r as indented JSON.
func (r *Results) Save(path string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Merge replaces in r every data set that later measured too (its data set
// row, runs, sweep and ceilings) by later's, and records that in the
// settings: a data set re-run on a quieter machine replaces the noisy one.
func (r *Results) Merge(later *Results) {
	replaced := func(shape string, size float64) bool {
		for _, d := range later.Datasets {
			if d.Shape == shape && d.SizeGiB == size {
				return true
			}
		}
		return false
	}
	keepRuns := func(runs []Run) []Run {
		var out []Run
		for _, x := range runs {
			if !replaced(x.Shape, x.SizeGiB) {
				out = append(out, x)
			}
		}
		return out
	}
	// Data sets keep their place; the figures follow their data set's order.
	var ds []Dataset
	for _, d := range r.Datasets {
		if !replaced(d.Shape, d.SizeGiB) {
			ds = append(ds, d)
			continue
		}
		for _, l := range later.Datasets {
			if l.Shape == d.Shape && l.SizeGiB == d.SizeGiB {
				ds = append(ds, l)
			}
		}
	}
	for _, l := range later.Datasets {
		if !slices.ContainsFunc(ds, func(d Dataset) bool { return d.Shape == l.Shape && d.SizeGiB == l.SizeGiB }) {
			ds = append(ds, l)
		}
	}
	place := func(shape string, size float64) int {
		return slices.IndexFunc(ds, func(d Dataset) bool { return d.Shape == shape && d.SizeGiB == size })
	}
	byPlace := func(runs []Run) []Run {
		slices.SortStableFunc(runs, func(a, b Run) int { return place(a.Shape, a.SizeGiB) - place(b.Shape, b.SizeGiB) })
		return runs
	}
	var cs []Ceiling
	for _, c := range r.Ceilings {
		if !replaced(c.Shape, c.SizeGiB) {
			cs = append(cs, c)
		}
	}
	cs = append(cs, later.Ceilings...)
	slices.SortStableFunc(cs, func(a, b Ceiling) int { return place(a.Shape, a.SizeGiB) - place(b.Shape, b.SizeGiB) })
	r.Datasets = ds
	r.Runs = byPlace(append(keepRuns(r.Runs), later.Runs...))
	r.Sweep = byPlace(append(keepRuns(r.Sweep), later.Sweep...))
	r.Ceilings = cs
	var names []string
	for _, d := range later.Datasets {
		names = append(names, fmt.Sprintf("%s %g GiB", d.Shape, d.SizeGiB))
	}
	if r.Settings == nil {
		r.Settings = map[string]string{}
	}
	r.Settings["re-run"] = strings.TrimSpace(r.Settings["re-run"] + fmt.Sprintf(" %s measured again from %s (%.0f minutes, `%s`), "+
		"replacing the first run's figures.",
		strings.Join(names, ", "), later.Started, later.Minutes, later.Command))
	r.Minutes += later.Minutes
}
