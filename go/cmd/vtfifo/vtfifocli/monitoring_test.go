package vtfifocli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/freeport"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// The monitoring set-up shipped in config/ (docs/monitoring.md), checked
// by Prometheus's own promtool (make tools builds it): the alert rules
// load, their unit tests pass (each fires for the shard it should, and
// only then), every PromQL expression of the Grafana dashboard parses,
// and every metric the rules and the dashboard name is one the exporter
// serves (a renamed metric would leave an alert that never fires).

var metricName = regexp.MustCompile(`\bvtfifo_[a-z_]+\b`)

func promtool(t *testing.T, args ...string) string {
	t.Helper()
	bin := splitstoragetest.Binary(t, "PROMTOOL_BIN", "promtool")
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Join(splitstoragetest.RepoRoot(), "config", "prometheus")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// servedMetrics starts the exporter on a small fleet and returns what
// one scrape serves once a read of the storage worked.
func servedMetrics(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	bs := localSplit(t, root)
	plantBackup(t, bs, "ks/0", "2026-01-01.000000.zone1-0000000100")
	port, err := freeport.Get()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"exporter", "--backup-storage-implementation=split", "--split-storage-root=" + root,
			fmt.Sprintf("--listen-address=127.0.0.1:%d", port), "--refresh-interval=1s"}, io.Discard, io.Discard)
	}()
	defer func() { cancel(); <-exited }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "vtfifo_exporter_refresh_ok 1\n") {
			return string(body)
		}
	}
	t.Fatal("the exporter served no read of the storage in 30s")
	return ""
}

func TestMonitoringConfig(t *testing.T) {
	served := servedMetrics(t)
	// The exposition itself, as Prometheus's linter reads it.
	cmd := exec.Command(splitstoragetest.Binary(t, "PROMTOOL_BIN", "promtool"), "check", "metrics")
	cmd.Stdin = strings.NewReader(served)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s\n%s", out, served)

	assert.Contains(t, promtool(t, "check", "rules", "vtfifo-alerts.yml"), "SUCCESS: 8 rules found")
	assert.Contains(t, promtool(t, "test", "rules", "vtfifo-alerts.test.yml"), "SUCCESS")

	rules, err := os.ReadFile(filepath.Join(splitstoragetest.RepoRoot(), "config", "prometheus", "vtfifo-alerts.yml"))
	require.NoError(t, err)
	dash, err := os.ReadFile(filepath.Join(splitstoragetest.RepoRoot(), "config", "grafana", "vtfifo-backups.json"))
	require.NoError(t, err)
	var board struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(dash, &board))
	// Every expression of the dashboard, as recording rules promtool checks.
	var rec strings.Builder
	rec.WriteString("groups:\n  - name: vtfifo-dashboard\n    rules:\n")
	n := 0
	for _, p := range board.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			expr := strings.ReplaceAll(tg.Expr, "$keyspace", ".*")
			n++
			fmt.Fprintf(&rec, "      - record: vtfifo:dashboard:%d\n        expr: %q\n", n, expr)
		}
	}
	recFile := filepath.Join(t.TempDir(), "dashboard-exprs.yml")
	require.NoError(t, os.WriteFile(recFile, []byte(rec.String()), 0o640))
	assert.Contains(t, promtool(t, "check", "rules", recFile), fmt.Sprintf("SUCCESS: %d rules found", n))

	for _, name := range slices.Compact(slices.Sorted(slices.Values(metricName.FindAllString(string(rules)+rec.String(), -1)))) {
		assert.Contains(t, served, "\n# TYPE "+name+" ", "%s is named by config/ but not served", name)
	}
}
