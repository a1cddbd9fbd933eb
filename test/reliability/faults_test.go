package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

var transientKinds = []splitstoragetest.Fault{
	splitstoragetest.SlowDown, splitstoragetest.InternalError,
	splitstoragetest.CutRequest, splitstoragetest.CutResponse, splitstoragetest.Stall,
}

// faultyStore starts kind's server behind a fault proxy and makes it the
// fixture's storage (1 MiB parts so a few MB make many requests).
func faultyStore(t *testing.T, f *fixture, kind string) (*splitstoragetest.FaultProxy, *splitstoragetest.Server) {
	srv := splitstoragetest.Start(t, kind)
	p := splitstoragetest.NewFaultProxy(t, srv.Addr)
	p.StallFor = 2 * time.Second
	ps := srv.WithProxy(p)
	ps.Setenv(t)
	cfg := ps.Config
	cfg.PartSize = 1 << 20
	cfg.MemoryBudget = 32 << 20
	cfg.RetryMaxAttempts = 10
	cfg.RetryInitialBackoff = 50 * time.Millisecond
	cfg.RetryMaxBackoff = time.Second
	cfg.RequestTimeout = 5 * time.Second
	f.useStorage(t, cfg)
	return p, ps
}

// TestTransientFaults: 503 SlowDown, 500, connection reset mid-body (request
// and response) and 2 s stalls on 10% of all requests, during backup and
// during restore, through the real engine, S3 (versitygw), GCS
// (fake-gcs-server) and Azure (Azurite). Every backup must succeed and every restore must give
// back the source data. RELIABILITY_FAULT_TRIALS sets the trials per
// backend (default 3; the full count is 20).
func TestTransientFaults(t *testing.T) {
	n := trials(t, "RELIABILITY_FAULT_TRIALS", 3)
	for _, kind := range splitstoragetest.Remote() {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t)
			p, _ := faultyStore(t, f, kind)
			ctx := context.Background()
			ok := 0
			for i := range n {
				p.SetFailRate(0.10, transientKinds...)
				start := time.Now()
				logger := logutil.NewMemoryLogger()
				err := f.backup(ctx, logger)
				require.NoError(t, err, "trial %d/%d: backup with 10%% faults failed; injected %v; log:\n%s", i+1, n, p.Injected(), logger.String())
				bt := time.Since(start)
				start = time.Now()
				logger = logutil.NewMemoryLogger()
				_, err = f.restore(ctx, logger)
				require.NoError(t, err, "trial %d/%d: restore with 10%% faults failed; injected %v; log:\n%s", i+1, n, p.Injected(), logger.String())
				p.SetFailRate(0)
				f.requireSourceData(t, fmt.Sprintf("trial %d/%d", i+1, n))
				ok++
				t.Logf("trial %d/%d: backup %v, restore %v, faults injected so far %v", i+1, n, bt.Round(time.Millisecond),
					time.Since(start).Round(time.Millisecond), p.Injected())
			}
			assert.Equal(t, n, len(f.list(t)))
			inj := p.Injected()
			total := 0
			for _, k := range transientKinds {
				total += inj[k]
			}
			t.Logf("%s: %d of %d backups succeeded and restored identical data; %d requests, %d faults injected: %v", kind, ok, n, p.Requests(), total, inj)
			require.Greater(t, total, n, "too few faults injected to mean anything")
		})
	}
}

// TestStoreGone: the store disappears for good in the middle of a backup.
// The backup fails within the retry budget, no new backup becomes visible,
// the older backup is untouched (listed, fifoverify OK: vtbackup, which
// prunes from the same listing, sees the same complete backups as before),
// and once the store is back the leftovers are found and removed by
// fifoverify --remove-incomplete.
func TestStoreGone(t *testing.T) {
	for _, kind := range []string{splitstorage.BackendS3, splitstorage.BackendGCS} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t)
			p, ps := faultyStore(t, f, kind)
			cfg := f.cfg
			cfg.RetryMaxAttempts = 4
			cfg.RetryInitialBackoff = 50 * time.Millisecond
			cfg.RetryMaxBackoff = 500 * time.Millisecond
			cfg.RequestTimeout = 2 * time.Second
			f.useStorage(t, cfg)
			ctx := context.Background()
			before := p.Requests()
			require.NoError(t, f.backup(ctx, nil))
			older := f.list(t)
			require.Len(t, older, 1)

			// Take the store away for good halfway through the next backup's
			// requests (the first backup says how many there are): decided in
			// the proxy, so a fast backup cannot finish before it happens.
			base := p.Requests()
			p.DownAfter(base + (base-before)/2)
			errc := make(chan error, 1)
			go func() { errc <- f.backup(ctx, nil) }()
			var err error
			select {
			case err = <-errc:
			case <-time.After(3 * time.Minute):
				t.Fatalf("backup still running 3 minutes after the store went away")
			}
			require.Error(t, err, "a backup with the store gone must fail")
			require.False(t, p.WentDown().IsZero(), "the store never went away")
			took := time.Since(p.WentDown())
			t.Logf("backup failed %v after the store went away: %v", took.Round(time.Millisecond), err)
			// Budget: attempts x (request timeout + max backoff) per request, a
			// few requests in a row (part, index, marker, abort), with slack.
			budget := time.Duration(cfg.RetryMaxAttempts) * (cfg.RequestTimeout + cfg.RetryMaxBackoff) * 4
			assert.Less(t, took, budget, "the failure must come within the retry budget")

			// Secrets never appear in errors (the S3 secret key is planted in
			// the environment; GCS runs without credentials).
			secret := ps.Env["AWS_SECRET_ACCESS_KEY"]
			if secret != "" {
				assert.NotContains(t, err.Error(), secret, "the S3 secret key appears in the backup error")
			}

			p.DownAfter(0)
			p.SetDown(false)
			assert.Equal(t, older, f.list(t), "no new backup is visible, the older one still is")
			code, out := runVerify(t, cfg, ps.Environ(), "--backup="+older[0])
			assert.Equal(t, 0, code, "the older backup is untouched:\n%s", out)
			code, out = runVerify(t, cfg, ps.Environ(), "--list-incomplete")
			require.Equal(t, 0, code, out)
			if secret != "" {
				assert.NotContains(t, out, secret, "the S3 secret key appears in fifoverify's output")
			}
			t.Logf("after the store came back:\n%s", out)
			code, out = runVerify(t, cfg, ps.Environ(), "--remove-incomplete", "--incomplete-min-age=0s")
			require.Equal(t, 0, code, out)
			inc, err := f.st.ListIncomplete(ctx, backupDir)
			require.NoError(t, err)
			assert.Empty(t, inc, "leftovers removed")
			assert.Equal(t, older, f.list(t))
		})
	}
}
