package xbstream

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/testutil/tier"
)

// realStream returns the path of a real `mariabackup --backup --stream=xbstream
// --parallel=4` stream of a database with 200 small tables and one table of at
// least 200 MB (plus Aria, MyISAM and partitioned tables), taken once per test
// binary run.
func realStream(t testing.TB) string {
	t.Helper()
	return mariadbtest.CachedBackupStream(t, "interop", mariadbtest.Options{Tables: 200, BigTableBytes: 200 << 20})
}

// splitToFiles splits the stream file into n lane files under dir.
func splitToFiles(t testing.TB, stream, dir string, n int) ([]string, []LaneStats) {
	t.Helper()
	src, err := os.Open(stream)
	require.NoError(t, err)
	defer src.Close()
	paths := make([]string, n)
	files := make([]*os.File, n)
	ws := make([]io.Writer, n)
	bws := make([]*bufio.Writer, n)
	for i := range files {
		paths[i] = filepath.Join(dir, fmt.Sprintf("lane%d", i))
		files[i], err = os.Create(paths[i])
		require.NoError(t, err)
		bws[i] = bufio.NewWriterSize(files[i], 1<<20)
		ws[i] = bws[i]
	}
	stats, err := Split(context.Background(), src, ws, SplitOptions{})
	require.NoError(t, err)
	for i := range files {
		require.NoError(t, bws[i].Flush())
		require.NoError(t, files[i].Close())
	}
	return paths, stats
}

func openAll(t testing.TB, paths []string) []io.Reader {
	t.Helper()
	rs := make([]io.Reader, len(paths))
	for i, p := range paths {
		f, err := os.Open(p)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		rs[i] = f
	}
	return rs
}

// streamFacts scans a stream: its largest encoded chunk, its files, and
// whether a path reappears after its 'E' chunk.
func streamFacts(t testing.TB, path string) (maxChunk int64, files map[string]int64, reappears bool) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := NewReader(f)
	files = map[string]int64{}
	closed := map[string]bool{}
	for {
		c, err := r.Next()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		maxChunk = max(maxChunk, c.EncodedSize()+int64(seqRecordSize))
		if closed[c.Path] {
			reappears = true
		}
		if c.Type == ChunkEOF {
			closed[c.Path] = true
		}
		files[c.Path] = max(files[c.Path], int64(c.Offset+c.Extent()))
	}
}

// TestInteropMariabackup checks Split, Extract and Merge against the real
// tools on a real mariabackup stream:
//
//	(a) Extract on 1, 3 and 8 split lanes (and on the stream as one plain
//	    lane) writes the tree `mbstream -x` writes from the original stream;
//	(b) the lanes merged back give the original stream byte for byte, and
//	    `mbstream -x` on the merged stream gives the same tree;
//	balance: the largest lane holds at most 5% more than the mean plus one
//	chunk, for 3 and 8 lanes.
func TestInteropMariabackup(t *testing.T) {
	tier.Integration(t, "a real MariaDB")
	stream := realStream(t)
	fi, err := os.Stat(stream)
	require.NoError(t, err)
	maxChunk, files, reappears := streamFacts(t, stream)
	var tables int
	for p := range files {
		if strings.HasPrefix(p, "sample/t") && strings.HasSuffix(p, ".ibd") {
			tables++
		}
	}
	require.GreaterOrEqual(t, tables, 200, "the stream must hold at least 200 tables")
	require.GreaterOrEqual(t, files["sample/big.ibd"], int64(200<<20), "one table must be at least 200 MB")
	for _, p := range []string{"sample/aria_t.MAD", "sample/myisam_t.MYD", "sample/part_t#P#p0.ibd"} {
		require.Contains(t, files, p)
	}
	t.Logf("stream: %d MiB, %d files, largest chunk %d bytes, path reappears after its EOF: %v",
		fi.Size()>>20, len(files), maxChunk, reappears)

	work := t.TempDir()
	ref := filepath.Join(work, "ref")
	start := time.Now()
	f, err := os.Open(stream)
	require.NoError(t, err)
	stderr := mariadbtest.MbstreamExtract(t, ref, f)
	f.Close()
	require.Empty(t, stderr, "mbstream -x reported a problem on the original stream")
	t.Logf("mbstream -x (original): %v", time.Since(start).Round(time.Millisecond))

	check := func(name string, lanes []io.Reader) {
		t.Helper()
		dir := filepath.Join(work, name)
		start := time.Now()
		st, err := Extract(context.Background(), dir, ReaderLanes(lanes...), ExtractOptions{})
		require.NoError(t, err, name)
		n := mariadbtest.TreesEqual(t, ref, dir)
		t.Logf("%s: Extract wrote %d files, %d MiB in %v; tree equal to mbstream's (%d entries)",
			name, st.Files, st.Bytes>>20, time.Since(start).Round(time.Millisecond), n)
		require.NoError(t, os.RemoveAll(dir))
	}
	check("plain-1", openAll(t, []string{stream}))

	for _, n := range []int{1, 3, 8} {
		laneDir := filepath.Join(work, fmt.Sprintf("lanes%d", n))
		require.NoError(t, os.Mkdir(laneDir, 0o750))
		paths, stats := splitToFiles(t, stream, laneDir, n)

		var total, maxB int64
		for _, s := range stats {
			total += s.Bytes
			maxB = max(maxB, s.Bytes)
		}
		mean := float64(total) / float64(n)
		limit := 1.05*mean + float64(maxChunk)
		parts := make([]string, n)
		for i, s := range stats {
			parts[i] = fmt.Sprintf("%d/%d", s.Bytes>>20, s.Chunks)
		}
		t.Logf("balance %d lanes: MiB/chunks per lane %s; max %d, mean %.0f (+%.2f%%), limit %.0f",
			n, strings.Join(parts, " "), maxB, mean, 100*(float64(maxB)/mean-1), limit)
		if n > 1 {
			assert.LessOrEqual(t, float64(maxB), limit, "lanes unbalanced")
			// Dealing each chunk to the emptiest lane keeps every lane within
			// one chunk of the mean.
			assert.LessOrEqual(t, float64(maxB), mean+float64(maxChunk), "greedy bound violated")
		}

		// (a)
		check(fmt.Sprintf("split-%d", n), openAll(t, paths))

		// (b)
		merged := filepath.Join(work, "merged.xb")
		mf, err := os.Create(merged)
		require.NoError(t, err)
		require.NoError(t, Merge(mf, openAll(t, paths)))
		require.NoError(t, mf.Close())
		assert.True(t, sameFile(t, stream, merged), "merge of %d lanes differs from the original stream", n)
		mdir := filepath.Join(work, fmt.Sprintf("merged-%d", n))
		mf, err = os.Open(merged)
		require.NoError(t, err)
		stderr := mariadbtest.MbstreamExtract(t, mdir, mf)
		mf.Close()
		require.Empty(t, stderr)
		mariadbtest.TreesEqual(t, ref, mdir)
		t.Logf("merge of %d lanes: byte-identical to the original; mbstream -x tree equal", n)
		require.NoError(t, os.RemoveAll(mdir))
		require.NoError(t, os.RemoveAll(laneDir))
		require.NoError(t, os.Remove(merged))
	}
}

func sameFile(t testing.TB, a, b string) bool {
	t.Helper()
	fa, err := os.Open(a)
	require.NoError(t, err)
	defer fa.Close()
	fb, err := os.Open(b)
	require.NoError(t, err)
	defer fb.Close()
	ra, rb := bufio.NewReaderSize(fa, 1<<20), bufio.NewReaderSize(fb, 1<<20)
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, ea := io.ReadFull(ra, ba)
		nb, eb := io.ReadFull(rb, bb)
		if na != nb || string(ba[:na]) != string(bb[:nb]) {
			return false
		}
		if ea != nil || eb != nil {
			return ea == eb || (ea == io.ErrUnexpectedEOF && eb == io.ErrUnexpectedEOF)
		}
	}
}
