package endtoend

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// startCluster starts etcd + vtctld for one test, skipping when a prerequisite is missing
// (unless VTFIFO_E2E=require, which `make test` sets), and tears it down at the end. The
// logs are kept and their path printed when the test fails.
func startCluster(t *testing.T, opts cluster.Options) *cluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped with -short")
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	if opts.Engine.Name == "" {
		opts.Engine = xtrabackupEngine()
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

// xtrabackupEngine is Vitess's stock xtrabackup engine over mariabackup. Its root path is
// filled in per cluster (see withXtrabackupRoot).
func xtrabackupEngine() cluster.Engine {
	return cluster.Engine{Name: "xtrabackup"}
}

func withXtrabackupRoot(c *cluster.Cluster, e cluster.Engine) cluster.Engine {
	if e.Name != "xtrabackup" {
		return e
	}
	e.Flags = append([]string{
		"--xtrabackup-root-path=" + c.XtrabackupRoot,
		"--xtrabackup-user=vt_dba",
		"--xtrabackup-stream-mode=xbstream",
		"--xtrabackup-stripes=2",
	}, e.Flags...)
	return e
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

var _ = filepath.Join
