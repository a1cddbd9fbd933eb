package vtfifocli

import (
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// BenchmarkFleetView runs the fleet view (vtfifo ls --prometheus, no
// shard) over a simulated fleet (splitstoragetest.PlantFleet: FLEET_SHARDS
// x FLEET_BACKUPS, half of them with a passed test record, one incomplete
// per shard) on versitygw, behind a proxy that adds FLEET_LATENCY_MS to
// every request and counts them: requests per view and per shard, and
// seconds per view, of the first view (which walks every shard and saves
// its summary, and removes the change marks the planting left), of the
// views after it (which read the summaries), and of one that walks every
// shard again (--rebuild-summaries: the walks alone; FLEET_REBUILD=0
// leaves it out). Each
// view is a new vtfifo process's: nothing is cached between them.
//
//	FLEET_SHARDS=100 FLEET_BACKUPS=30 FLEET_LATENCY_MS=20 FLEET_VIEWS=3 go test -run '^$' -bench FleetView -benchtime 1x ./go/cmd/vtfifo/vtfifocli/
func BenchmarkFleetView(b *testing.B) {
	env := func(name string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
			return v
		}
		return def
	}
	shards, backups, latency := env("FLEET_SHARDS", 20), env("FLEET_BACKUPS", 10), env("FLEET_LATENCY_MS", 0)
	srv := splitstoragetest.StartS3(b)
	p := splitstoragetest.NewFaultProxy(b, srv.Addr)
	p.PreserveHost = true
	ps := srv.WithProxy(p)
	ps.Setenv(b)
	// The planting's incomplete backups hold their spool room, as a
	// process that dies holds it until it does: the smallest.
	plantCfg := ps.Config
	plantCfg.PartSize, plantCfg.UploadConcurrency = splitstorage.MinPartSize, 1
	bs, err := splitstorage.New(plantCfg)
	if err != nil {
		b.Fatal(err)
	}
	defer bs.Close()
	start := time.Now()
	splitstoragetest.PlantFleet(b, bs, shards, backups, 8)
	b.Logf("planted %d shards x %d backups in %v", shards, backups, time.Since(start))
	p.Latency = time.Duration(latency) * time.Millisecond
	args := append([]string{"ls", "--prometheus"}, ps.Flags()...)
	view := func() (requests float64, took time.Duration) {
		before, start := p.Requests(), time.Now()
		var errOut bytes.Buffer
		if code := Main(context.Background(), args, io.Discard, &errOut); code != exitOK {
			b.Fatalf("vtfifo %s: exit %d: %s", strings.Join(args[:2], " "), code, errOut.String())
		}
		return float64(p.Requests() - before), time.Since(start)
	}
	// The first view walks every shard and saves its summary: what a
	// storage costs once, or after --rebuild-summaries.
	first, firstTook := view()
	b.ResetTimer()
	for range b.N {
		// The median of FLEET_VIEWS views that read the summaries.
		var ns []float64
		var tooks []time.Duration
		for range max(env("FLEET_VIEWS", 3), 1) {
			n, took := view()
			ns, tooks = append(ns, n), append(tooks, took)
		}
		slices.Sort(ns)
		slices.Sort(tooks)
		n, took := ns[len(ns)/2], tooks[len(tooks)/2]
		// By kind, for the last of them.
		kinds := p.Kinds()
		view()
		for kind, c := range p.Kinds() {
			b.ReportMetric(float64(c-kinds[kind]), strings.ToLower(kind)+"/view")
		}
		b.ReportMetric(n, "requests/view")
		b.ReportMetric(n/float64(shards), "requests/shard")
		b.ReportMetric(took.Seconds(), "s/view")
	}
	b.ReportMetric(first, "first-requests/view")
	b.ReportMetric(firstTook.Seconds(), "first-s/view")
	// Every shard walked again (--rebuild-summaries): the walks alone,
	// without the marks of the planting for the first view to remove.
	if env("FLEET_REBUILD", 1) == 0 {
		return
	}
	args = append(args, "--rebuild-summaries")
	rebuilt, rebuiltTook := view()
	b.ReportMetric(rebuilt, "rebuild-requests/view")
	b.ReportMetric(rebuiltTook.Seconds(), "rebuild-s/view")
}
