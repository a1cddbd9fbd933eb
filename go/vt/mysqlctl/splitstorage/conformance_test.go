package splitstorage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	stats "vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

var backends = splitstoragetest.All()

// TestConformance runs one suite against every backend.
func TestConformance(t *testing.T) {
	for _, kind := range backends {
		t.Run(kind, func(t *testing.T) {
			srv := splitstoragetest.Start(t, kind)
			srv.Setenv(t)
			runConformance(t, srv)
		})
	}
}

func newStorage(t *testing.T, c splitstorage.Config) *splitstorage.Storage {
	t.Helper()
	s, err := splitstorage.New(c)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// writeFile adds a file with content in random-sized writes.
func writeFile(ctx context.Context, bh backupstorage.BackupHandle, name string, r io.Reader, rng *rand.Rand) error {
	w, err := bh.AddFile(ctx, name, -1)
	if err != nil {
		return err
	}
	buf := make([]byte, 3<<20)
	for {
		n := 1 + rng.IntN(len(buf))
		n, rerr := r.Read(buf[:n])
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				w.Close()
				return err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			w.Close()
			return rerr
		}
	}
	return w.Close()
}

func readAll(ctx context.Context, bh backupstorage.BackupHandle, name string) ([]byte, error) {
	r, err := bh.ReadFile(ctx, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func findBackup(t *testing.T, s backupstorage.BackupStorage, dir, name string) backupstorage.BackupHandle {
	t.Helper()
	bhs, err := s.ListBackups(context.Background(), dir)
	require.NoError(t, err)
	for _, bh := range bhs {
		if bh.Name() == name {
			return bh
		}
	}
	t.Fatalf("backup %s/%s not listed", dir, name)
	return nil
}

func names(bhs []backupstorage.BackupHandle) []string {
	var out []string
	for _, bh := range bhs {
		out = append(out, bh.Name())
	}
	return out
}

func objects(t *testing.T, s *splitstorage.Storage, prefix string) []backend.ObjectInfo {
	t.Helper()
	be, err := s.RawBackendForTest(context.Background())
	require.NoError(t, err)
	objs, err := be.List(context.Background(), prefix, false)
	require.NoError(t, err)
	return objs
}

func runConformance(t *testing.T, srv *splitstoragetest.Server) {
	ctx := context.Background()
	c := srv.Config
	c.PartSize = 1 << 20
	c.MemoryBudget = 16 << 20
	fake := stats.NewFakeStats()
	base := newStorage(t, c)
	s := base.WithParams(backupstorage.Params{Logger: backupstorage.NoParams().Logger, Stats: fake}).(*splitstorage.Storage)
	ps := c.PartSize
	dir := "ks/0"

	files := map[string]int64{
		"MANIFEST": 321, "0": 0, "1": ps, "2": ps + 1, "3": 3*ps + ps/2, "4": ps - 1, "5": 5*ps + 7,
	}
	seeds := map[string]uint64{}
	i := uint64(1)
	for f := range files {
		seeds[f] = i
		i++
	}

	t.Run("WriteReadBack", func(t *testing.T) {
		bh, err := s.StartBackup(ctx, dir, "2026-01-01.000000.zone1-0000000100")
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make(chan error, len(files))
		for f, size := range files {
			wg.Go(func() {
				errs <- writeFile(ctx, bh, f, newGen(seeds[f], size), rand.New(rand.NewPCG(seeds[f], 0)))
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		// not listed before EndBackup
		bhs, err := s.ListBackups(ctx, dir)
		require.NoError(t, err)
		assert.Empty(t, names(bhs))
		require.NoError(t, bh.EndBackup(ctx))
		assert.False(t, bh.HasErrors())

		rbh := findBackup(t, s, dir, "2026-01-01.000000.zone1-0000000100")
		assert.Equal(t, dir, rbh.Directory())
		for f, size := range files {
			got, err := readAll(ctx, rbh, f)
			require.NoError(t, err, f)
			require.True(t, bytes.Equal(genBytes(seeds[f], size), got), "file %s differs", f)
		}
		_, err = rbh.ReadFile(ctx, "nosuchfile")
		require.ErrorContains(t, err, "nosuchfile")
		_, err = rbh.AddFile(ctx, "x", 1)
		require.Error(t, err)
		_, err = bh.ReadFile(ctx, "MANIFEST")
		require.Error(t, err)

		// Every part has exactly the part size but the last of each file; names sort in part order.
		objs := objects(t, s, dir+"/2026-01-01.000000.zone1-0000000100/")
		parts := map[string][]backend.ObjectInfo{}
		for _, o := range objs {
			if k, _, ok := strings.Cut(o.Key, ".part-"); ok {
				parts[k] = append(parts[k], o)
			}
		}
		for f, size := range files {
			ps2 := parts[dir+"/2026-01-01.000000.zone1-0000000100/"+f]
			want := int((size + ps - 1) / ps)
			require.Len(t, ps2, want, f)
			for i, o := range ps2 {
				assert.Equal(t, splitstorage.PartKey(dir, "2026-01-01.000000.zone1-0000000100", f, i+1), o.Key)
				if i < want-1 {
					assert.Equal(t, ps, o.Size, o.Key)
				} else {
					assert.Equal(t, size-int64(i)*ps, o.Size, o.Key)
				}
			}
		}
		// Stats were reported per part.
		ops := map[string]int{}
		for _, sc := range fake.ScopeReturns {
			for _, sub := range sc.ScopeReturns {
				if op, ok := sub.ScopeV[stats.ScopeOperation]; ok && len(sub.TimedIncrementBytesCalls) > 0 {
					ops[string(op)] += len(sub.TimedIncrementBytesCalls)
				}
			}
			assert.Equal(t, stats.ScopeValue("split"), sc.ScopeV[stats.ScopeImplementation])
			assert.Equal(t, stats.ScopeValue("BackupStorage"), sc.ScopeV[stats.ScopeComponent])
		}
		assert.Greater(t, ops["Part:Upload"], 10)
		assert.Greater(t, ops["Part:Download"], 10)
	})

	t.Run("NoOverwrite", func(t *testing.T) {
		_, err := s.StartBackup(ctx, dir, "2026-01-01.000000.zone1-0000000100")
		require.Error(t, err)
		assert.ErrorIs(t, err, splitstorage.ErrExists)
		bh, err := s.StartBackup(ctx, dir, "2026-01-02.000000.zone1-0000000100")
		require.NoError(t, err)
		_, err = s.StartBackup(ctx, dir, "2026-01-02.000000.zone1-0000000100")
		assert.ErrorIs(t, err, splitstorage.ErrExists)
		require.NoError(t, bh.AbortBackup(ctx))
	})

	t.Run("ListSortedCompleteOnly", func(t *testing.T) {
		for _, n := range []string{"2026-01-05.x", "2026-01-03.x", "2026-01-04.x"} {
			bh, err := s.StartBackup(ctx, dir, n)
			require.NoError(t, err)
			require.NoError(t, writeFile(ctx, bh, "MANIFEST", strings.NewReader("{}"), rand.New(rand.NewPCG(1, 1))))
			if n != "2026-01-04.x" {
				require.NoError(t, bh.EndBackup(ctx))
			}
		}
		bhs, err := s.ListBackups(ctx, dir)
		require.NoError(t, err)
		assert.Equal(t, []string{"2026-01-01.000000.zone1-0000000100", "2026-01-03.x", "2026-01-05.x"}, names(bhs))
		bhs, err = s.ListBackups(ctx, "ks/nosuchshard")
		require.NoError(t, err)
		assert.Empty(t, bhs)
	})

	t.Run("EndBackupRefusesOpenFile", func(t *testing.T) {
		bh, err := s.StartBackup(ctx, dir, "2026-01-06.open")
		require.NoError(t, err)
		w, err := bh.AddFile(ctx, "0", 10)
		require.NoError(t, err)
		_, err = w.Write([]byte("hello"))
		require.NoError(t, err)
		require.ErrorContains(t, bh.EndBackup(ctx), "still open")
		_ = w.Close() // the failed EndBackup stopped the backup: this part is not uploaded
		bhs, err := s.ListBackups(ctx, dir)
		require.NoError(t, err)
		assert.NotContains(t, names(bhs), "2026-01-06.open")
		require.NoError(t, bh.AbortBackup(ctx))
	})

	t.Run("AbortAndRemoveDeleteEverything", func(t *testing.T) {
		bh, err := s.StartBackup(ctx, dir, "2026-01-07.abort")
		require.NoError(t, err)
		require.NoError(t, writeFile(ctx, bh, "0", newGen(9, 3*ps+5), rand.New(rand.NewPCG(1, 1))))
		assert.NotEmpty(t, objects(t, s, dir+"/2026-01-07.abort/"))
		require.NoError(t, bh.AbortBackup(ctx))
		assert.Empty(t, objects(t, s, dir+"/2026-01-07.abort/"))

		require.NoError(t, s.RemoveBackup(ctx, dir, "2026-01-03.x"))
		require.NoError(t, s.RemoveBackup(ctx, dir, "2026-01-04.x"))
		assert.Empty(t, objects(t, s, dir+"/2026-01-03.x/"))
		assert.Empty(t, objects(t, s, dir+"/2026-01-04.x/"))
		bhs, err := s.ListBackups(ctx, dir)
		require.NoError(t, err)
		assert.Equal(t, []string{"2026-01-01.000000.zone1-0000000100", "2026-01-05.x"}, names(bhs))
		// The name can be used again once removed.
		bh, err = s.StartBackup(ctx, dir, "2026-01-03.x")
		require.NoError(t, err)
		require.NoError(t, bh.AbortBackup(ctx))
	})

	t.Run("RemovedWhileRunning", func(t *testing.T) { runRemovedWhileRunning(t, s, dir) })
	t.Run("OnlyProvenBackupsAreOurs", func(t *testing.T) { runOnlyProvenBackupsAreOurs(t, s) })
	t.Run("ObjectsPutInABackupAreLeftAlone", func(t *testing.T) { runObjectsPutInABackupAreLeftAlone(t, s) })

	t.Run("CloseIsReusable", func(t *testing.T) {
		require.NoError(t, s.Close())
		bhs, err := s.ListBackups(ctx, dir)
		require.NoError(t, err)
		assert.Len(t, bhs, 2)
		require.NoError(t, s.Close())
	})

	t.Run("Corruption", func(t *testing.T) { runCorruption(t, s) })
}

func runCorruption(t *testing.T, s *splitstorage.Storage) {
	ctx := context.Background()
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	dir, name := "ks/-80", "2026-02-01.corrupt"
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	const size = 5<<20 + 100 // 1 MiB parts: 6 parts
	for _, f := range []string{"flip", "trunc", "missing", "extra"} {
		require.NoError(t, writeFile(ctx, bh, f, newGen(42, size), rand.New(rand.NewPCG(1, 2))))
	}
	require.NoError(t, bh.EndBackup(ctx))
	rbh := findBackup(t, s, dir, name)

	get := func(key string) []byte {
		r, err := be.Get(ctx, key, 0, -1)
		require.NoError(t, err)
		defer r.Close()
		b, err := io.ReadAll(r)
		require.NoError(t, err)
		return b
	}
	put := func(key string, b []byte) {
		require.NoError(t, be.Put(ctx, key, bytes.NewReader(b), int64(len(b)), backend.PutOptions{CRC32C: crc32c(b)}))
	}
	b := get(splitstorage.PartKey(dir, name, "flip", 2))
	b[12345] ^= 0x20
	put(splitstorage.PartKey(dir, name, "flip", 2), b)
	b = get(splitstorage.PartKey(dir, name, "trunc", 3))
	put(splitstorage.PartKey(dir, name, "trunc", 3), b[:len(b)-10])
	require.NoError(t, be.Delete(ctx, splitstorage.PartKey(dir, name, "missing", 4)))
	b = get(splitstorage.PartKey(dir, name, "extra", 6))
	put(splitstorage.PartKey(dir, name, "extra", 6), append(b, 'x'))

	for f, want := range map[string][]string{
		"flip":    {"part 2", "checksum mismatch", "expected crc32c"},
		"trunc":   {"part 3", "size mismatch", "expected 1048576 bytes, found 1048566"},
		"missing": {"part 4", "part missing", "expected 1048576 bytes"},
		"extra":   {"part 6", "size mismatch", "expected 100 bytes, found 101 or more"},
	} {
		start := time.Now()
		_, err := readAll(ctx, rbh, f)
		require.Error(t, err, f)
		for _, w := range append(want, "backup "+dir+"/"+name, "file "+f) {
			assert.Contains(t, err.Error(), w, f)
		}
		assert.Less(t, time.Since(start), 5*time.Second, "corruption is not retried: %s", f)
	}
	require.NoError(t, s.RemoveBackup(ctx, dir, name))
}

var _ = errors.New
var _ = fmt.Sprint

// runRemovedWhileRunning: a backup removed while it runs (RemoveBackup,
// fifoverify --remove-incomplete) never completes over its missing objects.
func runRemovedWhileRunning(t *testing.T, s *splitstorage.Storage, dir string) {
	ctx := context.Background()
	ps := int64(1 << 20)
	listed := func() []string {
		bhs, err := s.ListBackups(ctx, dir)
		require.NoError(t, err)
		return names(bhs)
	}

	// Removed mid-way: the backup goes on writing, and EndBackup refuses.
	name := "2026-01-08.removed"
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(8, 0))
	require.NoError(t, writeFile(ctx, bh, "a", newGen(1, 3*ps), rng))
	require.NoError(t, s.RemoveBackup(ctx, dir, name))
	require.NoError(t, writeFile(ctx, bh, "b", newGen(2, 2*ps), rng))
	err = bh.EndBackup(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not completing backup "+dir+"/"+name)
	assert.Contains(t, err.Error(), "its start marker is gone")
	assert.Contains(t, err.Error(), dir+"/"+name+"/a.part-00000001 is missing")
	assert.Contains(t, err.Error(), "was the backup removed while it ran?")
	assert.NotContains(t, listed(), name)
	assert.Empty(t, objects(t, s, dir+"/"+name+"/"), "EndBackup finished the removal: the parts written after it are gone")

	// Removed while it completes, at random moments of EndBackup: once both
	// returned the backup is neither listed nor leaves an object behind.
	completed := 0
	const trials = 8
	for i := range trials {
		name := fmt.Sprintf("2026-01-09.race%d", i)
		bh, err := s.StartBackup(ctx, dir, name)
		require.NoError(t, err)
		require.NoError(t, writeFile(ctx, bh, "a", newGen(uint64(i), 2*ps+1), rng))
		var endErr, rmErr error
		var wg sync.WaitGroup
		delay := time.Duration(rng.IntN(20)) * time.Millisecond
		wg.Go(func() { endErr = bh.EndBackup(ctx) })
		wg.Go(func() { time.Sleep(delay); rmErr = s.RemoveBackup(ctx, dir, name) })
		wg.Wait()
		require.NoError(t, rmErr)
		if endErr == nil {
			completed++
		} else {
			// Which check saw the removal depends on the interleaving (or
			// the server refused the marker's write under a removal).
			assert.Contains(t, endErr.Error(), dir+"/"+name, "trial %d: the error names the backup", i)
		}
		assert.NotContains(t, listed(), name, "trial %d: listed after its removal", i)
		assert.Empty(t, objects(t, s, dir+"/"+name+"/"), "trial %d: objects left", i)
	}
	t.Logf("%d of %d backups removed while completing had completed first; the others failed", completed, trials)
}
