package sidebyside

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	_ "vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"
	_ "vitess.io/vitess/go/vt/mysqlctl/s3backupstorage"
	"vitess.io/vitess/go/vt/servenv"

	"github.com/vtfifo/vtfifo/go/testutil/benchdata"
	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/testutil/tabletdb"
	"github.com/vtfifo/vtfifo/go/testutil/testbin"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/go/vt/vtversion"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

const (
	keyspace = "ks"
	shard    = "0"
	database = "bench"
)

var standinPath string

func TestMain(m *testing.M) { testbin.Main(m, testbin.Standin(&standinPath)) }

// profile is what one benchmark run covers.
type profile struct {
	Name        string
	SizesMiB    []int
	Shapes      []string
	Lanes       []int
	S3Lanes     []int
	Repeat      int
	Compressors []string
	Storages    []string
	PartsMiB    []int
	SweepSizes  []int // MiB; data sets the part-size sweep runs on
	SweepRepeat int
	SweepLanes  []int
	Seed        uint64
	// ToolParallel is the tool's --parallel (copy threads) in every engine
	// and ceiling: BENCH_TOOL_PARALLEL, default 4 (the engines' default).
	ToolParallel int
	// StorageDir holds the local storages and the split storage's spool
	// (BENCH_STORAGE_DIR; "": beside the tablet, on its disk).
	StorageDir string
	// Plans, when set, replaces the product of the lists above: what runs on
	// each data set (the standard profile picks a matrix 2 cores finish in
	// about an hour).
	Plans []dataPlan
}

// dataPlan is what runs on one data set.
type dataPlan struct {
	Shape string
	MiB   int
	Runs  []planRun
	Sweep bool
}

// planRun compares the engines at each lane count with one storage and compressor.
type planRun struct {
	Storage, Compressor string
	Lanes               []int
}

// plans returns p.Plans, or the product of the profile's lists.
func (p profile) plans() []dataPlan {
	if p.Plans != nil {
		return p.Plans
	}
	var out []dataPlan
	for _, shape := range p.Shapes {
		for _, mib := range p.SizesMiB {
			d := dataPlan{Shape: shape, MiB: mib, Sweep: contains(p.SweepSizes, mib)}
			for _, st := range p.Storages {
				lanes := p.Lanes
				if st == "s3" {
					lanes = p.S3Lanes
				}
				for _, comp := range p.Compressors {
					d.Runs = append(d.Runs, planRun{Storage: st, Compressor: comp, Lanes: lanes})
				}
			}
			out = append(out, d)
		}
	}
	return out
}

// String says what the profile runs, for the report.
func (p profile) String() string {
	var ds []string
	for _, d := range p.plans() {
		var rs []string
		for _, r := range d.Runs {
			rs = append(rs, fmt.Sprintf("%s %s N=%s", r.Storage, r.Compressor, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(r.Lanes)), ","), "[]")))
		}
		if d.Sweep {
			rs = append(rs, "part-size sweep")
		}
		ds = append(ds, fmt.Sprintf("%s %d MiB (%s)", d.Shape, d.MiB, strings.Join(rs, "; ")))
	}
	return fmt.Sprintf("%s: %d repeats; sweep parts %v MiB, N=%v, %d repeats; seed %d; data sets: %s",
		p.Name, p.Repeat, p.PartsMiB, p.SweepLanes, p.SweepRepeat, p.Seed, strings.Join(ds, "; "))
}

// compressors, storages and maxLanes(storage) of one data set's plan: what its ceilings measure.
func (d dataPlan) compressors() (out []string) {
	for _, r := range d.Runs {
		if !contains(out, r.Compressor) {
			out = append(out, r.Compressor)
		}
	}
	return out
}

func (d dataPlan) storages() (out []string) {
	for _, r := range d.Runs {
		if !contains(out, r.Storage) {
			out = append(out, r.Storage)
		}
	}
	return out
}

func (d dataPlan) maxLanes(storage string) int {
	m := 0
	for _, r := range d.Runs {
		if r.Storage == storage {
			m = max(m, slicesMax(r.Lanes))
		}
	}
	return m
}

func profileFromEnv() profile {
	all := []int{1, 2, 4, 8}
	parts := []int{8, 16, 64, 256, 1024}
	p := profile{ // full: every combination, for bigger machines (hours on 2 cores)
		Name: "full", SizesMiB: []int{1024, 4096}, Shapes: []string{"many", "giant", "mixed"},
		Lanes: all, S3Lanes: all, Repeat: 3,
		Compressors: []string{"zstd", "pgzip"}, Storages: []string{"local", "s3"},
		PartsMiB: parts, SweepSizes: []int{1024, 4096}, SweepRepeat: 3, SweepLanes: []int{2}, Seed: 1,
	}
	switch os.Getenv("BENCH_PROFILE") {
	case "quick": // 1 GiB mixed, ~10 minutes: a smoke run
		p = profile{
			Name: "quick", SizesMiB: []int{1024}, Shapes: []string{"mixed"},
			Lanes: []int{1, 2}, S3Lanes: []int{2}, Repeat: 3,
			Compressors: []string{"zstd"}, Storages: []string{"local", "s3"},
			PartsMiB: parts, SweepSizes: []int{1024}, SweepRepeat: 1, SweepLanes: []int{2}, Seed: 1,
		}
	case "", "standard": // every axis of the issue, not every product: ~75 minutes on 2 cores
		zstd := func(st string, lanes ...int) planRun { return planRun{Storage: st, Compressor: "zstd", Lanes: lanes} }
		p.Name = "standard"
		p.Plans = []dataPlan{
			{Shape: "mixed", MiB: 1024, Sweep: true, Runs: []planRun{
				zstd("local", all...), {Storage: "local", Compressor: "pgzip", Lanes: []int{2}}, zstd("s3", all...)}},
			{Shape: "many", MiB: 1024, Runs: []planRun{zstd("local", 2, 8)}},
			{Shape: "giant", MiB: 1024, Runs: []planRun{zstd("local", 2, 8)}},
			{Shape: "mixed", MiB: 4096, Sweep: true, Runs: []planRun{zstd("local", 2, 8)}},
		}
	}
	ints := func(env string, dst *[]int) {
		if v := os.Getenv(env); v != "" {
			*dst = nil
			for _, s := range strings.Split(v, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n <= 0 {
					panic(fmt.Sprintf("%s: bad value %q", env, v))
				}
				*dst = append(*dst, n)
			}
		}
	}
	strs := func(env string, dst *[]string) {
		if v := os.Getenv(env); v != "" {
			*dst = strings.Split(v, ",")
		}
	}
	for _, env := range []string{"BENCH_SIZES_MIB", "BENCH_LANES", "BENCH_S3_LANES", "BENCH_SWEEP_SIZES_MIB", "BENCH_SHAPES", "BENCH_COMPRESSORS",
		"BENCH_STORAGES"} {
		if os.Getenv(env) != "" {
			p.Plans = nil // the lists, overridden, say what runs
		}
	}
	if v := os.Getenv("BENCH_PLANS"); v != "" { // e.g. mixed-1024: re-run some data sets of the profile
		var keep []dataPlan
		for _, d := range p.plans() {
			if slices.Contains(strings.Split(v, ","), fmt.Sprintf("%s-%d", d.Shape, d.MiB)) {
				keep = append(keep, d)
			}
		}
		if len(keep) == 0 {
			panic(fmt.Sprintf("BENCH_PLANS: no data set of profile %s is named in %q (shape-MiB, e.g. mixed-1024)", p.Name, v))
		}
		p.Plans = keep
	}
	ints("BENCH_SIZES_MIB", &p.SizesMiB)
	ints("BENCH_LANES", &p.Lanes)
	ints("BENCH_S3_LANES", &p.S3Lanes)
	ints("BENCH_PART_SIZES_MIB", &p.PartsMiB)
	ints("BENCH_SWEEP_SIZES_MIB", &p.SweepSizes)
	strs("BENCH_SHAPES", &p.Shapes)
	strs("BENCH_COMPRESSORS", &p.Compressors)
	strs("BENCH_STORAGES", &p.Storages)
	if v, err := strconv.Atoi(os.Getenv("BENCH_REPEAT")); err == nil && v > 0 {
		p.Repeat = v
	}
	if v, err := strconv.Atoi(os.Getenv("BENCH_SWEEP_REPEAT")); err == nil && v > 0 {
		p.SweepRepeat = v
	}
	ints("BENCH_SWEEP_LANES", &p.SweepLanes)
	if v, err := strconv.ParseUint(os.Getenv("BENCH_SEED"), 10, 64); err == nil {
		p.Seed = v
	}
	p.StorageDir = os.Getenv("BENCH_STORAGE_DIR")
	p.ToolParallel = 4
	if v := os.Getenv("BENCH_TOOL_PARALLEL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 256 {
			panic(fmt.Sprintf("BENCH_TOOL_PARALLEL: %q is not 1..256", v))
		}
		p.ToolParallel = n
	}
	for _, d := range p.plans() {
		if int64(d.MiB)<<20 > benchdata.MaxBytes {
			panic("BENCH_SIZES_MIB: at most 32768")
		}
	}
	if os.Getenv("BENCH_PROFILE") != "" && os.Getenv("BENCH_PROFILE") != p.Name {
		p.Name = os.Getenv("BENCH_PROFILE")
	}
	return p
}

// BenchmarkSideBySide is `make bench`. See docs/benchmarks/README.md.
//
//	BENCH_PROFILE=quick go test -run '^$' -bench SideBySide -benchtime 1x -timeout 0 ./bench/
func BenchmarkSideBySide(b *testing.B) {
	p := profileFromEnv()
	outDir := envOr("BENCH_OUT", filepath.Join(splitstoragetest.RepoRoot(), "build", "bench"))
	require.NoError(b, os.MkdirAll(filepath.Join(outDir, "logs"), 0o755))
	res := &Results{
		Profile: p.Name, Started: time.Now().UTC().Format(time.RFC3339),
		Command:  envOr("BENCH_COMMAND", "BENCH_PROFILE="+p.Name+" make bench"),
		Machine:  machineInfo(),
		Versions: versions(),
		Settings: map[string]string{
			"profile":      p.String(),
			"tool":         fmt.Sprintf("mariabackup --backup --stream=xbstream --parallel=%d for every engine", p.ToolParallel),
			"split":        "part 256 MiB, parts spooled to $TMPDIR, upload concurrency 4, read budget 64 MiB, read-ahead 8 MiB (flag defaults)",
			"peer storage": "Vitess file storage (local) / Vitess s3 storage (s3), same disk / same versitygw",
		},
	}
	start := time.Now()
	save := func() {
		res.Minutes = time.Since(start).Minutes()
		require.NoError(b, res.Save(filepath.Join(outDir, "results.json")))
	}

	// Registering Vitess's flags resets their variables: do it first.
	fs := servenv.GetFlagSetFor("vttablet")
	rootPath := b.TempDir()
	require.NoError(b, os.Symlink("/usr/bin/mariabackup", filepath.Join(rootPath, "xtrabackup")))
	require.NoError(b, os.Symlink("/usr/bin/mbstream", filepath.Join(rootPath, "xbstream")))

	var s3srv *splitstoragetest.Server
	var proxy *splitstoragetest.FaultProxy
	if slices.ContainsFunc(p.plans(), func(d dataPlan) bool { return contains(d.storages(), "s3") }) {
		s3srv = splitstoragetest.StartS3(b)
		s3srv.Setenv(b)
		// Vitess's s3 storage hands the SDK a plain *http.Client, which the
		// SDK refuses to combine with a custom CA bundle from the environment
		// (irrelevant for a plain-HTTP local server).
		if v, ok := os.LookupEnv("AWS_CA_BUNDLE"); ok {
			os.Unsetenv("AWS_CA_BUNDLE")
			b.Cleanup(func() { os.Setenv("AWS_CA_BUNDLE", v) })
		}
		proxy = splitstoragetest.NewFaultProxy(b, s3srv.Addr)
		s3srv = s3srv.WithProxy(proxy)
	}

	for _, d := range p.plans() {
		b.Run(fmt.Sprintf("%s-%dMiB", d.Shape, d.MiB), func(b *testing.B) {
			e := &env{b: b, p: p, plan: d, res: res, fs: fs, rootPath: rootPath, s3: s3srv, proxy: proxy, outDir: outDir,
				shape: d.Shape, sizeGiB: float64(d.MiB) / 1024}
			e.setUp(int64(d.MiB) << 20)
			save()
			e.ceilings()
			save()
			for _, r := range d.Runs {
				for _, n := range r.Lanes {
					e.compare(r.Storage, r.Compressor, n)
					save()
				}
			}
			if d.Sweep {
				e.sweep()
				save()
			}
		})
	}
	save()
	doc := envOr("BENCH_DOC", filepath.Join(splitstoragetest.RepoRoot(), "docs", "benchmarks", "side-by-side.md"))
	if doc != "-" {
		require.NoError(b, Render(res, doc, SVGFor(doc)))
		fmt.Println("wrote", doc)
	}
}

type env struct {
	b        *testing.B
	p        profile
	plan     dataPlan
	res      *Results
	fs       interface{ Parse([]string) error }
	rootPath string
	s3       *splitstoragetest.Server
	proxy    *splitstoragetest.FaultProxy
	outDir   string

	shape   string
	sizeGiB float64
	tb      *tabletdb.Tablet
	storage string // where the local storages live: the tablet's root or a directory of ours under BENCH_STORAGE_DIR
	raw     int64  // the tool's stream bytes
}

func (e *env) setUp(bytes int64) {
	b := e.b
	e.tb = tabletdb.Start(b)
	e.storage = e.tb.Root
	if e.p.StorageDir != "" { // a directory of this run's own there, removed with it
		d, err := os.MkdirTemp(e.p.StorageDir, "sidebyside-")
		require.NoError(b, err)
		b.Cleanup(func() { os.RemoveAll(d) })
		e.storage = d
	}
	srv := mariadbtest.Attach(b, e.tb.Cnf.SocketFile, e.tb.Cnf.DataDir, "vt_dba", "")
	ctx := context.Background()
	sh, err := benchdata.ParseShape(e.shape)
	require.NoError(b, err)
	logf("loading %s %.0f MiB", e.shape, float64(bytes)/(1<<20))
	rep, err := benchdata.Load(ctx, srv.DB(), benchdata.Options{Shape: sh, Bytes: bytes, Seed: e.p.Seed, Database: database, DataDir: e.tb.Cnf.DataDir, Log: logf})
	require.NoError(b, err)
	// The load skips the binary log; Vitess wants a GTID position in the backup.
	srv.Exec(b, "CREATE TABLE `"+database+"`.gtid_marker (id INT PRIMARY KEY) ENGINE=InnoDB")
	srv.Exec(b, "INSERT INTO `"+database+"`.gtid_marker VALUES (1)")
	// Every backup, of the ceilings and of the runs, then starts from the
	// same checkpoint: without it the first ones carried the load's redo
	// and later ones less, and the prepare ceiling, taken at one moment,
	// varied 0.05-0.38 s from run to run while the restores' own prepares
	// did not (docs/benchmarks/every-codec.md).
	mariadbtest.Checkpoint(b, srv.DB())
	logf("loaded %d MiB (%d tables, %d rows) in %v", rep.Bytes>>20, rep.Tables, rep.Rows, rep.Duration.Round(time.Second))
	e.res.Datasets = append(e.res.Datasets, Dataset{Shape: e.shape, SizeGiB: e.sizeGiB, Bytes: rep.Bytes, Tables: rep.Tables, Rows: rep.Rows,
		LoadS: rep.Duration.Seconds()})
}

func (e *env) dataset() *Dataset {
	for i := range e.res.Datasets {
		d := &e.res.Datasets[i]
		if d.Shape == e.shape && d.SizeGiB == e.sizeGiB {
			return d
		}
	}
	panic("no dataset")
}

func (e *env) toolArgs() []string {
	return []string{"--defaults-file=" + e.tb.Cnf.Path, "--backup", "--stream=xbstream", fmt.Sprintf("--parallel=%d", e.p.ToolParallel),
		"--user=vt_dba", "--socket=" + e.tb.Cnf.SocketFile, "--target-dir=" + e.b.TempDir()}
}

func (e *env) addCeiling(name, what string, bytes int64, walls, cpus []float64) {
	e.res.Ceilings = append(e.res.Ceilings, Ceiling{Shape: e.shape, SizeGiB: e.sizeGiB, Name: name, What: what, Bytes: bytes, Wall: walls, CPU: cpus})
	logf("ceiling %-22s %8.2fs wall %8.2fs cpu  %7.1f MB/s", name, median(walls), median(cpus), float64(bytes)/1e6/median(walls))
}

// ceilings measures the parts of the path alone, on the same data.
func (e *env) ceilings() {
	b := e.b
	// 1. The tool's stream to /dev/null (the file itself: writing costs the
	// tool nothing), and through the pipe the engine reads, taken in turns
	// so that neither is always the first after the load.
	var walls, cpus, pipeWalls, pipeCPUs []float64
	for range e.p.Repeat {
		w, c, disk := e.toolToDevNull()
		walls, cpus = append(walls, w), append(cpus, c)
		logf("tool to /dev/null: %.2fs, %s", w, disk)
		w, c = e.toolThroughPipe()
		pipeWalls, pipeCPUs = append(pipeWalls, w), append(pipeCPUs, c)
	}
	e.dataset().RawBytes = e.raw
	e.addCeiling("tool-devnull", fmt.Sprintf("mariabackup --backup --stream=xbstream --parallel=%d > /dev/null", e.p.ToolParallel), e.raw, walls, cpus)
	e.addCeiling("tool-pipe", "the same into the pipe the engine gives the tool's stdout (fifobackupengine.StdoutPipe), read and dropped", e.raw, pipeWalls, pipeCPUs)
	n := 0
	for _, st := range e.plan.storages() {
		n = max(n, e.plan.maxLanes(st))
	}
	if n > 1 && slices.Contains(benchEngines(), engFIFO) {
		walls, cpus = nil, nil
		for range e.p.Repeat {
			w, c := e.standinDevNull(n)
			walls, cpus = append(walls, w), append(cpus, c)
		}
		e.addCeiling("standin-devnull", fmt.Sprintf("the xtrabackup stand-in (mariabackup's stream parsed and dealt to %d FIFOs, as the engine runs it), "+
			"each FIFO read and dropped as the engine reads it (its pipe grown, 1 MiB reads)", n), e.raw, walls, cpus)
	}

	// One stream kept in a file for the other ceilings, which read it
	// mapped, from the page cache, as the engines read the tool's pipe.
	// Held in the heap instead, a 4 GiB data set's 5.9 GB stream and its
	// compressed copies left the page cache a few GB: the compressors'
	// CPU varied 2x between attempts, and writing the files alone cost
	// more than the engine's whole restore.
	streamPath := filepath.Join(e.tb.Root, "ceiling-stream")
	f, err := os.Create(streamPath)
	require.NoError(b, err)
	cmd, stderr := e.toolCmd(f)
	require.NoError(b, cmd.Run(), "mariabackup: %s", tailOf(stderr.String()))
	require.NoError(b, f.Close())
	defer os.Remove(streamPath)
	stream, unmap := mapFile(b, streamPath)
	defer unmap()

	// 2. What every restore does after reading and decompressing: the
	// stream's files written to the restores' disk alone (the engine's
	// extraction, one lane), then the tool's --prepare alone on them, as
	// the engine runs it (backup-my.cnf, 512 MiB): at once, on files still
	// in the page cache, as in a restore, whose prepare flushes the ones
	// InnoDB touches (until 2026-12-04 a sync came first, and the ceiling
	// took 0.05 s where the restores' own prepare took 0.14-0.18 s).
	var xw, xc, pw, pc []float64
	for range e.p.Repeat {
		dir := filepath.Join(e.tb.Root, "ceiling-restore")
		require.NoError(b, os.RemoveAll(dir))
		settle()
		t0, c0 := time.Now(), cpuTime()
		_, err := xbstream.Extract(context.Background(), dir, xbstream.ReaderLanes(bytes.NewReader(stream)), xbstream.ExtractOptions{})
		require.NoError(b, err)
		xw, xc = append(xw, time.Since(t0).Seconds()), append(xc, (cpuTime()-c0).Seconds())
		t0, c0 = time.Now(), cpuTime()
		out, err := exec.Command("/usr/bin/mariabackup", "--no-defaults", "--prepare", "--use-memory=512M", "--target-dir="+dir).CombinedOutput()
		require.NoError(b, err, "mariabackup --prepare: %s", tailOf(string(out)))
		pw, pc = append(pw, time.Since(t0).Seconds()), append(pc, (cpuTime()-c0).Seconds())
		require.NoError(b, os.RemoveAll(dir))
	}
	e.addCeiling("write-files-local", "the stream's files written to the restores' disk (xbstream.Extract, one lane, from the page cache)", e.raw, xw, xc)
	e.addCeiling("prepare", "mariabackup --prepare --use-memory=512M on those files, alone, as soon as they are written", e.raw, pw, pc)

	// 3. The compressors alone, all cores, 8 MiB chunks, each goroutine
	// into one buffer of its own; then, untimed, the compressed chunks to
	// a file for the decompressors and the storage.
	var stored []byte
	for _, comp := range e.plan.compressors() {
		var cw, cc, dw, dc []float64
		for range e.p.Repeat {
			settle()
			t0, c0 := time.Now(), cpuTime()
			compressChunks(b, comp, stream, nil)
			cw = append(cw, time.Since(t0).Seconds())
			cc = append(cc, (cpuTime() - c0).Seconds())
		}
		compressed, chunks, unmap := compressToFile(b, comp, stream, filepath.Join(e.tb.Root, "ceiling-"+comp))
		defer unmap()
		for range e.p.Repeat {
			settle()
			t0, c0 := time.Now(), cpuTime()
			decompressChunks(b, comp, chunks)
			dw = append(dw, time.Since(t0).Seconds())
			dc = append(dc, (cpuTime() - c0).Seconds())
		}
		lanes := max(n, 1)
		var bw, bc, sw, sc []float64
		for range e.p.Repeat {
			w, c := e.toolBesideCodec(comp, stream, lanes)
			bw, bc = append(bw, w), append(bc, c)
		}
		for range e.p.Repeat {
			w, c := e.splitFromPipe(comp, streamPath, lanes)
			sw, sc = append(sw, w), append(sc, c)
		}
		e.addCeiling("split-"+comp, fmt.Sprintf("the stream file `cat` into the engine's stdout pipe, dealt to %d lanes as the engine deals it, "+
			"each compressed by the engine's own lane codec, to io.Discard: the engine's path without the tool and the storage", lanes),
			e.raw, sw, sc)
		e.addCeiling("tool-beside-"+comp, fmt.Sprintf("the tool to /dev/null while %s compresses each 8 MiB it writes, %d goroutines",
			codecName(comp), lanes), e.raw, bw, bc)
		if comp == "zstd" {
			e.dataset().ZstdBytes = int64(len(compressed))
		}
		if stored == nil {
			stored = compressed
		}
		e.addCeiling("compress-"+comp, fmt.Sprintf("%s level 1 over the stream, %d goroutines, 8 MiB chunks, from the page cache", codecName(comp),
			runtime.GOMAXPROCS(0)), int64(len(stream)), cw, cc)
		e.addCeiling("decompress-"+comp, fmt.Sprintf("%s decompression of that, %d goroutines, to memory", codecName(comp), runtime.GOMAXPROCS(0)),
			int64(len(stream)), dw, dc)
	}

	// 4. The storage alone: the split storage writing and reading the
	// first compressor's bytes, as many files as the largest lane count.
	for _, st := range e.plan.storages() {
		lanes := e.plan.maxLanes(st)
		var ww, wc, rw, rc []float64
		for range e.p.Repeat {
			s := e.splitStorage(st, 256<<20, 2<<30)
			w, cw, r, cr := storageRoundTrip(b, s, stored, lanes)
			ww, wc, rw, rc = append(ww, w), append(wc, cw), append(rw, r), append(rc, cr)
			s.Close()
		}
		e.addCeiling("storage-write-"+st, fmt.Sprintf("split storage (%s), %d files written from the page cache, 256 MiB parts", st, lanes),
			int64(len(stored)), ww, wc)
		e.addCeiling("storage-read-"+st, fmt.Sprintf("split storage (%s), %d files read to io.Discard", st, lanes), int64(len(stored)), rw, rc)
	}
}

// toolBesideCodec is the tool's stream to /dev/null while the codec
// compresses the same bytes on lanes goroutines, each 8 MiB chunk once the
// tool has written that far (its /proc/PID/io wchar): a backup that
// compresses on the tool's host at best, whatever carries the bytes between
// them. Against the tool alone, it is what the codec's work costs the tool
// (cores, hyperthread siblings, caches and memory bandwidth shared), which no
// engine that compresses there avoids.
func (e *env) toolBesideCodec(comp string, stream []byte, lanes int) (wall, cpu float64) {
	b := e.b
	cmd, stderr := e.toolCmd(e.devNull())
	settle()
	t0, c0 := time.Now(), cpuTime()
	require.NoError(b, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var toolErr error
	gone := false
	ready := func(i int) { // the one goroutine that hands out chunks
		want := int64(min((i+1)*ceilingChunk, len(stream)))
		for !gone && bytesWritten(cmd.Process.Pid) < want {
			select {
			case toolErr = <-exited:
				gone = true
			case <-time.After(time.Millisecond):
			}
		}
	}
	compressPaced(b, comp, stream, lanes, ready, nil)
	if !gone {
		toolErr = <-exited
	}
	require.NoError(b, toolErr, "mariabackup: %s", tailOf(stderr.String()))
	return time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
}

// splitFromPipe is the engine's path from the tool's stdout to the codec,
// without the tool and the storage: `cat` of a stream file (in the page
// cache) into the pipe the engine gives the tool (StdoutPipe), dealt by
// xbstream.SplitStreams into lanes as the engine deals it (1 MiB pieces,
// busy lanes passed over), each lane compressed by the engine's own lane
// codec to io.Discard. How fast the engine could go if the tool were not
// the bound.
func (e *env) splitFromPipe(comp, streamPath string, lanes int) (wall, cpu float64) {
	b := e.b
	r, w, err := fifobackupengine.StdoutPipe()
	require.NoError(b, err)
	writers := make([]io.Writer, lanes)
	closers := make([]io.Closer, lanes)
	for i := range writers {
		wc := laneCompressor(b, comp, lanes)
		writers[i], closers[i] = wc, wc
	}
	cmd := exec.Command("cat", streamPath)
	cmd.Stdout = w
	settle()
	t0, c0 := time.Now(), cpuTime()
	require.NoError(b, cmd.Start())
	w.Close()
	_, err = xbstream.SplitStreams(context.Background(), []io.Reader{r}, writers, xbstream.SplitOptions{PieceSize: 1 << 20, PassBusyLanes: true})
	r.Close() // a cat still writing, after a failed split, ends on EPIPE
	catErr := cmd.Wait()
	require.NoError(b, err)
	require.NoError(b, catErr)
	for _, c := range closers {
		require.NoError(b, c.Close())
	}
	return time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
}

// laneCompressor is a lane's codec as the engine builds it for a backup
// of lanes lanes, at level 1 (fifobackupengine.LaneCompressor).
func laneCompressor(b *testing.B, comp string, lanes int) io.WriteCloser {
	c := fifobackupengine.CompressionConfig{Enabled: true, Engine: comp, Level: 1, BlockSize: 250000, Blocks: 2}
	wc, err := c.LaneCompressor(lanes, io.Discard)
	require.NoError(b, err)
	return wc
}

// toolCmd is the tool's backup, its stream written to stdout and its
// stderr kept for the error.
func (e *env) toolCmd(stdout *os.File) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command("/usr/bin/mariabackup", e.toolArgs()...)
	cmd.Stdout = stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

// devNull is /dev/null open for writing until the benchmark ends.
func (e *env) devNull() *os.File {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(e.b, err)
	e.b.Cleanup(func() { f.Close() })
	return f
}

// toolToDevNull is the tool's stream written to /dev/null: the tool's own
// time, and what it read from disk.
func (e *env) toolToDevNull() (wall, cpu float64, disk diskUse) {
	b := e.b
	cmd, stderr := e.toolCmd(e.devNull()) // an *os.File: the tool writes to it, no pipe between
	settle()
	disks := readDisks()
	t0, c0 := time.Now(), cpuTime()
	require.NoError(b, cmd.Run(), "mariabackup: %s", tailOf(stderr.String()))
	wall = time.Since(t0).Seconds()
	return wall, (cpuTime() - c0).Seconds(), diskSince(disks, wall)
}

// toolThroughPipe is the tool's stream through the pipe the engine reads
// its stdout from, drained by a loop that does nothing else: the floor of
// any engine that reads stdout. Unlike /dev/null, a pipe costs the tool a
// copy of every byte, made while it holds the one mutex every thread writes
// its chunks under (xbstream_write.cc, xb_stream_write_chunk).
func (e *env) toolThroughPipe() (wall, cpu float64) {
	b := e.b
	r, w, err := fifobackupengine.StdoutPipe()
	require.NoError(b, err)
	defer r.Close()
	cmd, stderr := e.toolCmd(w)
	settle()
	t0, c0 := time.Now(), cpuTime()
	require.NoError(b, cmd.Start())
	w.Close()
	buf := make([]byte, 1<<20)
	e.raw = 0 // the stream's size, counted here
	for {
		n, err := r.Read(buf)
		e.raw += int64(n)
		if err != nil {
			require.ErrorIs(b, err, io.EOF)
			break
		}
	}
	require.NoError(b, cmd.Wait(), "mariabackup: %s", tailOf(stderr.String()))
	return time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
}

// standinDevNull runs the stand-in as the engine runs it with source fifo
// and n streams, each FIFO read to /dev/null: the ceiling of the runs
// through it, which pay a process that parses and writes every chunk again
// (real xtrabackup writes its FIFOs itself). The stand-in opens FIFO k only
// once a reader holds it, retrying once a second, as Percona's tool does.
func (e *env) standinDevNull(n int) (wall, cpu float64) {
	b := e.b
	dir := filepath.Join(b.TempDir(), "fifos")
	cmd := exec.Command(standinPath, append(e.toolArgs(), fmt.Sprintf("--fifo-streams=%d", n), "--fifo-dir="+dir, "--fifo-timeout=60")...)
	cmd.Env = append(os.Environ(), "MARIABACKUP=/usr/bin/mariabackup")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	settle()
	t0, c0 := time.Now(), cpuTime()
	require.NoError(b, cmd.Start())
	exited := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			path := filepath.Join(dir, fmt.Sprintf("thread_%d", i))
			for {
				if _, err := os.Stat(path); err == nil {
					break
				}
				select {
				case <-exited:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			f, err := os.OpenFile(path, os.O_RDONLY, 0) // until the stand-in opens it
			if err == nil {
				drainFIFO(f, n)
			}
		})
	}
	err := cmd.Wait()
	close(exited)
	for i := range n { // a reader the stand-in never opened: let it go
		if f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("thread_%d", i)), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	wg.Wait()
	require.NoError(b, err, "stand-in: %s", tailOf(stderr.String()))
	return time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
}

// drainFIFO reads one of n FIFOs to its end and closes it, as the engine
// reads them: the pipe grown to the engine's size, 1 MiB reads (io.Copy to
// io.Discard reads 8 KiB at a time).
func drainFIFO(f *os.File, n int) {
	defer f.Close()
	if rc, err := f.SyscallConn(); err == nil { // not Fd: that would take f off Go's poller
		_ = rc.Control(func(fd uintptr) { _, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, fifobackupengine.ToolPipeSize(n)) })
	}
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Read(buf); err != nil {
			return
		}
	}
}

// mapFile maps path read-only; unmap before the runs, whose baseline RSS
// would count the pages touched.
func mapFile(b *testing.B, path string) (data []byte, unmap func()) {
	f, err := os.Open(path)
	require.NoError(b, err)
	defer f.Close()
	st, err := f.Stat()
	require.NoError(b, err)
	require.NotZero(b, st.Size(), path)
	data, err = syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	require.NoError(b, err)
	return data, func() { _ = syscall.Munmap(data) }
}

// codecName is the codec a ceiling runs for the engines' compressor: the
// format pgzip writes, by the fastest writer of it (the one the engine's
// lanes use when there are as many as cores).
func codecName(comp string) string {
	switch comp {
	case "zstd":
		return "zstd (klauspost/compress)"
	case "lz4":
		return "lz4 (pierrec/lz4/v4, its fast compressor, 8 MiB blocks)"
	}
	return "gzip (klauspost/compress, the format " + comp + " writes)"
}

const ceilingChunk = 8 << 20

// compressChunks compresses data in 8 MiB chunks on every core, each
// goroutine into a buffer of its own, and hands keep (nil: dropped) chunk
// i's output as it is done, from several goroutines at once.
func compressChunks(b *testing.B, comp string, data []byte, keep func(i int, c []byte)) {
	compressPaced(b, comp, data, runtime.GOMAXPROCS(0), func(int) {}, keep)
}

// compressPaced is compressChunks on the given number of goroutines, chunk
// i handed out only once ready(i) returns.
func compressPaced(b *testing.B, comp string, data []byte, workers int, ready func(i int), keep func(i int, c []byte)) {
	n := (len(data) + ceilingChunk - 1) / ceilingChunk
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
			require.NoError(b, err)
			var buf bytes.Buffer
			zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
			require.NoError(b, err)
			var lz lz4.Compressor
			dst := make([]byte, 0, ceilingChunk+ceilingChunk/8)
			for i := range next {
				part := data[i*ceilingChunk : min((i+1)*ceilingChunk, len(data))]
				switch comp {
				case "zstd":
					dst = enc.EncodeAll(part, dst[:0])
				case "lz4":
					n, err := lz.CompressBlock(part, dst[:lz4.CompressBlockBound(len(part))])
					require.NoError(b, err)
					dst = dst[:n]
				default:
					buf.Reset()
					zw.Reset(&buf)
					_, err := zw.Write(part)
					require.NoError(b, err)
					require.NoError(b, zw.Close())
					dst = buf.Bytes()
				}
				if keep != nil {
					keep(i, dst)
				}
			}
		}()
	}
	for i := range n {
		ready(i)
		next <- i
	}
	close(next)
	wg.Wait()
}

// compressToFile writes data's compressed chunks to path and returns the
// file mapped, each chunk a slice of it (in the file, in the order they
// were done), and its unmap.
func compressToFile(b *testing.B, comp string, data []byte, path string) (all []byte, chunks [][]byte, unmap func()) {
	f, err := os.Create(path)
	require.NoError(b, err)
	defer os.Remove(path) // the mapping keeps it until unmapped
	type span struct{ off, n int }
	spans := make([]span, (len(data)+ceilingChunk-1)/ceilingChunk)
	var mu sync.Mutex
	off := 0
	compressChunks(b, comp, data, func(i int, c []byte) {
		mu.Lock()
		defer mu.Unlock()
		_, err := f.Write(c)
		require.NoError(b, err)
		spans[i] = span{off, len(c)}
		off += len(c)
	})
	require.NoError(b, f.Close())
	all, unmap = mapFile(b, path)
	for _, s := range spans {
		chunks = append(chunks, all[s.off:s.off+s.n])
	}
	return all, chunks, unmap
}

// settle starts a measurement from the same state: the garbage of the last
// one collected and its memory returned to the system, and every dirty page
// on disk. Without the first, a 4 GiB run kept 13 GB resident after the
// ceilings: the page cache was squeezed to 3 GB, and an engine could
// allocate from memory already resident without its RSS growing. Without
// the second, a run pays for the writeback of the load or of the run before
// it (a 4 GiB restore writes 5 GB).
func settle() {
	debug.FreeOSMemory()
	syscall.Sync()
}

func decompressChunks(b *testing.B, comp string, chunks [][]byte) {
	var wg sync.WaitGroup
	next := make(chan []byte)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
			require.NoError(b, err)
			defer dec.Close()
			var zr gzip.Reader
			dst := make([]byte, 0, ceilingChunk+1<<20)
			for c := range next {
				switch comp {
				case "zstd":
					_, err := dec.DecodeAll(c, dst[:0])
					require.NoError(b, err)
				case "lz4":
					_, err := lz4.UncompressBlock(c, dst[:cap(dst)])
					require.NoError(b, err)
				default:
					require.NoError(b, zr.Reset(bytes.NewReader(c)))
					_, err := io.CopyBuffer(io.Discard, &zr, dst[:cap(dst)])
					require.NoError(b, err)
				}
			}
		}()
	}
	for _, c := range chunks {
		next <- c
	}
	close(next)
	wg.Wait()
}

func storageRoundTrip(b *testing.B, s *splitstorage.Storage, data []byte, lanes int) (w, cw, r, cr float64) {
	ctx := context.Background()
	name := fmt.Sprintf("ceiling-%d", time.Now().UnixNano())
	dir := "ceiling/0"
	settle()
	t0, c0 := time.Now(), cpuTime()
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(b, err)
	per := len(data) / lanes
	var wg sync.WaitGroup
	errs := make([]error, lanes)
	for i := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			part := data[i*per : min((i+1)*per, len(data))]
			if i == lanes-1 {
				part = data[i*per:]
			}
			f, err := bh.AddFile(ctx, fmt.Sprintf("lane-%03d", i), int64(len(part)))
			if err == nil {
				for off := 0; off < len(part) && err == nil; off += 1 << 20 {
					_, err = f.Write(part[off:min(off+1<<20, len(part))])
				}
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(b, err)
	}
	require.NoError(b, bh.EndBackup(ctx))
	w, cw = time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()

	bhs, err := s.ListBackups(ctx, dir)
	require.NoError(b, err)
	require.Len(b, bhs, 1)
	t0, c0 = time.Now(), cpuTime()
	for i := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rd, err := bhs[0].ReadFile(ctx, fmt.Sprintf("lane-%03d", i))
			if err == nil {
				_, err = io.Copy(io.Discard, rd)
				rd.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(b, err)
	}
	r, cr = time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
	require.NoError(b, s.RemoveBackup(ctx, dir, name))
	return
}

// splitStorage is the split storage on the local disk or the S3 server,
// with the flag defaults except part size and budget.
func (e *env) splitStorage(st string, part, budget int64) *splitstorage.Storage {
	cfg := splitstorage.DefaultConfig()
	cfg.PartSize, cfg.MemoryBudget = part, budget
	switch st {
	case "local":
		cfg.File.Root = e.localRoot("split")
		if e.p.StorageDir != "" {
			cfg.SpoolDir = e.localRoot("spool")
		}
	case "s3":
		c := e.s3.Config
		cfg.Backend, cfg.S3.Endpoint, cfg.S3.Region, cfg.S3.Bucket, cfg.S3.Prefix, cfg.S3.ForcePathStyle =
			c.Backend, c.S3.Endpoint, c.S3.Region, c.S3.Bucket, c.S3.Prefix, c.S3.ForcePathStyle
	}
	s, err := splitstorage.New(cfg)
	require.NoError(e.b, err)
	return s
}

// localRoot is a storage directory on the same disk as the tablet, or
// under BENCH_STORAGE_DIR (the split storage's spool too): a run with it on
// another disk, or in memory (tmpfs), shows what the storages' writes cost
// the tool's reads of the data files, for both engines alike.
func (e *env) localRoot(kind string) string {
	d := filepath.Join(e.storage, "storage-"+kind)
	require.NoError(e.b, os.MkdirAll(d, 0o755))
	return d
}

// storeDir is where the objects of a storage end up on disk (to count them).
func (e *env) storeDir(st string, split bool) string {
	if st == "s3" {
		return e.s3.Dir
	}
	if split {
		return e.localRoot("split")
	}
	return e.localRoot("vitess")
}

func countObjects(dir string) (n int, bytes int64) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".sgwtmp") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n++
				bytes += fi.Size()
			}
		}
		return nil
	})
	return
}

// countS3Objects lists the whole bucket (versitygw keeps extra files of its
// own beside each object, so the directory is not the object count).
func (e *env) countS3Objects(string) (n int, bytes int64) {
	c := e.s3.Config
	client := s3.New(s3.Options{
		Region: c.S3.Region, BaseEndpoint: aws.String(c.S3.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(splitstoragetest.S3AccessKey, splitstoragetest.S3SecretKey, ""),
	})
	pg := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(c.S3.Bucket)})
	for pg.HasMorePages() {
		page, err := pg.NextPage(context.Background())
		require.NoError(e.b, err)
		for _, o := range page.Contents {
			n++
			bytes += aws.ToInt64(o.Size)
		}
	}
	return
}

const (
	engXtra   = "xtrabackup"
	engStdout = "fifo-stdout"
	engFIFO   = "fifo-fifo-standin"
)

// benchEngines are the engines the runs compare (BENCH_ENGINES).
func benchEngines() []string {
	if v := os.Getenv("BENCH_ENGINES"); v != "" { // e.g. xtrabackup,fifo-stdout
		return strings.Split(v, ",")
	}
	return []string{engXtra, engStdout, engFIFO}
}

// compare runs every engine at lane count n, repeat times, interleaved.
func (e *env) compare(st, comp string, n int) {
	engines := benchEngines()
	if n == 1 {
		engines = slices.DeleteFunc(slices.Clone(engines), func(e string) bool { return e == engFIFO }) // one lane is always stdout, even with the stand-in
	}
	for rep := range e.p.Repeat {
		for _, eng := range engines {
			bk, rs := e.roundTrip(st, comp, eng, n, 256<<20, splitstorage.DefaultConfig().MemoryBudget)
			bk.Rep, rs.Rep = rep, rep
			e.res.Runs = append(e.res.Runs, bk, rs)
		}
	}
}

// sweep: fifo stdout, split on local disk, each of the plan's compressors x
// SweepLanes x part sizes where the spool fits: a backup may spool part x
// (lanes + upload concurrency) bytes, and this data set's backup and
// restore need room too.
func (e *env) sweep() {
	for rep := range e.p.SweepRepeat {
		for _, comp := range e.plan.compressors() {
			for _, n := range e.p.SweepLanes {
				for _, mib := range e.p.PartsMiB {
					part := int64(mib) << 20
					if need, free := part*int64(n+splitstorage.DefaultConfig().UploadConcurrency)+e.raw*2, diskFreeBytes(e.b, os.TempDir()); need > free {
						logf("sweep: %s N=%d part=%dMiB skipped: the spool and the backup need %d GiB, %d GiB free", comp, n, mib, need>>30, free>>30)
						continue
					}
					bk, rs := e.roundTrip("local", comp, engStdout, n, part, splitstorage.DefaultConfig().MemoryBudget)
					bk.Rep, rs.Rep = rep, rep
					e.res.Sweep = append(e.res.Sweep, bk, rs)
				}
			}
		}
	}
}

// allocProfile, with BENCH_ALLOC_PROFILE set, writes the allocations so far
// to logs/<runName>-before.pprof now and to -after.pprof when the returned
// function is called: what a run allocated is
//
//	go tool pprof -sample_index=alloc_space -base X-before.pprof X-after.pprof
func (e *env) allocProfile(r Run) func() {
	if os.Getenv("BENCH_ALLOC_PROFILE") == "" {
		return func() {}
	}
	name := filepath.Join(e.outDir, "logs", runName(r))
	write := func(suffix string) {
		runtime.GC() // the profile is as of the last collection
		f, err := os.Create(name + suffix)
		require.NoError(e.b, err)
		defer f.Close()
		require.NoError(e.b, pprof.Lookup("allocs").WriteTo(f, 0))
	}
	write("-before.pprof")
	return func() { write("-after.pprof") }
}

// cpuProfile, with BENCH_CPU_PROFILE set, profiles this process's CPU and
// where its goroutines blocked (channels, locks, one event per millisecond
// blocked on average) until the returned function is called, into
// logs/<runName>.cpu.pprof and the -block-before/-block-after pair:
//
//	go tool pprof -top X.cpu.pprof
//	go tool pprof -top -base X-block-before.pprof X-block-after.pprof
//
// Where a run's wall time goes on a many-core host (a stage that keeps the
// others waiting) shows in the second, what each byte costs in the first.
// The tools (mariabackup, mbstream) are other processes, not in either.
func (e *env) cpuProfile(r Run) func() {
	if os.Getenv("BENCH_CPU_PROFILE") == "" {
		return func() {}
	}
	name := filepath.Join(e.outDir, "logs", runName(r))
	block := func(suffix string) {
		f, err := os.Create(name + suffix)
		require.NoError(e.b, err)
		defer f.Close()
		require.NoError(e.b, pprof.Lookup("block").WriteTo(f, 0))
	}
	runtime.SetBlockProfileRate(int(time.Millisecond))
	block("-block-before.pprof")
	f, err := os.Create(name + ".cpu.pprof")
	require.NoError(e.b, err)
	require.NoError(e.b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(e.b, f.Close())
		block("-block-after.pprof")
		runtime.SetBlockProfileRate(0)
	}
}

func diskFreeBytes(b *testing.B, dir string) int64 {
	var st syscall.Statfs_t
	require.NoError(b, syscall.Statfs(dir, &st))
	return int64(st.Bavail) * st.Bsize
}

// roundTrip backs up and restores once with one engine and returns both runs.
func (e *env) roundTrip(st, comp, eng string, n int, part, budget int64) (Run, Run) {
	b := e.b
	ctx := context.Background()
	base := Run{Shape: e.shape, SizeGiB: e.sizeGiB, Storage: st, Compressor: comp, Engine: eng, Lanes: n, RawBytes: e.raw, Requests: -1}

	// Storage and engine.
	args := []string{
		"--xtrabackup-root-path=" + e.rootPath, "--xtrabackup-user=vt_dba",
		"--xtrabackup-stream-mode=xbstream", fmt.Sprintf("--xtrabackup-stripes=%d", n),
		fmt.Sprintf("--xtrabackup-backup-flags=--parallel=%d", e.p.ToolParallel),
		"--backup-storage-compress=true", "--compression-engine-name=" + comp, "--compression-level=1",
		"--file-backup-storage-root=" + e.localRoot("vitess"),
	}
	if e.s3 != nil {
		c := e.s3.Config
		args = append(args, "--s3-backup-aws-endpoint="+c.S3.Endpoint, "--s3-backup-aws-region="+c.S3.Region,
			"--s3-backup-storage-bucket="+c.S3.Bucket, "--s3-backup-storage-root=vitess", "--s3-backup-force-path-style")
	}
	require.NoError(b, e.fs.Parse(args))
	var storageName string
	split := eng != engXtra
	if split {
		base.PartSize, base.Budget = part, budget
		s := e.splitStorage(st, part, budget)
		defer s.Close()
		storageName = "split-bench"
		backupstorage.BackupStorageMap[storageName] = s
	} else {
		storageName = map[string]string{"local": "file", "s3": "s3"}[st]
	}
	backupstorage.BackupStorageImplementation = storageName

	engineName := engXtra
	inner := mysqlctl.BackupRestoreEngineMap[engXtra]
	if te, ok := inner.(*timedEngine); ok {
		inner = te.BackupRestoreEngine
	}
	if split {
		engineName = "fifo"
		cfg := fifobackupengine.Config{
			Lanes: n, Source: fifobackupengine.SourceStdout, Parallel: e.p.ToolParallel, FIFOTimeout: 60 * time.Second, UseMemory: 512 << 20,
			IncrementalBase: fifobackupengine.BaseLatest, MaxChainLength: 6,
			Compression: fifobackupengine.CompressionConfig{Enabled: true, Engine: comp, Level: 1, BlockSize: 250000, Blocks: 2},
		}
		if eng == engFIFO {
			cfg.Source, cfg.ToolPath = fifobackupengine.SourceFIFO, standinPath
		}
		inner = fifobackupengine.New(cfg)
	}
	te := &timedEngine{BackupRestoreEngine: inner}
	old := mysqlctl.BackupRestoreEngineMap[engineName]
	mysqlctl.BackupRestoreEngineMap[engineName] = te
	defer func() { mysqlctl.BackupRestoreEngineMap[engineName] = old }()

	dir := e.storeDir(st, split)
	count := countObjects
	if st == "s3" {
		count = e.countS3Objects
	}
	objBefore, bytesBefore := count(dir)
	var reqBefore int64
	if st == "s3" {
		reqBefore = e.proxy.Requests()
	}

	// Backup: the whole mysqlctl.Backup (EndBackup waits for the uploads).
	logger := logutil.NewMemoryLogger()
	bk := base
	bk.Op = "backup"
	settle()
	bk.SelfBase = resetPeakRSS()
	profile := e.allocProfile(bk)
	stopCPU := e.cpuProfile(bk)
	smp := startSampler()
	sched, disks := goSchedLatencies(), readDisks()
	t0, c0 := time.Now(), cpuTime()
	err := mysqlctl.Backup(ctx, mysqlctl.BackupParams{
		Cnf: e.tb.Cnf, Mysqld: e.tb.Mysqld, Logger: logger, Concurrency: 4,
		Keyspace: keyspace, Shard: shard, TabletAlias: fmt.Sprintf("zone1-%010d", e.tb.UID),
		BackupTime: time.Now(), Stats: backupstats.NoStats(), BackupEngine: engineName, UpgradeSafe: true,
	})
	bk.Wall, bk.CPU = time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
	stopCPU()
	bk.GoSchedWait, bk.GoSchedP99 = schedWaitSince(sched)
	disk := diskSince(disks, bk.Wall)
	bk.Disk = &disk
	bk.ToolRSS, bk.ToolComm, bk.ServerCPU = smp.finish()
	bk.ToolRunQueue = smp.childRunQueue()
	bk.SelfRSS = selfPeakRSS()
	profile()
	e.writeLog(logger, bk)
	require.NoError(b, err, "backup %s: %s", eng, tailOf(logger.String()))
	bk.PhaseTable = phaseTable(logger)
	if st == "s3" {
		bk.Requests = e.proxy.Requests() - reqBefore
	}
	objAfter, bytesAfter := count(dir)
	bk.Objects, bk.Stored = objAfter-objBefore, bytesAfter-bytesBefore
	if st == "s3" {
		reqBefore = e.proxy.Requests()
	}

	// Stop mysqld first, so its lifetime CPU (reaped at exit) is not counted.
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	require.NoError(b, e.tb.Mysqld.Shutdown(sctx, e.tb.Cnf, true, 2*time.Minute))
	cancel()

	// Restore: ExecuteRestore (download, extract, prepare, move back),
	// measured inside the wrapper; mysqlctl.Restore then starts mysqld.
	logger = logutil.NewMemoryLogger()
	rs := base
	rs.Op = "restore"
	stopCPU = e.cpuProfile(rs)
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Minute)
	_, err = mysqlctl.Restore(rctx, mysqlctl.RestoreParams{
		Cnf: e.tb.Cnf, Mysqld: e.tb.Mysqld, Logger: logger, Concurrency: 4, DeleteBeforeRestore: true,
		DbName: database, Keyspace: keyspace, Shard: shard, StartTime: time.Now(), Stats: backupstats.NoStats(),
		MysqlShutdownTimeout: time.Minute, AllowedBackupEngines: []string{engineName},
	})
	rcancel()
	stopCPU()
	rs.Wall, rs.CPU = te.restore.wall, te.restore.cpu
	rs.SelfBase, rs.SelfRSS, rs.ToolRSS, rs.ToolComm, rs.ServerCPU = te.restore.selfBase, te.restore.selfRSS, te.restore.toolRSS, te.restore.toolComm,
		te.restore.serverCPU
	rs.Stored = bk.Stored
	e.writeLog(logger, rs)
	require.NoError(b, err, "restore %s: %s", eng, tailOf(logger.String()))
	rs.PhaseTable = phaseTable(logger)
	if st == "s3" {
		rs.Requests = e.proxy.Requests() - reqBefore
	}

	// Remove the backup (untimed), so the next run starts from an empty store.
	bs, err := backupstorage.GetBackupStorage()
	require.NoError(b, err)
	bdir := mysqlctl.GetBackupDir(keyspace, shard)
	bhs, err := bs.ListBackups(ctx, bdir)
	require.NoError(b, err)
	for _, h := range bhs {
		require.NoError(b, bs.RemoveBackup(ctx, bdir, h.Name()))
	}
	bs.Close()

	logf("%-6s %-5s %-18s N=%d part=%4dMiB  backup %6.1fs wall %6.1fs cpu (%d objects, %d req, rss %d MiB / tool %d MiB; "+
		"tool's run queue %.2fs, goroutines' %.2fs, p99 %.1fms; %s)  restore %6.1fs wall %6.1fs cpu",
		st, comp, eng, n, part>>20, bk.Wall, bk.CPU, bk.Objects, bk.Requests, bk.SelfRSS>>20, bk.ToolRSS>>20,
		bk.ToolRunQueue, bk.GoSchedWait, bk.GoSchedP99*1e3, disk, rs.Wall, rs.CPU)
	return bk, rs
}

func (e *env) writeLog(l *logutil.MemoryLogger, r Run) {
	_ = os.WriteFile(filepath.Join(e.outDir, "logs", runName(r)+".log"), []byte(l.String()), 0o644)
}

// runName names one run's files under logs/, each run apart (a repeat's
// number is set after the run).
func runName(r Run) string {
	return fmt.Sprintf("%s-%g-%s-%s-%s-%d-%dMiB-%s-%d", r.Shape, r.SizeGiB, r.Storage, r.Compressor, r.Engine, r.Lanes, r.PartSize>>20, r.Op,
		time.Now().UnixNano())
}

func phaseTable(l *logutil.MemoryLogger) string {
	for _, ev := range l.Events {
		if strings.Contains(ev.Value, "per-phase stats") {
			return ev.Value
		}
	}
	return ""
}

type restoreMeasure struct {
	wall, cpu                  float64
	selfBase, selfRSS, toolRSS int64
	toolComm                   string
	serverCPU                  float64
}

// timedEngine measures ExecuteRestore of the engine it wraps.
type timedEngine struct {
	mysqlctl.BackupRestoreEngine
	restore restoreMeasure
}

func (e *timedEngine) ExecuteRestore(ctx context.Context, p mysqlctl.RestoreParams, bh backupstorage.BackupHandle) (*mysqlctl.BackupManifest, error) {
	settle()
	base := resetPeakRSS()
	smp := startSampler()
	start, cpu := time.Now(), cpuTime()
	m, err := e.BackupRestoreEngine.ExecuteRestore(ctx, p, bh)
	e.restore = restoreMeasure{wall: time.Since(start).Seconds(), cpu: (cpuTime() - cpu).Seconds(), selfBase: base}
	e.restore.toolRSS, e.restore.toolComm, e.restore.serverCPU = smp.finish()
	e.restore.selfRSS = selfPeakRSS()
	if err == nil && os.Geteuid() == 0 {
		// Vitess's xtrabackup engine leaves --move-back's files owned by
		// root; the mysql user that runs mysqld here needs them (untimed).
		err = matchOwner(p.Cnf)
	}
	return m, err
}

func matchOwner(cnf *mysqlctl.Mycnf) error {
	st, err := os.Stat(cnf.TabletDir())
	if err != nil {
		return nil
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Uid == 0 {
		return nil
	}
	for _, dir := range []string{cnf.DataDir, cnf.InnodbDataHomeDir, cnf.InnodbLogGroupHomeDir} {
		if err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, int(sys.Uid), int(sys.Gid))
		}); err != nil {
			return err
		}
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Printf("%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func contains[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func slicesMax(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

func tailOf(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

func run(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

func machineInfo() map[string]string {
	m := map[string]string{"nproc": strconv.Itoa(runtime.NumCPU())}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				m["cpu"] = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	m["topology"] = cpuTopology()
	m["memory"] = fmt.Sprintf("%.1f GiB", float64(procMemTotalKB())/(1<<20))
	m["kernel"] = run("uname", "-r")
	df := strings.Split(run("df", "-hT", os.TempDir()), "\n")
	m["disk"] = df[len(df)-1]
	m["load_at_start"] = run("cat", "/proc/loadavg")
	return m
}

// cpuTopology is how the CPUs this machine shows are laid out (under a
// hypervisor, as the guest is told): two CPUs that are threads of one core
// share its execution units, so a compressor on one slows the tool on the
// other while both count as busy.
func cpuTopology() string {
	cpus, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/topology")
	sockets, cores := map[string]bool{}, map[string]bool{}
	for _, t := range cpus {
		pkg, err1 := os.ReadFile(filepath.Join(t, "physical_package_id"))
		core, err2 := os.ReadFile(filepath.Join(t, "core_id"))
		if err1 != nil || err2 != nil {
			return "unknown"
		}
		sockets[string(pkg)] = true
		cores[string(pkg)+"/"+string(core)] = true
	}
	if len(cores) == 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d CPUs = %d socket(s) x %d core(s) x %d thread(s) per core", len(cpus), len(sockets), len(cores)/len(sockets), len(cpus)/len(cores))
}

func procMemTotalKB() int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			f := strings.Fields(l)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func versions() map[string]string {
	v := map[string]string{"go": runtime.Version(), "vitess": vtversion.Module() + " (go.mod)"}
	v["mariadb"] = run("/usr/sbin/mariadbd", "--version")
	mb := strings.Split(run("/usr/bin/mariabackup", "--version"), "\n")
	v["mariabackup"] = mb[len(mb)-1]
	v["versitygw"] = "v1.8.0 (build/tools)"
	return v
}
