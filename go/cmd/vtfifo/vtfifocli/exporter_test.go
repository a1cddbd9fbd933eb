package vtfifocli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/freeport"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// parseMetrics reads the Prometheus text format with Prometheus's own
// parser (the legacy name scheme: what every Prometheus reads).
func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err, text)
	return mfs
}

// gauge is the value of family name for keyspace/shard ("" : the
// family's one unlabelled metric); ok is false when there is none.
func gauge(mfs map[string]*dto.MetricFamily, name, shard string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if (shard == "" && len(labels) == 0) || labels["keyspace"]+"/"+labels["shard"] == shard {
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestFleetViewMetricsParse: ls --prometheus's output is read by
// Prometheus's own text parser, every family with its type and help.
func TestFleetViewMetricsParse(t *testing.T) {
	root := t.TempDir()
	bs := localSplit(t, root)
	plantBackup(t, bs, "ks/0", "2026-01-01.000000.zone1-0000000100")
	plantBackup(t, bs, "ks/-80", "2026-01-02.000000.zone1-0000000100")
	out, _ := runSplit(t, 0, root, "ls", "--prometheus", "--max-age=1d")
	mfs := parseMetrics(t, out)
	for name, mf := range mfs {
		assert.NotEmpty(t, mf.GetHelp(), name)
		assert.Equal(t, dto.MetricType_GAUGE, mf.GetType(), name)
	}
	v, ok := gauge(mfs, "vtfifo_backups", "ks/-80")
	assert.True(t, ok)
	assert.Equal(t, 1.0, v)
	v, _ = gauge(mfs, "vtfifo_backup_check_ok", "ks/0")
	assert.Equal(t, 0.0, v, "older than --max-age")
	v, _ = gauge(mfs, "vtfifo_fleet_shards_walked", "")
	assert.Equal(t, 2.0, v, "the first view walks both")
	v, _ = gauge(mfs, "vtfifo_fleet_refresh_requests", "")
	assert.Equal(t, 0.0, v, "local disk bills no request")
}

// TestExporter: vtfifo exporter serves the fleet's metrics at /metrics
// (Prometheus's parser reads them); a backup completed and one
// quarantined after it started show at a later refresh, which reads only
// the changed shard's summary anew; a refresh that fails (the root made
// unreadable) keeps the shards' metrics of the last one that worked and
// says so; the end of its context (SIGTERM) ends it, exit 0.
func TestExporter(t *testing.T) {
	root := t.TempDir()
	bs := localSplit(t, root)
	plantBackup(t, bs, "ks/0", "2026-01-01.000000.zone1-0000000100")
	plantBackup(t, bs, "ks/1", "2026-01-01.000000.zone1-0000000200")
	ctx := context.Background()
	ex := startExporter(t, "--backup-storage-implementation=split", "--split-storage-root="+root, "--max-age=1d")
	backups := func(shard string, n float64) func(map[string]*dto.MetricFamily) bool {
		return func(mfs map[string]*dto.MetricFamily) bool {
			v, ok := gauge(mfs, "vtfifo_backups", shard)
			return ok && v == n
		}
	}
	mfs := ex.until("ks/0 has its backup", backups("ks/0", 1))
	v, _ := gauge(mfs, "vtfifo_exporter_refresh_ok", "")
	assert.Equal(t, 1.0, v)

	plantBackup(t, bs, "ks/0", "2026-01-02.000000.zone1-0000000100")
	h, err := bs.OpenBackup(ctx, "ks/1", "2026-01-01.000000.zone1-0000000200")
	require.NoError(t, err)
	require.NoError(t, h.(*splitstorage.Handle).Quarantine(ctx, "test restore failed: planted"))
	mfs = ex.until("both changes show", func(mfs map[string]*dto.MetricFamily) bool {
		q, _ := gauge(mfs, "vtfifo_backups_quarantined", "ks/1")
		return backups("ks/0", 2)(mfs) && q == 1
	})
	v, _ = gauge(mfs, "vtfifo_backups", "ks/1")
	assert.Equal(t, 0.0, v, "its one backup is quarantined")
	mfs = ex.until("a refresh with nothing changed", func(mfs map[string]*dto.MetricFamily) bool {
		v, _ := gauge(mfs, "vtfifo_fleet_shards_summarized", "")
		return v == 2
	})
	v, _ = gauge(mfs, "vtfifo_fleet_shards_walked", "")
	assert.Equal(t, 0.0, v)

	// The storage cannot be read (a file where its root was): the last
	// working read's metrics stay.
	require.NoError(t, os.Rename(root, root+".away"))
	require.NoError(t, os.WriteFile(root, []byte("not a directory"), 0o640))
	mfs = ex.until("the refresh failed", func(mfs map[string]*dto.MetricFamily) bool {
		v, _ := gauge(mfs, "vtfifo_exporter_refresh_ok", "")
		return v == 0
	})
	require.NoError(t, os.Remove(root))
	require.NoError(t, os.Rename(root+".away", root))
	assert.True(t, backups("ks/0", 2)(mfs), "the shards' metrics of the last read that worked")
	v, _ = gauge(mfs, "vtfifo_exporter_refresh_failures_total", "")
	assert.GreaterOrEqual(t, v, 1.0)
	assert.Equal(t, dto.MetricType_COUNTER, mfs["vtfifo_exporter_refresh_failures_total"].GetType())

	errOut := ex.stop()
	assert.Contains(t, errOut, fmt.Sprintf("vtfifo exporter: serving http://127.0.0.1:%d/metrics, reading the storage every 1s\n", ex.port))
	assert.Contains(t, errOut, "vtfifo exporter: reading the fleet failed (the metrics keep the last read that worked): ")
}

// exporterRun is `vtfifo exporter` running in this process, refreshing
// every second, for a test to scrape.
type exporterRun struct {
	t           *testing.T
	port        int
	cancel      context.CancelFunc
	exited      chan int
	out, errOut bytes.Buffer
}

// startExporter starts the exporter with args (the storage's flags and
// its checks'); stop ends it.
func startExporter(t *testing.T, args ...string) *exporterRun {
	port, err := freeport.Get()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ex := &exporterRun{t: t, port: port, cancel: cancel, exited: make(chan int, 1)}
	t.Cleanup(cancel)
	argv := append([]string{"exporter", fmt.Sprintf("--listen-address=127.0.0.1:%d", port), "--refresh-interval=1s"}, args...)
	go func() { ex.exited <- Main(ctx, argv, &ex.out, &ex.errOut) }()
	return ex
}

// scrape reads /metrics once; nil while the exporter does not answer.
func (ex *exporterRun) scrape() map[string]*dto.MetricFamily {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", ex.port))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	assert.Equal(ex.t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(ex.t, err)
	return parseMetrics(ex.t, string(body))
}

// until waits for a scrape where cond holds, and returns it.
func (ex *exporterRun) until(what string, cond func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	ex.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if mfs := ex.scrape(); mfs != nil && cond(mfs) {
			return mfs
		}
		time.Sleep(100 * time.Millisecond)
	}
	ex.t.Fatalf("no scrape where %s", what)
	return nil
}

// stop ends the exporter as SIGTERM does, checks that it exits 0 with
// nothing on stdout, and returns its stderr.
func (ex *exporterRun) stop() string {
	ex.t.Helper()
	ex.cancel()
	select {
	case code := <-ex.exited:
		assert.Equal(ex.t, exitOK, code, "stderr: %s", ex.errOut.String())
	case <-time.After(30 * time.Second):
		ex.t.Fatal("the exporter did not end with its context")
	}
	assert.Empty(ex.t, ex.out.String())
	return ex.errOut.String()
}

// TestExporterUsage: bad flags fail at startup naming the flag; a port
// in use fails naming it, exit 3.
func TestExporterUsage(t *testing.T) {
	root := t.TempDir()
	plantBackup(t, localSplit(t, root), "ks/0", "2026-01-01.000000.zone1-0000000100")
	_, errOut := runSplit(t, 2, root, "exporter", "--refresh-interval=10ms")
	assert.Equal(t, "vtfifo exporter: invalid value \"10ms\" for --refresh-interval: allowed values are 1s or more\n", errOut)
	_, errOut = runSplit(t, 2, root, "exporter", "--keyspace=ks", "--shard=0")
	assert.Equal(t, "vtfifo exporter: the exporter serves every shard: leave out --keyspace, --shard and --backup-dir\n", errOut)
	_, errOut = runSplit(t, 2, root, "exporter", "--prometheus")
	assert.Contains(t, errOut, "unknown flag: --prometheus")
	busy, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	_, errOut = runSplit(t, 3, root, "exporter", "--listen-address="+busy.Addr().String())
	assert.Contains(t, errOut, "vtfifo exporter: --listen-address="+busy.Addr().String()+": listen tcp "+busy.Addr().String()+": bind: address already in use\n")
}

// TestFleetViewSummariesNotSaved: where the view cannot write under .fleet/
// (here: a file where the summaries' directory would be; read-only
// credentials alike), it still answers, every shard walked, and says on
// stderr why the next view will walk them again.
func TestFleetViewSummariesNotSaved(t *testing.T) {
	root := t.TempDir()
	plantBackup(t, localSplit(t, root), "ks/0", "2026-01-01.000000.zone1-0000000100")
	require.NoError(t, os.MkdirAll(root+"/.fleet", 0o750))
	require.NoError(t, os.WriteFile(root+"/.fleet/summaries", []byte("in the way"), 0o640))
	for range 2 {
		out, errOut := runSplit(t, 0, root, "ls")
		assert.Regexp(t, `(?m)^ks/0\s+1\s+2026-01-01.000000.zone1-0000000100\s`, out)
		assert.Regexp(t, `\nSummaries: 1 shards: 0 from their summaries, 1 walked in \S+\n$`, out)
		assert.Regexp(t, `^vtfifo ls: 1 shard summaries could not be saved, so every view walks those shards again \(the view needs to write under `+
			`\.fleet/ of the storage\): ks/0: .*\.fleet/summaries.*: not a directory\n$`, errOut)
	}
}
