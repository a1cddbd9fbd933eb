package xbstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

func extractLanes(t testing.TB, lanes [][]byte, opts ExtractOptions) (string, ExtractStats, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	st, err := Extract(context.Background(), dir, readers(lanes), opts)
	return dir, st, err
}

// runMbstream extracts stream with the real mbstream into a new directory and
// returns it, mbstream's exit status and stderr.
func runMbstream(t testing.TB, stream []byte) (string, int, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mb")
	require.NoError(t, os.MkdirAll(dir, 0o750))
	cmd := exec.Command(mariadbtest.LookPath(t, "mbstream"), "-x", "-C", dir)
	cmd.Stdin = bytes.NewReader(stream)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	rc := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		rc = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return dir, rc, stderr.String()
}

// TestMbstreamSemantics feeds hand-made streams to the real `mbstream -x` and
// to Extract (one plain lane, and split into 1, 3 and 8 lanes) and requires the
// same outcome: the same tree when mbstream succeeds, an error when it fails.
// It pins down the findings written at the top of extract.go.
func TestMbstreamSemantics(t *testing.T) {
	big := patterned(300_000, 7)
	cases := []struct {
		name   string
		stream []byte
		want   string // "ok", "cut" (mbstream stops silently, exit 0) or "error" (exit 1)
		stderr string // expected in mbstream's stderr
	}{
		{name: "interleaved", want: "ok", stream: newSB(t).p("db/a.ibd", 0, "aaa").p("b", 0, "bb").p("db/a.ibd", 3, "AAA").
			e("b").e("db/a.ibd").p("db/c", 0, "c").e("db/c").bytes()},
		{name: "eof-for-unseen-path-creates-empty-file", want: "ok", stream: newSB(t).e("db/empty").p("x", 0, "1").e("x").bytes()},
		{name: "zero-length-payload", want: "ok", stream: newSB(t).p("z", 0, "").e("z").bytes()},
		{name: "many-chunks", want: "ok", stream: newSB(t).file("db/big.ibd", big, 7000).file("ibdata1", big[:5000], 1000).bytes()},
		{name: "reappears-after-eof", want: "cut", stderr: "File exists", stream: newSB(t).p("a", 0, "first").e("a").
			p("b", 0, "2").p("a", 0, "second copy").p("b", 1, "22").e("a").e("b").p("c", 0, "4").e("c").bytes()},
		{name: "second-eof", want: "cut", stderr: "File exists", stream: newSB(t).p("d/a", 0, "1").e("d/a").p("d/b", 0, "x").
			e("d/a").p("d/b", 1, "y").e("d/b").bytes()},
		{name: "cut-with-open-files", want: "cut", stderr: "File exists", stream: newSB(t).p("f1", 0, "11").p("f2", 0, "22").
			e("f2").p("f1", 2, "11").p("f2", 0, "again").p("f1", 4, "lost").p("f3", 0, "lost").e("f1").e("f3").bytes()},
		{name: "out-of-order", want: "error", stderr: "out-of-order chunk", stream: newSB(t).p("a", 3, "def").p("a", 0, "abc").e("a").bytes()},
		{name: "gap", want: "error", stderr: "out-of-order chunk", stream: newSB(t).p("a", 0, "abc").p("a", 10, "xyz").e("a").bytes()},
		{name: "overlap", want: "error", stderr: "out-of-order chunk", stream: newSB(t).p("a", 0, "abc").p("a", 1, "xyz").e("a").bytes()},
		{name: "unknown-type", want: "error", stderr: "unknown chunk type", stream: newSB(t).p("a", 0, "abc").
			chunk(Chunk{Type: 'Q', Path: "a", Payload: []byte("x")}).e("a").bytes()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mbDir, rc, stderr := runMbstream(t, tc.stream)
			if tc.stderr != "" {
				assert.Contains(t, stderr, tc.stderr)
			}
			if tc.want == "error" {
				require.NotZero(t, rc, "mbstream should fail: %s", stderr)
			} else {
				require.Zero(t, rc, "mbstream failed: %s", stderr)
			}
			variants := map[string][][]byte{"plain": {tc.stream}}
			for _, n := range []int{1, 3, 8} {
				lanes, err := trySplit(tc.stream, n)
				if err != nil {
					require.Equal(t, "error", tc.want, "split: %v", err)
					continue
				}
				variants[fmt.Sprintf("split%d", n)] = lanes
			}
			for name, lanes := range variants {
				dir, _, err := extractLanes(t, lanes, ExtractOptions{})
				switch tc.want {
				case "error":
					require.Error(t, err, name)
					continue
				case "cut":
					require.ErrorIs(t, err, ErrStreamCut, name)
					dir2, _, err := extractLanes(t, lanes, ExtractOptions{AllowCut: true})
					require.NoError(t, err, name)
					assert.Equal(t, readTree(t, mbDir), readTree(t, dir2), name)
				default:
					require.NoError(t, err, name)
				}
				assert.Equal(t, readTree(t, mbDir), readTree(t, dir), name)
				mariadbtest.TreesEqual(t, mbDir, dir)
			}
		})
	}
}

func TestExtractRefusedPaths(t *testing.T) {
	for _, p := range []string{"", "/abs", "/tmp/x", "..", "../x", "a/../../x", "a/../b", "a/..", "a\x00b", "./a", "a//b", "a/", ".", "a/./b"} {
		t.Run(fmt.Sprintf("%q", p), func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "out")
			stream := newSB(t).p(p, 0, "evil").e(p).bytes()
			for _, lanes := range [][][]byte{{stream}, splitBytes(t, stream, 3)} {
				_, err := Extract(context.Background(), dir, readers(lanes), ExtractOptions{})
				require.ErrorIs(t, err, ErrBadPath)
				assert.Contains(t, err.Error(), "lane ")
				entries, _ := os.ReadDir(parent)
				assert.Len(t, entries, 1, "only the target dir may exist")
				assert.Empty(t, readTree(t, dir))
			}
		})
	}
}

func TestExtractSymlinkEscape(t *testing.T) {
	parent := t.TempDir()
	outside := filepath.Join(parent, "outside")
	dir := filepath.Join(parent, "out")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "f"), filepath.Join(dir, "flink")))
	require.NoError(t, os.Symlink("../outside", filepath.Join(dir, "rel")))

	for _, p := range []string{"link/x", "flink", "rel/y"} {
		stream := newSB(t).p(p, 0, "evil").e(p).bytes()
		_, err := Extract(context.Background(), dir, readers([][]byte{stream}), ExtractOptions{})
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), p)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing may be written outside the target directory")

	// A symlink that stays inside the directory may be written through.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "real"), 0o755))
	require.NoError(t, os.Symlink("real", filepath.Join(dir, "inside")))
	stream := newSB(t).p("inside/z", 0, "ok").e("inside/z").bytes()
	_, err = Extract(context.Background(), dir, readers([][]byte{stream}), ExtractOptions{})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "real", "z"))
	require.NoError(t, err)
	assert.Equal(t, "ok", string(b))
}

func TestExtractModesAndStats(t *testing.T) {
	data := patterned(100_000, 1)
	stream := newSB(t).file("db/t.ibd", data, 30_000).file("ibdata1", data[:10], 4).e("db/empty").bytes()
	lanes := splitBytes(t, stream, 3)
	var writes, written atomic.Int64
	dir, st, err := extractLanes(t, lanes, ExtractOptions{OnWrite: func(lane int, n int, d time.Duration) {
		writes.Add(1)
		written.Add(int64(n))
	}})
	require.NoError(t, err)
	assert.Equal(t, 3, st.Files)
	assert.Equal(t, int64(100_010), st.Bytes)
	assert.Len(t, st.Lanes, 3)
	var sumBytes, sumChunks int64
	for i, l := range st.Lanes {
		assert.Equal(t, int64(len(lanes[i])), l.Bytes)
		sumBytes += l.Bytes
		sumChunks += l.Chunks
	}
	assert.Equal(t, int64(4+1+3+1+1), sumChunks)
	assert.Greater(t, writes.Load(), int64(0))
	assert.Equal(t, st.Bytes, written.Load())

	fi, err := os.Stat(filepath.Join(dir, "db", "t.ibd"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Join(dir, "db"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
	got := readTree(t, dir)
	assert.Equal(t, string(data), got["db/t.ibd"])
	assert.Equal(t, "", got["db/empty"])

	// Extracting over existing files fails (files are created exclusively).
	_, err = Extract(context.Background(), dir, readers(lanes), ExtractOptions{})
	require.ErrorIs(t, err, os.ErrExist)
}

func TestExtractSparse(t *testing.T) {
	// Percona writes page-compressed tablespaces as sparse chunks.
	stream := newSB(t).
		chunk(Chunk{Type: ChunkSparse, Path: "db/c.ibd", Offset: 0, Sparse: []SparseSegment{{Skip: 0, Len: 3}, {Skip: 8189, Len: 2}}, Payload: []byte("abcde")}).
		chunk(Chunk{Type: ChunkPayload, Path: "db/c.ibd", Offset: 8194, Payload: []byte("P")}).
		chunk(Chunk{Type: ChunkSparse, Path: "db/c.ibd", Offset: 8195, Sparse: []SparseSegment{{Skip: 1 << 20, Len: 0}}, Payload: []byte{}}).
		e("db/c.ibd").bytes()
	want := make([]byte, 8195+1<<20)
	copy(want, "abc")
	copy(want[8192:], "deP")
	for _, n := range []int{1, 2, 3} {
		lanes := [][]byte{stream}
		if n > 1 {
			lanes = splitBytes(t, stream, n)
		}
		dir, st, err := extractLanes(t, lanes, ExtractOptions{})
		require.NoError(t, err)
		assert.Equal(t, int64(6), st.Bytes)
		got, err := os.ReadFile(filepath.Join(dir, "db", "c.ibd"))
		require.NoError(t, err)
		require.Equal(t, len(want), len(got), "trailing hole must extend the file")
		assert.True(t, bytes.Equal(want, got))
	}
}

func TestExtractGapsAndOverlaps(t *testing.T) {
	cases := map[string]struct {
		stream []byte
		want   error
	}{
		"gap":              {newSB(t).p("a", 0, "abc").p("a", 10, "xyz").e("a").bytes(), ErrGap},
		"gap-at-start":     {newSB(t).p("a", 5, "abc").e("a").bytes(), ErrGap},
		"overlap":          {newSB(t).p("a", 0, "abc").p("a", 1, "xyz").e("a").bytes(), ErrOverlap},
		"same-chunk-twice": {newSB(t).p("a", 0, "abc").p("a", 0, "abc").e("a").bytes(), ErrOverlap},
		"out-of-order":     {newSB(t).p("a", 3, "def").p("a", 0, "abc").e("a").bytes(), ErrOutOfOrder},
		"sparse-overlap": {newSB(t).chunk(Chunk{Type: ChunkSparse, Path: "s", Sparse: []SparseSegment{{Skip: 10, Len: 1}}, Payload: []byte("x")}).
			p("s", 5, "y").e("s").bytes(), ErrOverlap},
		"data-after-eof":    {newSB(t).p("a", 0, "abc").e("a").p("a", 3, "d").bytes(), ErrStreamCut},
		"missing-eof-plain": {newSB(t).p("a", 0, "abc").bytes(), io.ErrUnexpectedEOF},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := extractLanes(t, [][]byte{tc.stream}, ExtractOptions{})
			require.ErrorIs(t, err, tc.want)
			assert.Contains(t, err.Error(), "a")
			if name == "missing-eof-plain" {
				// Split lanes carry their own completeness check instead.
				_, _, err = extractLanes(t, splitBytes(t, tc.stream, 2), ExtractOptions{})
				require.NoError(t, err)
				return
			}
			_, _, err = extractLanes(t, splitBytes(t, tc.stream, 3), ExtractOptions{})
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestCheckPath(t *testing.T) {
	for _, ok := range []string{"ibdata1", "db/t.ibd", "a..b", "..a", "a/b/c", "db/t#P#p0.ibd"} {
		assert.NoError(t, checkPath(ok), ok)
	}
	for _, bad := range []string{"", "/", "..", "../a", "a/..", "a/../b", "./a", "a/", "a//b", ".", "x\x00"} {
		err := checkPath(bad)
		assert.ErrorIs(t, err, ErrBadPath, bad)
		assert.True(t, strings.Contains(err.Error(), "path"), bad)
	}
}
