package vtfifocli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/pflag"
)

// exporterDoc is `vtfifo exporter`'s help.
var exporterDoc = commandDoc{"exporter", "Serve the fleet view as Prometheus metrics, read from the storage in the background",
	"Serves the fleet view's metrics (those of vtfifo ls --prometheus: per keyspace/shard, the newest backup's and the newest\n" +
		"proven backup's time, the predicted restore time, failed test restores, quarantined and incomplete backups, the checks)\n" +
		"at /metrics of --listen-address. It reads the storage every --refresh-interval, in the background: a scrape never\n" +
		"reads the storage, and a refresh reads only the shard summaries that changed (see ls). What the last refresh cost,\n" +
		"when it ended, and whether it failed are metrics too; a failed refresh keeps the shards' metrics of the last one that\n" +
		"worked (vtfifo_ls_timestamp_seconds says when). It runs until SIGINT or SIGTERM.",
	"  vtfifo exporter --backup-storage-implementation=split --split-storage-backend=s3 --split-storage-s3-bucket=backups \\\n" +
		"    --listen-address=:9369 --refresh-interval=1m --max-age=2d --max-unproven-age=7d"}

// Exporter is `vtfifo exporter`.
func Exporter(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var (
		check    fleetCheck
		listen   string
		interval time.Duration
	)
	s, code := openSession(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			o.fleet = true
			check.register(fs)
			fs.StringVar(&listen, "listen-address", ":9369", "host:port to serve /metrics on")
			fs.DurationVar(&interval, "refresh-interval", time.Minute, "how often to read the storage (a scrape never does)")
			refuseBackup := o.refuseBackup(fs, "exporter", "it serves every shard")
			return func() error {
				if err := refuseBackup(); err != nil {
					return err
				}
				if !o.wholeStorage() {
					return errors.New("the exporter serves every shard: leave out --keyspace, --shard and --backup-dir")
				}
				if interval < time.Second {
					return invalid("refresh-interval", interval.String(), "1s or more")
				}
				return check.validate(false)
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	st, err := can[fleetLister](s.bs, "list its shards")
	if err != nil {
		return s.o.failf(exitUsage, "%v", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return s.o.failf(exitUnreachable, "--listen-address=%s: %v", listen, err)
	}
	ex := &exporter{}
	srv := &http.Server{Handler: ex.handler(), ReadHeaderTimeout: 10 * time.Second}
	s.o.notef("serving http://%s/metrics, reading the storage every %s", ln.Addr(), interval)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = srv.Serve(ln)
	}()
	go func() {
		defer wg.Done()
		ex.refreshEvery(s.ctx, interval, func() (fleetView, error) { return s.fleetView(st, check, s.viewingNow()) }, s.o.notef)
	}()
	<-s.ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	wg.Wait()
	return exitOK
}

// exporter holds what its last refreshes found, for the scrapes.
type exporter struct {
	mu        sync.Mutex
	last      *fleetView // the last refresh that worked
	lastErr   error      // the last refresh's error (nil: it worked)
	failures  int
	refreshed time.Time // when the last refresh ended
}

// refreshEvery runs read at once, then interval after each one ends,
// until ctx is done.
func (ex *exporter) refreshEvery(ctx context.Context, interval time.Duration, read func() (fleetView, error), notef func(string, ...any)) {
	for {
		v, err := read()
		ex.mu.Lock()
		ex.refreshed, ex.lastErr = time.Now(), err
		if err != nil {
			ex.failures++
			notef("reading the fleet failed (the metrics keep the last read that worked): %v", err)
		} else {
			ex.last = &v
			if len(v.unsaved) > 0 {
				notef("%d shard summaries could not be saved (the exporter needs to write under .fleet/): %s", len(v.unsaved), v.unsaved[0])
			}
		}
		ex.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func (ex *exporter) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(ex.metrics())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "<html><body><h1>vtfifo exporter</h1><p><a href=\"/metrics\">metrics</a></p></body></html>\n")
	})
	return mux
}

// metrics is the text a scrape gets: the last working refresh's fleet,
// and how the refreshes go.
func (ex *exporter) metrics() []byte {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	var b bytes.Buffer
	if ex.last != nil {
		writePrometheus(&b, *ex.last)
	}
	ok := 1
	if ex.lastErr != nil || ex.last == nil {
		ok = 0
	}
	unix := float64(0)
	if !ex.refreshed.IsZero() {
		unix = float64(ex.refreshed.Unix())
	}
	fmt.Fprintf(&b, "# HELP vtfifo_exporter_refresh_ok 1 when the exporter's last read of the fleet worked.\n"+
		"# TYPE vtfifo_exporter_refresh_ok gauge\nvtfifo_exporter_refresh_ok %d\n"+
		"# HELP vtfifo_exporter_refresh_failures_total Reads of the fleet that failed since the exporter started.\n"+
		"# TYPE vtfifo_exporter_refresh_failures_total counter\nvtfifo_exporter_refresh_failures_total %d\n"+
		"# HELP vtfifo_exporter_refreshed_timestamp_seconds When the exporter's last read of the fleet ended, worked or not (0: none yet).\n"+
		"# TYPE vtfifo_exporter_refreshed_timestamp_seconds gauge\nvtfifo_exporter_refreshed_timestamp_seconds %g\n", ok, ex.failures, unix)
	return b.Bytes()
}
