package fifobackupengine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
)

// stagedTarget claims a new target directory and stages a restore's
// entries in it, as the restore leaves them before Done.
func stagedTarget(t *testing.T) (*TargetDir, []os.DirEntry) {
	t.Helper()
	d, err := claimEmptyDir(filepath.Join(t.TempDir(), "target"))
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(d.Files(), "db"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(d.Files(), "db", "t.ibd"), []byte("t"), 0o640))
	for _, f := range []string{"ibdata1", "ib_logfile0"} {
		require.NoError(t, os.WriteFile(filepath.Join(d.Files(), f), []byte(f), 0o640))
	}
	entries, err := os.ReadDir(d.Files())
	require.NoError(t, err)
	return &d, entries
}

func readMark(t *testing.T, dir string) markBody {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, restoringMark))
	require.NoError(t, err)
	var m markBody
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// TestAStoppedRestoresEntriesAreToldFromOthers: a restore stopped (kill -9)
// at any point of Done leaves a directory whose every entry its mark tells
// apart: its own (by name and inode, as it moved them up) to remove, and
// anyone else's, also one put there under the name of one it moved, to
// keep. The stops are made as a kill leaves them: the mark listed by
// listMovingUp, the first entries moved up as Done moves them.
func TestAStoppedRestoresEntriesAreToldFromOthers(t *testing.T) {
	again := " and restore again, or give another directory"
	for _, c := range []struct {
		name   string
		moved  int
		edit   func(t *testing.T, d *TargetDir)
		advice string
	}{
		{"before any move", 0, nil, "remove what it left (rm -rf D/.vtfifo-restoring.d D/.vtfifo-restoring)" + again},
		{"among the moves, beside an operator's file", 2, func(t *testing.T, d *TargetDir) {
			require.NoError(t, os.WriteFile(filepath.Join(d.Path, "notes"), nil, 0o640))
		}, "remove what it left (rm -rf D/.vtfifo-restoring.d D/.vtfifo-restoring, and the 2 entries it had moved up (db, ib_logfile0), " +
			"each still the very one it moved)" + again + "; the other entry there (notes) is not that restore's: keep it"},
		{"after the moves", 3, nil, "everything in it is what that restore left (D/.vtfifo-restoring.d D/.vtfifo-restoring, and the 3 " +
			"entries it had moved up (db, ib_logfile0, ibdata1), each still the very one it moved): empty it (find D -mindepth 1 -delete)" + again},
		{"after its subdirectory went", 3, func(t *testing.T, d *TargetDir) {
			require.NoError(t, os.RemoveAll(filepath.Join(d.Path, restoringDir)))
		}, "everything in it is what that restore left (D/.vtfifo-restoring, and the 3 entries it had moved up (db, ib_logfile0, ibdata1), " +
			"each still the very one it moved): empty it (find D -mindepth 1 -delete)" + again},
		{"with a moved entry replaced since", 3, func(t *testing.T, d *TargetDir) {
			require.NoError(t, os.Remove(filepath.Join(d.Path, "ibdata1")))
			require.NoError(t, os.WriteFile(filepath.Join(d.Path, "ibdata1"), nil, 0o640))
		}, "remove what it left (rm -rf D/.vtfifo-restoring.d D/.vtfifo-restoring, and the 2 entries it had moved up (db, ib_logfile0), " +
			"each still the very one it moved)" + again + "; the other entry there (ibdata1) is not that restore's: keep it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, entries := stagedTarget(t)
			require.NoError(t, d.listMovingUp(entries))
			for _, e := range entries[:c.moved] {
				require.NoError(t, renameNoReplace(filepath.Join(d.Files(), e.Name()), filepath.Join(d.Path, e.Name())))
			}
			if c.edit != nil {
				c.edit(t, d)
			}
			m := readMark(t, d.Path)
			assert.Len(t, m.MovingUp, 3)
			got := m.leftBehind(d.Path)
			assert.Equal(t, c.advice, strings.ReplaceAll(got, d.Path, "D"))
		})
	}
}

// TestDoneLeavesNoMarkAndAFailedOneOnlyWhatWasThere: Done moves every entry
// up and removes its subdirectory and, last, its mark (rewritten with the
// list, still the restore's own); a Done refused by an entry put there
// meanwhile moves back what it moved, and the restore's removal then
// leaves only that entry.
func TestDoneLeavesNoMarkAndAFailedOneOnlyWhatWasThere(t *testing.T) {
	d, _ := stagedTarget(t)
	require.NoError(t, d.Done(false, logutil.NewMemoryLogger()))
	names := dirNames(t, d.Path)
	assert.Equal(t, []string{"db", "ib_logfile0", "ibdata1"}, names)

	d, _ = stagedTarget(t)
	require.NoError(t, os.WriteFile(filepath.Join(d.Path, "ibdata1"), []byte("operator's"), 0o640))
	err := d.Done(false, logutil.NewMemoryLogger())
	require.ErrorContains(t, err, "cannot move the restored ibdata1 into "+d.Path+": something was put there by that name during the restore")
	assert.Equal(t, []string{".vtfifo-restoring", ".vtfifo-restoring.d", "ibdata1"}, dirNames(t, d.Path))
	assert.Equal(t, []string{"db", "ib_logfile0", "ibdata1"}, dirNames(t, d.Files()), "what Done moved up is back")
	require.NoError(t, d.RemoveRestored())
	assert.Equal(t, []string{"ibdata1"}, dirNames(t, d.Path))
	b, err := os.ReadFile(filepath.Join(d.Path, "ibdata1"))
	require.NoError(t, err)
	assert.Equal(t, "operator's", string(b))
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
