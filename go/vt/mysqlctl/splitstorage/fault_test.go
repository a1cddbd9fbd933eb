package splitstorage_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

var remoteBackends = splitstoragetest.Remote()

// proxied starts a server of kind behind a fault proxy and returns a storage
// talking through the proxy, with a logger that keeps the retry log lines.
func proxied(t *testing.T, kind string, tweak func(*splitstorage.Config)) (*splitstorage.Storage, *splitstoragetest.FaultProxy, *logutil.MemoryLogger) {
	srv := splitstoragetest.Start(t, kind)
	p := splitstoragetest.NewFaultProxy(t, srv.Addr)
	ps := srv.WithProxy(p)
	ps.Setenv(t)
	c := ps.Config
	c.RequestTimeout = 3 * time.Second
	if tweak != nil {
		tweak(&c)
	}
	logger := logutil.NewMemoryLogger()
	s := newStorage(t, c).WithParams(backupstorage.Params{Logger: logger, Stats: backupstorage.NoParams().Stats}).(*splitstorage.Storage)
	t.Cleanup(func() { s.Close() })
	return s, p, logger
}

// roundTrip backs up files (name -> size) with `writers` goroutines, reads them
// back with as many, and checks every byte.
func roundTrip(t *testing.T, s *splitstorage.Storage, dir, name string, files map[string]int64, workers int) {
	ctx := context.Background()
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	seed := func(f string) uint64 { return uint64(len(f))*1000 + uint64(f[len(f)-1]) }
	run := func(fn func(f string, size int64) error) {
		work := make(chan string)
		errs := make(chan error, len(files))
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for f := range work {
					errs <- fn(f, files[f])
				}
			})
		}
		for f := range files {
			work <- f
		}
		close(work)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	start := time.Now()
	run(func(f string, size int64) error {
		return writeFile(ctx, bh, f, newGen(seed(f), size), rand.New(rand.NewPCG(seed(f), 9)))
	})
	require.NoError(t, bh.EndBackup(ctx))
	t.Logf("backup of %d files written in %v", len(files), time.Since(start))
	start = time.Now()
	rbh := findBackup(t, s, dir, name)
	run(func(f string, size int64) error {
		r, err := rbh.ReadFile(ctx, f)
		if err != nil {
			return err
		}
		defer r.Close()
		v := newVerify(seed(f), size)
		if _, err := io.Copy(v, r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := v.check(); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		return nil
	})
	t.Logf("backup of %d files read back and verified in %v", len(files), time.Since(start))
}

// TestFaultsChosenRequests fails chosen requests (part 2 of a file) with every
// kind of fault, on upload and on download, and checks the backup still round-trips.
func TestFaultsChosenRequests(t *testing.T) {
	for _, kind := range remoteBackends {
		t.Run(kind, func(t *testing.T) {
			s, p, logger := proxied(t, kind, nil)
			p.StallFor = 20 * time.Second
			p.FailMatching("", "a.part-00000002", splitstoragetest.SlowDown, 1)
			p.FailMatching("", "b.part-00000002", splitstoragetest.InternalError, 2)
			p.FailMatching("", "c.part-00000002", splitstoragetest.CutRequest, 1)
			p.FailMatching("", "d.part-00000002", splitstoragetest.Stall, 1)
			p.FailMatching("", ".started", splitstoragetest.CutResponse, 1) // answer lost: the retry finds its own marker
			roundTripFiles := map[string]int64{"a": 9 << 20, "b": 9 << 20, "c": 9 << 20, "d": 9 << 20, "e": 9 << 20}
			// Downloads: body cut mid-way (the reader resumes at the offset reached), 503, stall.
			p.FailMatching("GET", "e.part-00000002", splitstoragetest.CutResponse, 3)
			p.FailMatching("GET", "a.part-00000003", splitstoragetest.SlowDown, 1)
			p.FailMatching("GET", "b.part-00000001", splitstoragetest.Stall, 1)
			start := time.Now()
			roundTrip(t, s, "ks/0", "2026-03-01.chosen", roundTripFiles, 3)
			inj := p.Injected()
			t.Logf("injected %v in %d requests, %d retries, %v", inj, p.Requests(), s.Retries(), time.Since(start))
			// Every injected fault is one retry of ours; the SDKs retry nothing
			// (TestOneRetryLayer). More only where a stall outlasts a timeout twice.
			assert.GreaterOrEqual(t, s.Retries(), int64(11))
			assert.Equal(t, 11, inj[splitstoragetest.SlowDown]+inj[splitstoragetest.InternalError]+inj[splitstoragetest.CutRequest]+
				inj[splitstoragetest.Stall]+inj[splitstoragetest.CutResponse])
			logged := logger.String()
			if t.Failed() {
				t.Log(logged)
			}
			assert.Contains(t, logged, "retrying in")
			assert.Contains(t, logged, "resume at offset")
			assert.NotContains(t, logged, splitstoragetest.S3SecretKey)
		})
	}
}

// TestFaultsRandom: with 10% of requests failing (503 SlowDown, 500, cut
// request, cut response, stall), many large files round-trip byte-identical.
// The S3 case is the 20 files of 256 MiB (smaller with -short or
// SPLIT_FAULT_FILE_MIB); GCS runs a smaller set.
func TestFaultsRandom(t *testing.T) {
	for _, kind := range remoteBackends {
		t.Run(kind, func(t *testing.T) {
			// Many parts, not many bytes: faults are drawn per request, so 8-9
			// parts a file give S3 about 640 requests to fail at 1/8 of the bytes.
			nfiles, mib := 20, int64(32)
			if kind != splitstorage.BackendS3 {
				nfiles, mib = 8, 16
			}
			if v := os.Getenv("SPLIT_FAULT_FILE_MIB"); v != "" {
				fmt.Sscan(v, &mib)
			}
			s, p, _ := proxied(t, kind, func(c *splitstorage.Config) {
				c.PartSize = 4 << 20
				c.MemoryBudget = 8 << 20
				c.UploadConcurrency = 4
				c.ReadAhead = 1 << 20
				c.RetryMaxAttempts = 10
			})
			p.StallFor = 20 * time.Second
			p.SetFailRate(0.10, splitstoragetest.SlowDown, splitstoragetest.InternalError, splitstoragetest.CutRequest,
				splitstoragetest.CutResponse, splitstoragetest.Stall)
			files := map[string]int64{}
			for i := range nfiles {
				files[fmt.Sprintf("f%02d", i)] = mib<<20 + int64(i)*4099
			}
			start := time.Now()
			roundTrip(t, s, "ks/0", "2026-03-02.random", files, 4)
			t.Logf("%s: %d files x %d MiB round-trip with 10%% faults: %v; injected %v in %d requests; %d retries",
				kind, nfiles, mib, time.Since(start), p.Injected(), p.Requests(), s.Retries())
			assert.Greater(t, s.Retries(), int64(0))
		})
	}
}

// TestStoreGone: the store goes away for good in the middle of a backup: the
// backup fails within the retry budget and nothing of it is listed.
func TestStoreGone(t *testing.T) {
	for _, kind := range remoteBackends {
		t.Run(kind, func(t *testing.T) {
			s, p, _ := proxied(t, kind, func(c *splitstorage.Config) {
				c.RetryMaxAttempts = 4
				c.RetryInitialBackoff = 50 * time.Millisecond
				c.RetryMaxBackoff = 200 * time.Millisecond
			})
			ctx := context.Background()
			bh, err := s.StartBackup(ctx, "ks/0", "2026-03-03.gone")
			require.NoError(t, err)
			require.NoError(t, writeFile(ctx, bh, "early", newGen(1, 9<<20), rand.New(rand.NewPCG(1, 1))))
			p.SetDown(true)
			start := time.Now()
			werr := writeFile(ctx, bh, "late", newGen(2, 20<<20), rand.New(rand.NewPCG(1, 1)))
			require.Error(t, werr)
			eerr := bh.EndBackup(ctx)
			require.Error(t, eerr)
			elapsed := time.Since(start)
			// 4 attempts, backoff <= 50+100+200ms, per part: bounded well under 10s.
			assert.Less(t, elapsed, 10*time.Second)
			assert.Contains(t, werr.Error(), "giving up after 4 attempts")
			t.Logf("failed after %v: %v", elapsed, werr)
			abortErr := bh.AbortBackup(ctx)
			assert.Error(t, abortErr, "abort cannot delete while the store is gone")
			p.SetDown(false)
			bhs, err := s.ListBackups(ctx, "ks/0")
			require.NoError(t, err)
			assert.Empty(t, names(bhs))
			require.NoError(t, s.RemoveBackup(ctx, "ks/0", "2026-03-03.gone"))
			assert.Empty(t, objects(t, s, "ks/0/2026-03-03.gone/"))
		})
	}
}

// TestOneRetryLayer: the SDKs never retry on their own. Through the raw
// backend (no retrying wrapper), every request the proxy fails reaches the
// caller as an error after exactly one request, and a body cut mid-way is an
// error of the read (the GCS library's reader would reopen it by itself).
// TestAStoreThatKeepsFailingIsNotDamage: a part the store answers with 500
// at every attempt, or whose body is cut on the way at every attempt,
// fails verify and the read as could-not-be-read (go/internal/unreadable:
// exit 3, never a verdict), for every backend; a part shorter than its
// index says is still damage.
func TestAStoreThatKeepsFailingIsNotDamage(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"s3", "gcs", "azure"} {
		t.Run(kind, func(t *testing.T) {
			s, p, _ := proxied(t, kind, func(c *splitstorage.Config) {
				c.RetryMaxAttempts, c.RetryInitialBackoff, c.RetryMaxBackoff = 3, 10*time.Millisecond, 20*time.Millisecond
			})
			bh := storedFile(t, s, 3<<20)
			for fault, want := range map[splitstoragetest.Fault]string{
				splitstoragetest.InternalError: "giving up after 3 attempts",
				// Each answer cut, its resumptions too: the object is whole
				// in the store.
				splitstoragetest.CutResponse: "giving up after 3 attempts|body broken 3 times",
			} {
				p.FailMatching("GET", "part-", fault, 1000)
				_, verr := bh.VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
				require.Error(t, verr, fault)
				assert.Regexp(t, want, verr.Error())
				assert.True(t, unreadable.Is(verr), "%v", verr)
				_, rerr := readAll(ctx, bh, "f")
				require.Error(t, rerr, fault)
				assert.True(t, unreadable.Is(rerr), "%v", rerr)
				p.ClearMatching()
			}
		})
	}
	t.Run("a short part", func(t *testing.T) {
		cfg := splitstorage.DefaultConfig()
		cfg.File.Root, cfg.PartSize = t.TempDir(), 1<<20
		bh := storedFile(t, newStorage(t, cfg), 3<<20)
		require.NoError(t, os.Truncate(filepath.Join(cfg.File.Root, "ks", "0", bh.Name(), "f.part-00000002"), 1000))
		_, verr := bh.VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
		require.ErrorContains(t, verr, "size mismatch: expected 1048576 bytes, found 1000")
		assert.False(t, unreadable.Is(verr))
		_, rerr := readAll(ctx, bh, "f")
		require.ErrorContains(t, rerr, "size mismatch")
		assert.False(t, unreadable.Is(rerr))
	})
}

// storedFile stores a complete backup ks/0/<name> of one file f of size
// bytes in s and returns its handle as ListBackups gives it.
func storedFile(t *testing.T, s *splitstorage.Storage, size int64) *splitstorage.Handle {
	ctx := context.Background()
	bh, err := s.StartBackup(ctx, "ks/0", "2026-03-03.120000.zone1-0000000100")
	require.NoError(t, err)
	require.NoError(t, writeFile(ctx, bh, "f", newGen(1, size), rand.New(rand.NewPCG(1, 1))))
	require.NoError(t, bh.EndBackup(ctx))
	bhs, err := s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 1)
	return bhs[0].(*splitstorage.Handle)
}

// Through the storage, that cut costs exactly one retry of ours, counted.
func TestOneRetryLayer(t *testing.T) {
	for _, kind := range remoteBackends {
		t.Run(kind, func(t *testing.T) {
			s, p, logger := proxied(t, kind, nil)
			ctx := context.Background()
			be, err := s.RawBackendForTest(ctx)
			require.NoError(t, err)
			data := make([]byte, 1<<20)
			for i := range data {
				data[i] = byte(i * 7)
			}
			sum := crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))
			key := "ks/0/one-layer/obj"
			require.NoError(t, be.Put(ctx, key, bytes.NewReader(data), int64(len(data)), backend.PutOptions{CRC32C: sum}))

			once := func(name string, fault splitstoragetest.Fault, op func() error) {
				t.Helper()
				p.FailMatching("", "one-layer", fault, 1)
				before := p.Requests()
				err := op()
				assert.Error(t, err, name)
				assert.Equal(t, int64(1), p.Requests()-before, "%s: requests the SDK made for one call", name)
			}
			for _, f := range []splitstoragetest.Fault{splitstoragetest.SlowDown, splitstoragetest.InternalError, splitstoragetest.CutRequest} {
				once("put/"+f.String(), f, func() error {
					return be.Put(ctx, key+"2", bytes.NewReader(data), int64(len(data)), backend.PutOptions{CRC32C: sum})
				})
				once("get/"+f.String(), f, func() error {
					r, err := be.Get(ctx, key, 0, -1)
					if err == nil {
						_, err = io.Copy(io.Discard, r)
						r.Close()
					}
					return err
				})
				once("stat/"+f.String(), f, func() error { _, err := be.Stat(ctx, key); return err })
				once("list/"+f.String(), f, func() error { _, err := be.List(ctx, "ks/0/one-layer/", false); return err })
				once("delete/"+f.String(), f, func() error { return be.Delete(ctx, key+"3") })
			}
			once("get body cut", splitstoragetest.CutResponse, func() error {
				r, err := be.Get(ctx, key, 0, -1)
				require.NoError(t, err)
				defer r.Close()
				_, err = io.Copy(io.Discard, r)
				return err
			})

			// The storage's retrying wrapper: the same cut is one retry, and the bytes are whole.
			rbe, err := s.RetryingBackendForTest(ctx)
			require.NoError(t, err)
			before, retries := p.Requests(), s.Retries()
			p.FailMatching("GET", "one-layer", splitstoragetest.CutResponse, 1)
			r, err := rbe.Get(ctx, key, 0, -1)
			require.NoError(t, err)
			got, err := io.ReadAll(r)
			r.Close()
			require.NoError(t, err)
			assert.Equal(t, data, got)
			assert.Equal(t, int64(1), s.Retries()-retries, "retries of ours")
			assert.Equal(t, int64(2), p.Requests()-before, "requests for a read cut once")
			assert.Contains(t, logger.String(), "resume at offset")
		})
	}
}
