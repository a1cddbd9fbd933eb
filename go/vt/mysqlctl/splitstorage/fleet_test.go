package splitstorage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// shardWalk is what the fleet tests' Build says of a shard: its complete
// and its incomplete backups, from the storage's own listings.
type shardWalk struct {
	Complete   []string `json:"complete"`
	Incomplete []string `json:"incomplete"`
}

func walkShard(ctx context.Context, s *splitstorage.Storage, dir string) ([]byte, error) {
	var w shardWalk
	bhs, err := s.ListBackups(ctx, dir)
	if err != nil {
		return nil, err
	}
	for _, bh := range bhs {
		w.Complete = append(w.Complete, bh.Name())
	}
	inc, err := s.ListIncomplete(ctx, dir)
	if err != nil {
		return nil, err
	}
	for _, b := range inc {
		w.Incomplete = append(w.Incomplete, b.Name)
	}
	return json.Marshal(w)
}

// fleetView is one refresh through a fresh Storage (nothing cached): each
// shard's document, and why each walked one was walked.
func fleetView(t *testing.T, cfg splitstorage.Config, opts splitstorage.FleetOptions) (docs, walked map[string]string) {
	t.Helper()
	s := newStorage(t, cfg)
	if opts.Build == nil {
		opts.Build = func(ctx context.Context, dir string) ([]byte, error) { return walkShard(ctx, s, dir) }
	}
	shards, rep, err := s.Fleet(context.Background(), opts)
	require.NoError(t, err)
	docs, walked = map[string]string{}, map[string]string{}
	for _, sh := range shards {
		require.NoError(t, sh.Err, sh.Dir)
		docs[sh.Dir] = string(sh.Doc)
		if sh.Rebuilt != "" {
			walked[sh.Dir] = sh.Rebuilt
		}
	}
	assert.Equal(t, len(shards), rep.Shards)
	assert.Equal(t, len(walked), rep.Rebuilt)
	return docs, walked
}

// fullWalk is what every shard's walk says, without the summaries: what a
// view must equal.
func fullWalk(t *testing.T, cfg splitstorage.Config) map[string]string {
	t.Helper()
	ctx := context.Background()
	s := newStorage(t, cfg)
	dirs, err := s.ListBackupDirs(ctx)
	require.NoError(t, err)
	out := map[string]string{}
	for _, d := range dirs {
		doc, err := walkShard(ctx, s, d)
		require.NoError(t, err)
		out[d] = string(doc)
	}
	return out
}

func localFleet(t *testing.T, shards, backups int) splitstorage.Config {
	t.Helper()
	cfg := splitstoragetest.TestConfig()
	cfg.Backend = splitstorage.BackendFile
	cfg.File.Root = t.TempDir()
	splitstoragetest.PlantFleet(t, newStorage(t, cfg), shards, backups, 4)
	return cfg
}

// fleetFiles lists what the storage keeps under .fleet/ of root.
func fleetFiles(t *testing.T, root, under string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(filepath.Join(root, ".fleet", under), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// TestFleetSummaries: the first view walks every shard and saves its
// summary; the next reads them and walks none, with the same answer as a
// full walk; a change made through the storage (a backup completed, one
// removed) is walked again at once, and says why; a directory with no
// backup of the storage is not shown. The marks and older generations a
// summary covers are removed.
func TestFleetSummaries(t *testing.T) {
	ctx := context.Background()
	cfg := localFleet(t, 3, 3)
	foreign := filepath.Join(cfg.File.Root, "other", "0", "x", "data")
	require.NoError(t, os.MkdirAll(filepath.Dir(foreign), 0o750))
	require.NoError(t, os.WriteFile(foreign, []byte("not ours"), 0o640))

	docs, walked := fleetView(t, cfg, splitstorage.FleetOptions{})
	require.Equal(t, fullWalk(t, cfg), docs)
	require.Len(t, docs, 3, "the directory of another tool is not shown")
	for _, why := range walked {
		assert.Equal(t, "no summary yet", why)
	}
	require.Len(t, walked, 3)
	assert.Empty(t, fleetFiles(t, cfg.File.Root, "changes"), "every mark is covered, and removed")
	assert.Len(t, fleetFiles(t, cfg.File.Root, "summaries"), 4, "a summary per directory, the other tool's included (it says: not ours)")

	docs, walked = fleetView(t, cfg, splitstorage.FleetOptions{})
	assert.Equal(t, fullWalk(t, cfg), docs)
	assert.Empty(t, walked, "nothing changed: every shard from its summary")

	s := newStorage(t, cfg)
	splitstoragetest.Plant(t, s, splitstoragetest.FleetShard(1), "2099-01-01.000000.zone1-0000000100", `{"BackupMethod":"fifo"}`)
	bhs, err := s.ListBackups(ctx, splitstoragetest.FleetShard(2))
	require.NoError(t, err)
	require.NoError(t, s.RemoveBackup(ctx, splitstoragetest.FleetShard(2), bhs[0].Name()))

	docs, walked = fleetView(t, cfg, splitstorage.FleetOptions{})
	assert.Equal(t, fullWalk(t, cfg), docs)
	assert.Contains(t, docs[splitstoragetest.FleetShard(1)], "2099-01-01.000000.zone1-0000000100")
	assert.NotContains(t, docs[splitstoragetest.FleetShard(2)], bhs[0].Name())
	require.Len(t, walked, 2, "%v", walked)
	for _, d := range []string{splitstoragetest.FleetShard(1), splitstoragetest.FleetShard(2)} {
		assert.Contains(t, walked[d], "changed since its summary", d)
	}
	assert.Len(t, fleetFiles(t, cfg.File.Root, "summaries"), 4, "the generations a new summary replaces are removed")
	assert.Empty(t, fleetFiles(t, cfg.File.Root, "changes"))
}

// TestFleetSummariesStaleOrMissing: a summary removed, damaged or older
// than the limit, and a change still in flight (a begin mark without its
// end: its writer died, or is still at work), are walked again, with the
// same answer as a full walk, and say why; an abandoned begin (an hour
// old) is covered by the next walk.
func TestFleetSummariesStaleOrMissing(t *testing.T) {
	cfg := localFleet(t, 2, 2)
	fleetView(t, cfg, splitstorage.FleetOptions{})
	root, d0, d1 := cfg.File.Root, splitstoragetest.FleetShard(0), splitstoragetest.FleetShard(1)
	summaryOf := func(dir string) string {
		files := fleetFiles(t, root, "summaries/"+dir)
		require.Len(t, files, 1)
		return filepath.Join(root, files[0])
	}

	require.NoError(t, os.Remove(summaryOf(d0)))
	require.NoError(t, os.WriteFile(summaryOf(d1), []byte(`{"version":1,"dir":"elsewhere"}`), 0o640))
	docs, walked := fleetView(t, cfg, splitstorage.FleetOptions{})
	assert.Equal(t, fullWalk(t, cfg), docs)
	assert.Equal(t, "no summary yet", walked[d0])
	assert.Contains(t, walked[d1], "corrupt summary")

	_, walked = fleetView(t, cfg, splitstorage.FleetOptions{MaxAge: time.Nanosecond})
	assert.Contains(t, walked[d0], "its summary is older than")
	assert.Len(t, walked, 2)

	// A writer that died between its begin mark and its change.
	begin := filepath.Join(root, ".fleet", "changes", d0, "00000000000000000001-000000000000.begin")
	require.NoError(t, os.MkdirAll(filepath.Dir(begin), 0o750))
	require.NoError(t, os.WriteFile(begin, []byte(`{"op":"put","key":"x"}`), 0o640))
	for range 2 {
		docs, walked = fleetView(t, cfg, splitstorage.FleetOptions{})
		assert.Equal(t, fullWalk(t, cfg), docs)
		assert.Contains(t, walked[d0], "changed since its summary (00000000000000000001-000000000000.begin)", "in flight: walked every time")
		assert.Len(t, walked, 1)
	}
	old := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(begin, old, old))
	_, walked = fleetView(t, cfg, splitstorage.FleetOptions{})
	assert.Len(t, walked, 1, "abandoned: covered by this walk")
	_, walked = fleetView(t, cfg, splitstorage.FleetOptions{})
	assert.Empty(t, walked)
	assert.NoFileExists(t, begin)

	_, walked = fleetView(t, cfg, splitstorage.FleetOptions{Rebuild: true})
	assert.Equal(t, map[string]string{d0: "asked to rebuild", d1: "asked to rebuild"}, walked)
}

// TestFleetChangesDuringARefresh: a backup completed in a shard after the
// refresh listed its marks (here: while its walk runs, after the walk's
// listing) and one removed in another, and two refreshes at once: every
// answer is one a walk could give at some point of the refresh, and the
// next refresh shows both changes.
func TestFleetChangesDuringARefresh(t *testing.T) {
	cfg := localFleet(t, 2, 2)
	fleetView(t, cfg, splitstorage.FleetOptions{})
	d0, d1 := splitstoragetest.FleetShard(0), splitstoragetest.FleetShard(1)
	// Both shards changed once, so that both are walked.
	s := newStorage(t, cfg)
	splitstoragetest.Plant(t, s, d0, "2099-01-01.000000.zone1-0000000100", `{"BackupMethod":"fifo"}`)
	splitstoragetest.Plant(t, s, d1, "2099-01-01.000000.zone1-0000000100", `{"BackupMethod":"fifo"}`)

	var once sync.Once
	build := func(ctx context.Context, dir string) ([]byte, error) {
		doc, err := walkShard(ctx, s, dir)
		once.Do(func() {
			splitstoragetest.Plant(t, s, d0, "2099-02-01.000000.zone1-0000000100", `{"BackupMethod":"fifo"}`)
			require.NoError(t, s.RemoveBackup(ctx, d1, "2099-01-01.000000.zone1-0000000100"))
		})
		return doc, err
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fleetView(t, cfg, splitstorage.FleetOptions{Build: build, Workers: 1})
		}()
	}
	wg.Wait()

	docs, walked := fleetView(t, cfg, splitstorage.FleetOptions{})
	assert.Equal(t, fullWalk(t, cfg), docs)
	assert.Contains(t, docs[d0], "2099-02-01.000000.zone1-0000000100")
	assert.NotContains(t, docs[d1], "2099-01-01.000000.zone1-0000000100")
	_, walked2 := fleetView(t, cfg, splitstorage.FleetOptions{})
	assert.Empty(t, walked2, "after %v: settled", walked)
	assert.Len(t, fleetFiles(t, cfg.File.Root, "summaries"), 2)
}

// TestWhatIsMarked: a write of a backup's own '.'-leading objects (its
// markers, records, lock records) marks its directory's change; its
// parts, indexes and read leases do not (the view is not made of them),
// nor does anything outside a backup directory.
func TestWhatIsMarked(t *testing.T) {
	for key, want := range map[string]string{
		"ks/0/b/.started": "ks/0", "ks/0/b/.complete": "ks/0", "ks/-80/b/.sidecar-verification": "ks/-80",
		"ks/0/b/.quarantined": "ks/0", "ks/0/b/.locked-20260101T000000.000000000Z": "ks/0", "ks/0/b/.retired": "ks/0",
		"ks/0/b/.seal": "ks/0", "ks/0/b/.base": "ks/0", "a/b/c/n/.complete": "a/b/c",
		"ks/0/b/MANIFEST.part-00000001": "", "ks/0/b/MANIFEST.index": "", "ks/0/b/.reading-host-1": "",
		".split-storage": "", ".fleet/changes/ks/0/x.begin": "", ".fleet/summaries/ks/0/0000000000000001": "", "b/.complete": "",
		"ks/../b/.complete": "", "ks/0/.b/.complete": "",
	} {
		dir, ok := splitstorage.ChangedDirForTest(key)
		assert.Equal(t, want, dir, key)
		assert.Equal(t, want != "", ok, key)
	}
}

// TestFleetSummariesHeld: one Storage refreshing again and again (the
// exporter) reads a summary once, and holds only the newest of each
// directory, however many generations the shards go through.
func TestFleetSummariesHeld(t *testing.T) {
	cfg := localFleet(t, 2, 1)
	s := newStorage(t, cfg)
	opts := splitstorage.FleetOptions{Build: func(ctx context.Context, dir string) ([]byte, error) { return walkShard(ctx, s, dir) }}
	for i := range 5 {
		splitstoragetest.Plant(t, s, splitstoragetest.FleetShard(0), fmt.Sprintf("2099-01-0%d.000000.zone1-0000000100", i+1), `{"BackupMethod":"fifo"}`)
		shards, rep, err := s.Fleet(context.Background(), opts)
		require.NoError(t, err)
		require.Len(t, shards, 2)
		if i > 0 {
			assert.Equal(t, 1, rep.Rebuilt, "the changed shard")
			assert.Equal(t, 1, rep.Read, "the other, from the summary held")
		}
		assert.Equal(t, 2, s.SummariesHeldForTest())
	}
}

// TestFleetSummariesSealed: with a signing key, a summary is sealed; one
// edited in the store (here: a backup added to what it says) is walked
// again, saying why, never believed; so is one without a seal.
func TestFleetSummariesSealed(t *testing.T) {
	cfg := localFleet(t, 1, 2)
	cfg.SigningKeyFile = splitstoragetest.KeyFile(t, "fleet-sign")
	fleetView(t, cfg, splitstorage.FleetOptions{})
	_, walked := fleetView(t, cfg, splitstorage.FleetOptions{})
	require.Empty(t, walked, "its own seal checks")

	d0 := splitstoragetest.FleetShard(0)
	files := fleetFiles(t, cfg.File.Root, "summaries/"+d0)
	require.Len(t, files, 1)
	path := filepath.Join(cfg.File.Root, files[0])
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	forged := strings.Replace(string(doc), `"complete":[`, `"complete":["2099-01-01.000000.zone1-0000000100",`, 1)
	require.NotEqual(t, string(doc), forged)
	require.NoError(t, os.WriteFile(path, []byte(forged), 0o640))
	docs, walked := fleetView(t, cfg, splitstorage.FleetOptions{})
	assert.Contains(t, walked[d0], "its summary's seal does not check: replaced or forged")
	assert.NotContains(t, docs[d0], "2099-01-01")
	assert.Equal(t, fullWalk(t, cfg), docs)

	unsealed := cfg
	unsealed.SigningKeyFile = ""
	fleetView(t, unsealed, splitstorage.FleetOptions{Rebuild: true})
	_, walked = fleetView(t, cfg, splitstorage.FleetOptions{})
	assert.Equal(t, "its summary is not sealed", walked[d0])
}

// TestAChangeInFlightIsJudgedByTheStoresClock: a begin mark is abandoned
// when it is an hour old by the store's clock, which its write time is on,
// not this host's: with this host's clock three days ahead, a change just
// begun is still in flight (its shard walked at every refresh, the mark
// kept), where this host's clock covered it and deleted its mark. S3.
func TestAChangeInFlightIsJudgedByTheStoresClock(t *testing.T) {
	srv := splitstoragetest.Start(t, "s3")
	srv.Setenv(t)
	cfg := srv.Config
	s := newStorage(t, cfg)
	splitstoragetest.PlantFleet(t, s, 1, 1, 4)
	fleetView(t, cfg, splitstorage.FleetOptions{})
	be, err := s.RawBackendForTest(context.Background())
	require.NoError(t, err)
	d0 := splitstoragetest.FleetShard(0)
	begin := ".fleet/changes/" + d0 + "/00000000000000000001-000000000000.begin"
	splitstoragetest.Put(t, be, begin, []byte(`{"op":"put","key":"x"}`))

	splitstorage.SetHostClockOffForTest(t, 72*time.Hour)
	for range 2 {
		_, walked := fleetView(t, cfg, splitstorage.FleetOptions{})
		assert.Contains(t, walked[d0], "changed since its summary (00000000000000000001-000000000000.begin)", "in flight: walked every time")
	}
	_, err = be.Stat(context.Background(), begin)
	require.NoError(t, err, "the mark of a change in flight is kept")
}
