package reliability

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// modeWatch polls directory trees while something runs and keeps, for
// every path it saw, the union of the permission bits it saw (so a file
// created wide and narrowed later still counts as wide).
type modeWatch struct {
	mu   sync.Mutex
	seen map[string]fs.FileMode // type bits | union of permission bits
	stop chan struct{}
	done chan struct{}
}

// watchModes polls roots (each may be absent) every few milliseconds until
// stopped; keep, when set, filters the paths recorded.
func watchModes(roots []string, keep func(path string) bool) *modeWatch {
	w := &modeWatch{seen: map[string]fs.FileMode{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			for _, r := range roots {
				w.scan(r, keep)
			}
			select {
			case <-w.stop:
				for _, r := range roots {
					w.scan(r, keep)
				}
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *modeWatch) scan(root string, keep func(string) bool) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // removed while walking, or not there yet
		}
		if keep != nil && !keep(p) {
			if d.IsDir() && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		w.mu.Lock()
		w.seen[p] |= info.Mode()
		w.mu.Unlock()
		return nil
	})
}

func (w *modeWatch) result() map[string]fs.FileMode {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// modeProblems lists the paths whose permissions go beyond maxFile (files)
// or maxDir (directories).
func modeProblems(seen map[string]fs.FileMode, maxFile, maxDir fs.FileMode) []string {
	var out []string
	for p, m := range seen {
		limit := maxFile
		if m.IsDir() {
			limit = maxDir
		}
		if m.Perm()&^limit != 0 {
			out = append(out, fmt.Sprintf("%s %s (allowed at most %s)", m, p, limit))
		}
	}
	sort.Strings(out)
	return out
}

func modeSummary(seen map[string]fs.FileMode) string {
	counts := map[string]int{}
	for _, m := range seen {
		counts[m.String()]++
	}
	var parts []string
	for m, n := range counts {
		parts = append(parts, fmt.Sprintf("%s x%d", m, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// TestRestrictiveModes: a backup and a restore through the real engine on
// the file backend, with the process umask 0 so that only the modes the
// code asks for count. Every file and directory the storage writes (parts,
// indexes, MANIFEST, markers, the keyspace/shard/backup directories,
// temporary files) must be at most 0640 / 0750; the backup's work
// directory in the tablet's tmp dir (and what the tool writes into it), the
// restore's staging directory (extracted files, then what --prepare adds)
// and restore_in_progress are watched while they exist; the data directory
// after the restore must have nothing for others (o=---). The policy: no
// file group- or world-writable from our code, nothing world-readable.
// (mariabackup and mysqld create their own files 0660, as MariaDB always
// does: those are allowed group write in the work, staging and data
// directories, which are themselves closed to others. The FIFO directory
// exists only with Percona XtraBackup's --fifo-streams, not here.)
func TestRestrictiveModes(t *testing.T) {
	f := newFixture(t)
	srv := splitstoragetest.Local(t)
	cfg := srv.Config
	cfg.PartSize = 1 << 20
	f.useStorage(t, cfg)
	ctx := context.Background()

	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })

	cnf := f.tb.Cnf
	workDirs := watchModes([]string{cnf.TmpDir}, func(p string) bool {
		return p == cnf.TmpDir || strings.Contains(p, "fifo-")
	})
	store := watchModes([]string{cfg.File.Root}, nil)
	require.NoError(t, f.backup(ctx, nil))
	work := workDirs.result()
	stored := store.result()
	delete(work, cnf.TmpDir)
	delete(stored, cfg.File.Root)

	// The staging directory's name is only known once it exists: watch
	// the tablet directory for it.
	tabletDir := filepath.Dir(filepath.Clean(cnf.DataDir))
	stagingPrefix := filepath.Join(tabletDir, "fifo-restore-")
	state := filepath.Join(cnf.TabletDir(), mysqlctl.RestoreState)
	restoreWatch := watchModes([]string{tabletDir, state}, func(p string) bool {
		return p == tabletDir || p == state || strings.HasPrefix(p, stagingPrefix) && !strings.HasSuffix(p, ".owner")
	})
	_, err := f.restore(ctx, nil)
	restoring := restoreWatch.result()
	require.NoError(t, err)
	delete(restoring, tabletDir)
	staging := ""
	for p, m := range restoring {
		if m.IsDir() && filepath.Dir(p) == tabletDir {
			require.Empty(t, staging, "one staging directory, saw %s and %s", staging, p)
			staging = p
		}
	}
	f.requireSourceData(t, "restore with umask 0")

	// The storage: every object and directory, exactly what the code asks.
	require.NotEmpty(t, stored)
	assert.Empty(t, modeProblems(stored, 0o640, 0o750), "storage objects or directories wider than 0640/0750 (umask 0)")
	final := treeModes(t, cfg.File.Root)
	assert.Empty(t, modeProblems(final, 0o640, 0o750), "storage after the backup")
	var sawMarker, sawIndex, sawManifest bool
	for p := range final {
		sawMarker = sawMarker || strings.HasSuffix(p, "/.complete")
		sawIndex = sawIndex || strings.HasSuffix(p, ".index")
		sawManifest = sawManifest || strings.Contains(p, "/MANIFEST.part-")
	}
	assert.True(t, sawMarker && sawIndex && sawManifest, "the walk saw the completion marker, indexes and the MANIFEST")
	t.Logf("storage (%d paths seen while writing, %d kept): %s", len(stored), len(final), modeSummary(final))

	// The backup's work directory: the engine's directory 0700 and its owner
	// file 0600; what the tool writes into it (xtrabackup_checkpoints,
	// xtrabackup_info: 0666 under umask 0) is reachable by no one else.
	require.NotEmpty(t, work, "the backup's work directory was never seen")
	var engineDirs int
	for p, m := range work {
		switch {
		case m.IsDir() && filepath.Dir(p) == cnf.TmpDir:
			engineDirs++
			assert.Equal(t, fs.FileMode(0o700), m.Perm(), "the engine's work directory %s", p)
		case filepath.Dir(p) == cnf.TmpDir && strings.HasSuffix(p, ".owner"):
			assert.Equal(t, fs.FileMode(0o600), m.Perm(), "the work directory's owner file %s", p)
		case filepath.Dir(p) == cnf.TmpDir:
			t.Errorf("unexpected %s %s in the tablet's tmp dir", m, p)
		}
	}
	assert.Equal(t, 1, engineDirs, "one work directory")
	t.Logf("backup work directory while it existed (%d paths): %s", len(work), modeSummary(work))

	// The restore: the staging directory (ours, 0750: closed to others, so
	// what --prepare adds inside, 0660/0666 under umask 0, is reachable by
	// the owner and group only), the extracted files (ours: every file of
	// the sample database, which --prepare does not create, exactly 0640;
	// directories 0750) and restore_in_progress (ours, at most 0640).
	require.NotEmpty(t, restoring, "the staging directory was never seen")
	require.Contains(t, restoring, staging)
	require.Contains(t, restoring, state)
	assert.Empty(t, modeProblems(map[string]fs.FileMode{staging: restoring[staging]}, 0, 0o750), "the staging directory")
	assert.Empty(t, modeProblems(map[string]fs.FileMode{state: restoring[state]}, 0o640, 0), "restore_in_progress")
	extracted := map[string]fs.FileMode{}
	for p, m := range restoring {
		if m.IsDir() && p != staging || strings.HasPrefix(p, filepath.Join(staging, sampleDB)+"/") {
			extracted[p] = m
		}
	}
	require.Greater(t, len(extracted), 50, "extracted files of the sample database")
	assert.Empty(t, modeProblems(extracted, 0o640, 0o750), "extracted files and directories (umask 0)")
	for p, m := range extracted {
		if !m.IsDir() && m.Perm() != 0o640 {
			t.Errorf("extracted %s is %s, want 0640", p, m)
		}
	}
	t.Logf("restore staging while it existed (%d paths): %s; restore_in_progress %s", len(restoring), modeSummary(restoring), restoring[state])
	assert.Empty(t, stagingDirs(t, cnf), "staging directory removed after the restore")

	// The data directory after the restore: nothing for others; the sample
	// database's files (moved from staging) still 0640. (mysqld's own files,
	// e.g. those mariadb-upgrade writes after the restore, are 0660, as
	// MariaDB makes them.)
	data := treeModes(t, cnf.DataDir)
	assert.Empty(t, modeProblems(data, 0o660, 0o770), "restored data directory")
	for p, m := range data {
		if !m.IsDir() && strings.HasPrefix(p, filepath.Join(cnf.DataDir, sampleDB)+"/") && m.Perm() != 0o640 {
			t.Errorf("restored %s is %s, want 0640", p, m)
		}
	}
	t.Logf("restored data directory (%d paths): %s", len(data), modeSummary(data))
}

func treeModes(t *testing.T, root string) map[string]fs.FileMode {
	out := map[string]fs.FileMode{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = info.Mode()
		return nil
	}))
	return out
}
