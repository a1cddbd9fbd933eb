package endtoend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/go/testutil/tier"
	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// discoverBinaries finds the built binaries, skipping when they are missing
// unless VTFIFO_E2E=require (set by `make test`), which makes that a failure.
func discoverBinaries(t *testing.T) cluster.Paths {
	t.Helper()
	tier.Integration(t, "the Vitess binaries built by make build")
	paths, err := cluster.Discover(cluster.Paths{})
	if errors.Is(err, cluster.ErrPrereq) && os.Getenv("VTFIFO_E2E") != "require" {
		t.Skipf("%v (run `make test`, or set VTFIFO_E2E=require to fail instead)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// startCluster starts etcd + vtctld for one test, skipping when a prerequisite is missing
// (unless VTFIFO_E2E=require, which `make test` sets), and tears it down at the end. The
// logs are kept and their path printed when the test fails.
func startCluster(t *testing.T, opts cluster.Options) *cluster.Cluster {
	t.Helper()
	tier.Integration(t, "a local Vitess cluster")
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, opts)
	if errors.Is(err, cluster.ErrPrereq) && os.Getenv("VTFIFO_E2E") != "require" {
		t.Skipf("%v (run `make test`, or set VTFIFO_E2E=require to fail instead)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Teardown()
		if t.Failed() || os.Getenv("VTFIFO_KEEP") != "" {
			t.Logf("cluster directory kept: %s (logs in %s)", c.Root, c.LogDir)
			return
		}
		_ = c.RemoveAll()
	})
	return c
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// decodeJSON decodes into v the JSON value of out that starts with start:
// vtfifo --json prints it alone on stdout, and its log lines on stderr may
// come before or after it in the output the cluster keeps of both.
func decodeJSON(out, start string, v any) error {
	i := strings.Index(out, start)
	if i < 0 {
		return fmt.Errorf("no %q in the output", start)
	}
	return json.NewDecoder(strings.NewReader(out[i:])).Decode(v)
}

// vtfifoRunner runs vtfifo on c (its storage's flags, keyspace and shard)
// and fails t unless it exits wantCode; it returns the output.
func vtfifoRunner(ctx context.Context, c *cluster.Cluster) func(t *testing.T, wantCode int, args ...string) string {
	return func(t *testing.T, wantCode int, args ...string) string {
		t.Helper()
		out, code, err := c.Vtfifo(ctx, args...)
		must(t, err)
		if code != wantCode {
			t.Fatalf("vtfifo %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, wantCode, out)
		}
		return out
	}
}

// toolFlags are the flags of the tool the tablets use (mariabackup behind
// the xtrabackup name), for the vtfifo commands that run it.
func toolFlags(c *cluster.Cluster) []string {
	return []string{"--fifo-backup-tool-path=" + c.XtrabackupRoot + "/xtrabackup", "--fifo-backup-tool-flavor=mariabackup", "--progress=never"}
}
