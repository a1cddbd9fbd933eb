package xbstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// skewedStream has one dominant file (most of the bytes, in 64 KiB chunks)
// interleaved with many small ones, like a backup of one big table.
func skewedStream(t testing.TB) []byte {
	s := newSB(t)
	big := patterned(6<<20, 9)
	const cs = 64 << 10
	small := 0
	for off := 0; off < len(big); off += cs {
		s.p("db/big.ibd", uint64(off), string(big[off:off+cs]))
		if off%(4*cs) == 0 {
			p := "db/t" + string(rune('a'+small%26)) + string(rune('a'+small/26)) + ".ibd"
			s.file(p, patterned(3000+small*10, byte(small)), 1000)
			small++
		}
	}
	s.e("db/big.ibd")
	return s.bytes()
}

func TestSplitBalanceAndMergeRoundTrip(t *testing.T) {
	stream := skewedStream(t)
	for _, n := range []int{1, 2, 3, 8} {
		bufs := make([]bytes.Buffer, n)
		ws := make([]io.Writer, n)
		for i := range bufs {
			ws[i] = &bufs[i]
		}
		stats, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{})
		require.NoError(t, err)
		require.Len(t, stats, n)

		var total, chunks, maxB int64
		for i, st := range stats {
			assert.Equal(t, int64(bufs[i].Len()), st.Bytes, "lane %d", i)
			total += st.Bytes
			chunks += st.Chunks
			maxB = max(maxB, st.Bytes)
			// Every lane is a well-formed xbstream.
			_, err := readAll(t, bufs[i].Bytes())
			require.NoError(t, err)
		}
		orig, err := readAll(t, stream)
		require.NoError(t, err)
		assert.Equal(t, int64(len(orig)), chunks)
		mean := float64(total) / float64(n)
		const maxChunk = 64<<10 + 200
		t.Logf("%d lanes: mean %.0f, max %d (+%.2f%%)", n, mean, maxB, 100*(float64(maxB)/mean-1))
		assert.LessOrEqual(t, float64(maxB), mean+maxChunk, "lanes unbalanced")

		// Merge restores the original stream byte for byte.
		rs := make([]io.Reader, n)
		for i := range bufs {
			rs[i] = bytes.NewReader(bufs[i].Bytes())
		}
		var merged bytes.Buffer
		require.NoError(t, Merge(&merged, rs))
		require.True(t, bytes.Equal(stream, merged.Bytes()), "merge of %d lanes differs from the original", n)
	}
}

func TestSplitKeepsIgnorableChunks(t *testing.T) {
	stream := newSB(t).p("a", 0, "abc").chunk(Chunk{Flags: FlagIgnorable, Type: 'Z', Path: "meta", Payload: []byte("x")}).e("a").bytes()
	lanes := splitBytes(t, stream, 2)
	var merged bytes.Buffer
	require.NoError(t, Merge(&merged, byteReaders(lanes)))
	assert.Equal(t, stream, merged.Bytes())
	dir, st, err := extractLanes(t, lanes, ExtractOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, st.Files)
	assert.Equal(t, map[string]string{"a": "abc"}, readTree(t, dir))
}

type failWriter struct {
	n, after int
}

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n >= w.after {
		return 0, errors.New("disk full")
	}
	w.n++
	return len(p), nil
}

func TestSplitErrors(t *testing.T) {
	stream := skewedStream(t)
	// A lane write error stops Split and names the lane.
	ws := []io.Writer{io.Discard, &failWriter{after: 3}, io.Discard}
	_, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{})
	require.Error(t, err)
	var le *LaneError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 1, le.Lane)
	assert.Contains(t, err.Error(), "lane 1: write: disk full")

	// A corrupt source stops it with the offset.
	bad := bytes.Clone(stream)
	bad[len(bad)/2] ^= 1
	_, err = Split(context.Background(), bytes.NewReader(bad), []io.Writer{io.Discard, io.Discard}, SplitOptions{})
	require.ErrorIs(t, err, ErrChecksum)
	assert.Contains(t, err.Error(), "source: offset ")

	// Truncated source.
	_, err = Split(context.Background(), bytes.NewReader(stream[:len(stream)-5]), []io.Writer{io.Discard}, SplitOptions{})
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)

	// Cancellation.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Split(ctx, bytes.NewReader(stream), []io.Writer{io.Discard}, SplitOptions{})
	require.ErrorIs(t, err, context.Canceled)

	_, err = Split(context.Background(), bytes.NewReader(stream), nil, SplitOptions{})
	require.Error(t, err)
}

func TestSplitEmptyStream(t *testing.T) {
	lanes := splitBytes(t, nil, 3)
	for _, l := range lanes {
		assert.Len(t, l, seqRecordSize, "only the end record")
	}
	dir, st, err := extractLanes(t, lanes, ExtractOptions{})
	require.NoError(t, err)
	assert.Zero(t, st.Files)
	assert.Empty(t, readTree(t, dir))
	var merged bytes.Buffer
	require.NoError(t, Merge(&merged, byteReaders(lanes)))
	assert.Zero(t, merged.Len())
}

// TestMergeRefusesMissingTruncatedOrMixedLanes: FIFO lanes are
// concatenated; a missing, truncated, corrupt or mixed lane fails the merge.
func TestMergeRefusesMissingTruncatedOrMixedLanes(t *testing.T) {
	// FIFO lanes are concatenated.
	l0 := newSB(t).p("a", 0, "aa").e("a").bytes()
	l1 := newSB(t).p("b", 0, "bb").e("b").bytes()
	var out bytes.Buffer
	require.NoError(t, Merge(&out, byteReaders([][]byte{l0, nil, l1})))
	assert.Equal(t, append(bytes.Clone(l0), l1...), out.Bytes())

	stream := skewedStream(t)
	lanes := splitBytes(t, stream, 3)
	// Missing lane, truncated lane, corrupt lane, mixed lanes.
	require.ErrorIs(t, Merge(io.Discard, byteReaders(lanes[:2])), ErrSequence)
	err := Merge(io.Discard, byteReaders([][]byte{lanes[0], lanes[1], lanes[2][:len(lanes[2])-seqRecordSize]}))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Contains(t, err.Error(), "lane 2:")
	bad := bytes.Clone(lanes[1])
	bad[len(bad)-seqRecordSize-3] ^= 1
	require.ErrorIs(t, Merge(io.Discard, byteReaders([][]byte{lanes[0], bad, lanes[2]})), ErrChecksum)
	require.ErrorIs(t, Merge(io.Discard, byteReaders([][]byte{lanes[0], l0, lanes[2]})), ErrSequence)
	require.Error(t, Merge(io.Discard, byteReaders([][]byte{lanes[0], lanes[0], lanes[2]})))
}

// barrierWriter blocks its first Write until all lanes are inside a Write at
// once, which only happens if each lane is written by its own goroutine.
type barrierWriter struct {
	arrived *sync.WaitGroup
	once    sync.Once
}

func (w *barrierWriter) Write(p []byte) (int, error) {
	var err error
	w.once.Do(func() {
		w.arrived.Done()
		done := make(chan struct{})
		go func() { w.arrived.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			err = errors.New("lanes are not written concurrently")
		}
	})
	return len(p), err
}

func TestSplitWritesLanesConcurrently(t *testing.T) {
	const n = 4
	var arrived sync.WaitGroup
	arrived.Add(n)
	ws := make([]io.Writer, n)
	for i := range ws {
		ws[i] = &barrierWriter{arrived: &arrived}
	}
	_, err := Split(context.Background(), bytes.NewReader(skewedStream(t)), ws, SplitOptions{})
	require.NoError(t, err)
}

// concurrencyWriter records how many lanes are inside a Write at once; each
// lane's first Write waits (up to a second) until want writers have been in
// at once, so that a split that can write want lanes at once reaches it.
type concurrencyWriter struct {
	mu         *sync.Mutex
	cond       *sync.Cond
	in, peak   *int
	want       int
	waitedOnce bool
}

func (w *concurrencyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	*w.in++
	*w.peak = max(*w.peak, *w.in)
	w.cond.Broadcast()
	if !w.waitedOnce {
		w.waitedOnce = true
		deadline := time.AfterFunc(time.Second, func() { w.mu.Lock(); w.cond.Broadcast(); w.mu.Unlock() })
		start := time.Now()
		for *w.peak < w.want && time.Since(start) < time.Second {
			w.cond.Wait()
		}
		deadline.Stop()
	}
	*w.in--
	return len(p), nil
}

// On a many-core host every lane compresses at once: as many lanes are
// written at the same time as the process has cores (16 lanes on 16 cores),
// never more than that plus the piece a source has read (the pool of pieces
// bounds the memory), and at least 8 on few cores.
func TestSplitWritesAsManyLanesAsCores(t *testing.T) {
	// Equal chunks, dealt round the lanes in turn.
	s := newSB(t)
	piece := patterned(16<<10, 5)
	for i := range 128 {
		s.p("db/big.ibd", uint64(i*len(piece)), string(piece))
	}
	stream := s.e("db/big.ibd").bytes()
	// want: lanes, or one per core (at least 8) plus the source's piece.
	for _, tc := range []struct{ procs, lanes, want int }{{16, 16, 16}, {16, 32, 17}, {2, 16, 9}, {64, 12, 12}} {
		t.Run(fmt.Sprintf("cores=%d/lanes=%d", tc.procs, tc.lanes), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tc.procs))
			var mu sync.Mutex
			cond := sync.NewCond(&mu)
			var in, peak int
			ws := make([]io.Writer, tc.lanes)
			for i := range ws {
				ws[i] = &concurrencyWriter{mu: &mu, cond: cond, in: &in, peak: &peak, want: tc.lanes}
			}
			_, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{PieceSize: 16 << 10})
			require.NoError(t, err)
			assert.Equal(t, tc.want, peak, "lanes written at once")
		})
	}
}

// pxbDealtStreams deals the files of one stream to n streams the way Percona
// XtraBackup deals files to its FIFO streams: each file wholly to one stream,
// round-robin at the file's first chunk (ds_xbstream.cc, xbstream_open). With
// the skewed stream, the stream that gets db/big.ibd carries most bytes.
func pxbDealtStreams(t testing.TB, stream []byte, n int) [][]byte {
	r := NewReader(bytes.NewReader(stream))
	outs := make([]bytes.Buffer, n)
	ws := make([]*Writer, n)
	for i := range outs {
		ws[i] = NewWriter(&outs[i])
	}
	assigned, next := map[string]int{}, 0
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		i, ok := assigned[c.Path]
		if !ok {
			i, next = next%n, next+1
			assigned[c.Path] = i
		}
		require.NoError(t, ws[i].WriteChunk(c))
	}
	res := make([][]byte, n)
	for i := range outs {
		res[i] = outs[i].Bytes()
	}
	return res
}

// TestSplitStreamsBalancesDealtStreams: N streams dealt by file, as unbalanced
// as the files, come out as M lanes balanced by bytes that extract to the same
// tree as the streams themselves.
func TestSplitStreamsBalancesDealtStreams(t *testing.T) {
	stream := skewedStream(t)
	want := t.TempDir()
	_, err := Extract(context.Background(), want, ReaderLanes(bytes.NewReader(stream)), ExtractOptions{})
	require.NoError(t, err)
	for _, nm := range [][2]int{{4, 4}, {8, 8}, {8, 4}, {2, 8}, {3, 1}} {
		nSrc, m := nm[0], nm[1]
		srcs := pxbDealtStreams(t, stream, nSrc)
		var maxSrc int
		for _, s := range srcs {
			maxSrc = max(maxSrc, len(s))
		}
		bufs := make([]bytes.Buffer, m)
		ws := make([]io.Writer, m)
		for i := range bufs {
			ws[i] = &bufs[i]
		}
		stats, err := SplitStreams(context.Background(), byteReaders(srcs), ws, SplitOptions{PieceSize: 16 << 10})
		require.NoError(t, err)
		var total, maxB int64
		for _, st := range stats {
			total += st.Bytes
			maxB = max(maxB, st.Bytes)
		}
		mean := float64(total) / float64(m)
		t.Logf("%d streams (largest %.1f%% of the bytes) -> %d lanes: max/mean %.4f", nSrc,
			100*float64(maxSrc)/float64(len(stream)), m, float64(maxB)/mean)
		const maxPiece = 16<<10 + 200 // chunks of 64 KiB dealt in pieces of 16 KiB
		assert.LessOrEqual(t, float64(maxB), mean+maxPiece, "%d streams -> %d lanes unbalanced", nSrc, m)

		got := t.TempDir()
		lanes := make([]io.Reader, m)
		for i := range bufs {
			lanes[i] = bytes.NewReader(bufs[i].Bytes())
		}
		_, err = Extract(context.Background(), got, ReaderLanes(lanes...), ExtractOptions{})
		require.NoError(t, err)
		assert.Equal(t, readTree(t, want), readTree(t, got), "%d streams -> %d lanes", nSrc, m)
	}
}

// TestSplitStreamsStopsBlockedSources: when a lane fails, SplitStreams
// interrupts a source blocked in Read (a pipe nobody writes) and returns only
// after its goroutines stopped; a failing source is named by its index.
func TestSplitStreamsStopsBlockedSources(t *testing.T) {
	stream := skewedStream(t)
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	defer pr.Close()
	defer pw.Close()
	done := make(chan error, 1)
	go func() {
		_, err := SplitStreams(context.Background(), []io.Reader{bytes.NewReader(stream), pr},
			[]io.Writer{&failWriter{after: 3}}, SplitOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		var le *LaneError
		require.ErrorAs(t, err, &le)
	case <-time.After(10 * time.Second):
		t.Fatal("SplitStreams did not return while a source was blocked in Read")
	}

	bad := bytes.Clone(stream)
	bad[len(bad)/2] ^= 1
	_, err = SplitStreams(context.Background(), []io.Reader{bytes.NewReader(stream), bytes.NewReader(bad)},
		[]io.Writer{io.Discard, io.Discard}, SplitOptions{})
	require.ErrorIs(t, err, ErrChecksum)
	assert.Contains(t, err.Error(), "source 1: offset ")
}

// TestSplitDealsDeltaClustersInPieces: an incremental delta is written in
// clusters of page_size/4 pages, one chunk each (PXB and mariabackup
// write_filt.cc): 256 MiB at 32 KiB pages, 1 GiB at 64 KiB. Read in pieces,
// such a chunk is never held whole and is accepted up to
// DefaultMaxPiecedChunkSize; dealt whole it is still refused.
func TestSplitDealsDeltaClustersInPieces(t *testing.T) {
	const cluster = DefaultMaxChunkSize + 1<<20 // past the whole-chunk limit
	s := newSB(t)
	s.p("db/t.ibd.delta", 0, string(patterned(cluster, 3)))
	s.e("db/t.ibd.delta")
	stream := s.bytes()

	bufs := make([]bytes.Buffer, 3)
	ws := []io.Writer{&bufs[0], &bufs[1], &bufs[2]}
	_, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{PieceSize: 1 << 20})
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = Extract(context.Background(), dir, ReaderLanes(bytes.NewReader(bufs[0].Bytes()), bytes.NewReader(bufs[1].Bytes()),
		bytes.NewReader(bufs[2].Bytes())), ExtractOptions{})
	require.NoError(t, err)
	got, err := os.ReadFile(dir + "/db/t.ibd.delta")
	require.NoError(t, err)
	require.True(t, bytes.Equal(patterned(cluster, 3), got), "the cluster extracted from its pieces differs")

	_, err = Split(context.Background(), bytes.NewReader(stream), []io.Writer{io.Discard}, SplitOptions{})
	require.ErrorIs(t, err, ErrChunkTooLarge, "dealt whole, a chunk past DefaultMaxChunkSize is refused")

	_, err = Split(context.Background(), bytes.NewReader(stream), []io.Writer{io.Discard}, SplitOptions{PieceSize: 1 << 20, MaxPiecedChunkSize: cluster - 1})
	require.ErrorIs(t, err, ErrChunkTooLarge, "the pieced limit holds")
}

// TestSplitTellsEachFileEnd: FileEnded sees every file once, at its end
// record, and its error stops the split.
func TestSplitTellsEachFileEnd(t *testing.T) {
	stream := skewedStream(t)
	var ended []string
	_, err := Split(context.Background(), bytes.NewReader(stream), []io.Writer{io.Discard, io.Discard}, SplitOptions{
		FileEnded: func(p string) error { ended = append(ended, p); return nil },
	})
	require.NoError(t, err)
	chunks, err := readAll(t, stream)
	require.NoError(t, err)
	var want []string
	for _, c := range chunks {
		if c.Type == ChunkEOF {
			want = append(want, c.Path)
		}
	}
	require.NotEmpty(t, want)
	assert.Equal(t, want, ended)

	stop := errors.New("refused")
	_, err = Split(context.Background(), bytes.NewReader(stream), []io.Writer{io.Discard}, SplitOptions{
		FileEnded: func(p string) error { return stop },
	})
	assert.ErrorIs(t, err, stop)
}
