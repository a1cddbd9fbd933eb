package local

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// cutWriteEnv makes the test binary a Put that never ends (the child of
// TestAWriteCutByKillLeavesOnlyWhatDeleteCanProve).
const cutWriteEnv = "LOCAL_TEST_CUT_WRITE_ROOT"

// stalledBody is 1 MiB of a body, then a read that never returns.
type stalledBody struct{ sent int }

func (b *stalledBody) Read(p []byte) (int, error) {
	if b.sent >= 1<<20 {
		select {}
	}
	n := min(len(p), 1<<20-b.sent)
	b.sent += n
	return n, nil
}

func (b *stalledBody) Seek(int64, int) (int64, error) { return 0, nil }

// TestAWriteCutByKillLeavesOnlyWhatDeleteCanProve: a Put killed by SIGKILL
// leaves its temporary file, which List never shows and Delete of the
// directory's last object removes with the directory; files whose names
// only look like one (an operator's NOTES.tmp-1, an earlier version's
// unchecked name) are listed like any file and kept, with their directory.
func TestAWriteCutByKillLeavesOnlyWhatDeleteCanProve(t *testing.T) {
	if root := os.Getenv(cutWriteEnv); root != "" {
		b, err := New(root)
		require.NoError(t, err)
		_ = b.Put(context.Background(), "ks/0/cut/lane-000.part-00000001", &stalledBody{}, 2<<20, backend.PutOptions{})
		return
	}
	root := t.TempDir()
	b, err := New(root)
	require.NoError(t, err)
	ctx := context.Background()
	for _, dir := range []string{"cut", "kept"} {
		require.NoError(t, b.Put(ctx, "ks/0/"+dir+"/MANIFEST", strings.NewReader("{}"), 2, backend.PutOptions{}))
	}
	child := exec.Command(os.Args[0], "-test.run=^TestAWriteCutByKillLeavesOnlyWhatDeleteCanProve$")
	child.Env = append(os.Environ(), cutWriteEnv+"="+root)
	child.Stdout, child.Stderr = io.Discard, io.Discard
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill() })
	cutDir := filepath.Join(root, "ks", "0", "cut")
	var left string
	require.Eventually(t, func() bool {
		m, _ := filepath.Glob(filepath.Join(cutDir, "lane-000.part-00000001.tmp-*"))
		if len(m) == 1 {
			if fi, err := os.Stat(m[0]); err == nil && fi.Size() == 1<<20 {
				left = m[0]
			}
		}
		return left != ""
	}, time.Minute, 10*time.Millisecond, "the child's Put never wrote its first MiB")
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	assert.True(t, ownTemp(filepath.Base(left)), "%s is not recognised as this backend's", left)

	keptDir := filepath.Join(root, "ks", "0", "kept")
	lookAlikes := []string{"NOTES.tmp-1", "lane-000.part-00000001.tmp-0123456789abcdef", otherLast(filepath.Base(left))}
	for _, name := range lookAlikes {
		require.NoError(t, os.WriteFile(filepath.Join(keptDir, name), []byte("not the backend's"), 0o640))
	}
	objs, err := b.List(ctx, "ks/0/", false)
	require.NoError(t, err)
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	want := []string{"ks/0/cut/MANIFEST", "ks/0/kept/MANIFEST"}
	for _, name := range lookAlikes {
		want = append(want, "ks/0/kept/"+name)
	}
	assert.ElementsMatch(t, want, keys, "List shows every file but this backend's temporary one")

	require.NoError(t, b.Delete(ctx, "ks/0/cut/MANIFEST"))
	assert.NoDirExists(t, cutDir, "the cut write's temporary file kept its directory")
	require.NoError(t, b.Delete(ctx, "ks/0/kept/MANIFEST"))
	for _, name := range lookAlikes {
		got, err := os.ReadFile(filepath.Join(keptDir, name))
		require.NoError(t, err, "%s was removed", name)
		assert.Equal(t, "not the backend's", string(got))
	}
}

func TestTempNamesCheckThemselves(t *testing.T) {
	p := tempName("/root/ks/0/b/MANIFEST")
	name := filepath.Base(p)
	assert.True(t, ownTemp(name))
	assert.True(t, strings.HasPrefix(name, "MANIFEST.tmp-"))
	for _, other := range []string{
		"OTHER" + strings.TrimPrefix(name, "MANIFEST"), // another object's check
		strings.ToUpper(name),
		otherLast(name),
		name[:len(name)-2],
		name + "0",
		"MANIFEST.tmp-",
		".tmp-" + name[len("MANIFEST.tmp-"):],
	} {
		assert.False(t, ownTemp(other), other)
	}
}

// otherLast is name with its last hex digit changed: its check no longer holds.
func otherLast(name string) string {
	last := "0"
	if strings.HasSuffix(name, "0") {
		last = "1"
	}
	return name[:len(name)-1] + last
}
