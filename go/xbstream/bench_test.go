package xbstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

var (
	benchOnce   sync.Once
	benchStream []byte
)

// syntheticStream is ~160 MiB shaped like a backup: one big file in 10 MiB
// chunks interleaved with a few hundred small files.
func syntheticStream(b *testing.B) []byte {
	benchOnce.Do(func() {
		s := newSB(b)
		chunk := patterned(10<<20, 42)
		small := patterned(64<<10, 43)
		for i := 0; i < 14; i++ {
			s.chunk(Chunk{Type: ChunkPayload, Path: "db/big.ibd", Offset: uint64(i) * uint64(len(chunk)), Payload: chunk})
			for j := 0; j < 20; j++ {
				s.file(fmt.Sprintf("db/t%03d_%02d.ibd", i, j), small, len(small))
			}
		}
		s.e("db/big.ibd")
		benchStream = s.bytes()
	})
	return benchStream
}

func BenchmarkReader(b *testing.B) {
	stream := syntheticStream(b)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := NewReader(bytes.NewReader(stream))
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkSplit(b *testing.B) {
	stream := syntheticStream(b)
	for _, n := range []int{1, 3, 8} {
		b.Run(fmt.Sprintf("lanes=%d", n), func(b *testing.B) {
			ws := make([]io.Writer, n)
			for i := range ws {
				ws[i] = io.Discard
			}
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkExtract(b *testing.B) {
	stream := syntheticStream(b)
	for _, n := range []int{1, 3, 8} {
		b.Run(fmt.Sprintf("lanes=%d", n), func(b *testing.B) {
			lanes := splitBytes(b, stream, n)
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "x")
				syscall.Sync() // earlier iterations' dirty pages must not throttle this one
				b.StartTimer()
				if _, err := Extract(context.Background(), dir, readers(lanes), ExtractOptions{}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				require.NoError(b, os.RemoveAll(dir))
				b.StartTimer()
			}
		})
	}
}

// BenchmarkExtractVsMbstream extracts the same real mariabackup stream with
// `mbstream -x` (stdin from a file) and with Extract (1 plain lane; 8 split
// lanes held in memory) and reports the times and their ratio.
func BenchmarkExtractVsMbstream(b *testing.B) {
	path := realStream(b)
	stream, err := os.ReadFile(path)
	require.NoError(b, err)
	lanes8 := splitBytes(b, stream, 8)
	mb := mariadbtest.LookPath(b, "mbstream")
	var tMb, t1, t8 time.Duration
	run := func(fn func(dir string)) time.Duration {
		dir := filepath.Join(b.TempDir(), "x")
		require.NoError(b, os.MkdirAll(dir, 0o750))
		syscall.Sync()
		start := time.Now()
		fn(dir)
		d := time.Since(start)
		require.NoError(b, os.RemoveAll(dir))
		return d
	}
	b.SetBytes(int64(len(stream)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tMb += run(func(dir string) {
			cmd := exec.Command(mb, "-x", "-C", dir)
			f, err := os.Open(path)
			require.NoError(b, err)
			defer f.Close()
			cmd.Stdin = f
			out, err := cmd.CombinedOutput()
			require.NoError(b, err, "%s", out)
		})
		t1 += run(func(dir string) {
			f, err := os.Open(path)
			require.NoError(b, err)
			defer f.Close()
			_, err = Extract(context.Background(), dir, ReaderLanes(f), ExtractOptions{})
			require.NoError(b, err)
		})
		t8 += run(func(dir string) {
			_, err := Extract(context.Background(), dir, readers(lanes8), ExtractOptions{})
			require.NoError(b, err)
		})
	}
	b.StopTimer()
	n := float64(b.N)
	mbps := func(d time.Duration) float64 { return float64(len(stream)) / 1e6 / (d.Seconds() / n) }
	b.ReportMetric(mbps(tMb), "mbstream_MB/s")
	b.ReportMetric(mbps(t1), "ours1_MB/s")
	b.ReportMetric(mbps(t8), "ours8_MB/s")
	b.ReportMetric(tMb.Seconds()/t1.Seconds(), "speedup1")
	b.ReportMetric(tMb.Seconds()/t8.Seconds(), "speedup8")
	b.Logf("%d MiB stream, %d runs: mbstream -x %.0f MB/s; ours 1 lane %.0f MB/s (x%.2f); ours 8 lanes %.0f MB/s (x%.2f)",
		len(stream)>>20, b.N, mbps(tMb), mbps(t1), tMb.Seconds()/t1.Seconds(), mbps(t8), tMb.Seconds()/t8.Seconds())
}

// pacedLane takes as long to write as a codec of rate bytes per second
// would, sleeping instead of computing: a 2-core machine can stand in for
// the cores of a many-core host, each lane's codec on its own core, and the
// benchmark shows how much of that parallelism the splitter lets the lanes
// use.
type pacedLane struct{ rate float64 }

func (l pacedLane) Write(p []byte) (int, error) {
	time.Sleep(time.Duration(float64(len(p)) / l.rate * float64(time.Second)))
	return len(p), nil
}

// BenchmarkSplitPacedLanes: lanes of 100 MB/s each on a host with as many
// cores as lanes; "of-lanes" is the rate reached as a fraction of the lanes'
// sum (1.0: every lane busy all the time).
func BenchmarkSplitPacedLanes(b *testing.B) {
	stream := syntheticStream(b)
	const rate = 100e6
	for _, n := range []int{8, 16, 32, 64} {
		b.Run(fmt.Sprintf("lanes=%d", n), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
			ws := make([]io.Writer, n)
			for i := range ws {
				ws[i] = pacedLane{rate}
			}
			b.SetBytes(int64(len(stream)))
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{PieceSize: 1 << 20}); err != nil {
					b.Fatal(err)
				}
			}
			reached := float64(len(stream)) * float64(b.N) / time.Since(start).Seconds()
			b.ReportMetric(reached/(rate*float64(n)), "of-lanes")
		})
	}
}

// stallingWriter is a lane that takes stall every every bytes it is
// written, beyond the time its writes take: a part sealed and waiting for an
// upload slot, a compressor's frame flushed into a busy store.
type stallingWriter struct {
	every, since int64
	stall        time.Duration
}

func (w *stallingWriter) Write(p []byte) (int, error) {
	w.since += int64(len(p))
	if w.since >= w.every {
		w.since -= w.every
		time.Sleep(w.stall)
	}
	return len(p), nil
}

// BenchmarkSplitStallingLanes: the dealer against lanes that stall now and
// then (sleeping, so that two cores show what sixteen would): 16 lanes that
// each stall 20 ms every 8 MiB, dealt 1 MiB pieces of the synthetic stream.
// A dealer that waits for the lane the balance picks while others are idle
// adds every stall to the backup's time; one that deals around a busy lane
// hides them behind the other lanes' work.
//
//	go test -run '^$' -bench SplitStallingLanes -count 5 ./go/xbstream/
func BenchmarkSplitStallingLanes(b *testing.B) {
	stream := syntheticStream(b)
	const lanes = 16
	for _, pass := range []bool{false, true} {
		b.Run(fmt.Sprintf("pass-busy-lanes=%v", pass), func(b *testing.B) {
			var waits [3]time.Duration
			opts := pieceOptions(pass, &waits)
			b.SetBytes(int64(len(stream)))
			for i := 0; i < b.N; i++ {
				ws := stallingLanes(lanes, 0, 20*time.Millisecond)
				st, err := Split(context.Background(), bytes.NewReader(stream), ws, opts)
				if err != nil {
					b.Fatal(err)
				}
				var least, most int64 = st[0].Bytes, 0
				for _, l := range st {
					least, most = min(least, l.Bytes), max(most, l.Bytes)
				}
				b.ReportMetric(float64(most-least)/(1<<20), "MiB-lane-spread")
			}
			b.ReportMetric(waits[WaitLanes].Seconds()*1e3/float64(b.N), "ms-waiting-lanes/op")
		})
	}
}

// pacedPipeSource writes stream into a 1 MiB pipe at rate bytes a second, 1
// MiB a write, as the tool writes its stdout: a write blocks while the
// pipe is full. It returns the pipe's read end and a func that waits for
// the writer and says how much longer than len(stream)/rate it took: the
// time the tool would have stood still because the reader did not drain.
func pacedPipeSource(b *testing.B, stream []byte, rate float64) (io.ReadCloser, func() time.Duration) {
	r, w, err := os.Pipe()
	require.NoError(b, err)
	_, _ = unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20) // as the engine grows the tool's stdout pipe
	done := make(chan time.Duration, 1)
	go func() {
		defer w.Close()
		start := time.Now()
		for off := 0; off < len(stream); {
			due := start.Add(time.Duration(float64(off) / rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
			n := min(1<<20, len(stream)-off)
			if _, err := w.Write(stream[off : off+n]); err != nil {
				break
			}
			off += n
		}
		done <- time.Since(start) - time.Duration(float64(len(stream))/rate*float64(time.Second))
	}()
	return r, func() time.Duration { return <-done }
}

// BenchmarkSplitPacedSource: whether the splitter holds the tool back where
// the lanes can keep up on average: a source writing 1 GB/s into a 1 MiB
// pipe (the engine's), dealt in 1 MiB pieces to 16 lanes of 100 MB/s each
// (1.6x the source, as 16 pgzip lanes against mariabackup's stream on 16
// cores), steady or stalling 20 ms every 8 MiB (a part sealed), with
// GOMAXPROCS at the lane count as on such a host (the lanes sleep, so two
// cores show what sixteen would). ms-tool-stalled is how much longer the
// source took than its own pace: the tool standing still on a full pipe
// because the reader was waiting for a free buffer or for the dealer.
//
//	go test -run '^$' -bench SplitPacedSource -count 5 ./go/xbstream/
func BenchmarkSplitPacedSource(b *testing.B) {
	for _, stall := range []time.Duration{0, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("stall=%v", stall), func(b *testing.B) { pacedSource(b, 16, 100e6, stall) })
	}
}

func pacedSource(b *testing.B, lanes int, laneRate float64, stall time.Duration) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(lanes)) // a core a lane, as on the host it models
	stream := syntheticStream(b)
	const rate = 1e9
	var stalled time.Duration
	var waits [3]time.Duration
	opts := pieceOptions(true, &waits)
	b.SetBytes(int64(len(stream)))
	for i := 0; i < b.N; i++ {
		ws := stallingLanes(lanes, laneRate, stall)
		src, wait := pacedPipeSource(b, stream, rate)
		_, err := Split(context.Background(), src, ws, opts)
		src.Close()
		stalled += wait()
		require.NoError(b, err)
	}
	b.ReportMetric(float64(stalled.Milliseconds())/float64(b.N), "ms-tool-stalled/op")
	b.ReportMetric(waits[WaitBuffers].Seconds()*1e3/float64(b.N), "ms-waiting-buffers/op")
	b.ReportMetric(waits[WaitLanes].Seconds()*1e3/float64(b.N), "ms-waiting-lanes/op")
}

// stallingLanes are n lanes that each stall every 8 MiB (their first
// stalls spread by half a MiB a lane) and, at a rate > 0, write at it.
func stallingLanes(n int, rate float64, stall time.Duration) []io.Writer {
	ws := make([]io.Writer, n)
	for j := range ws {
		w := &stallingWriter{every: 8 << 20, since: int64(j) << 19, stall: stall}
		ws[j] = w
		if rate > 0 {
			ws[j] = pacedStallingLane{pacedLane{rate}, w}
		}
	}
	return ws
}

// pieceOptions deals 1 MiB pieces, as the engine does, adding up the waits.
func pieceOptions(passBusyLanes bool, waits *[3]time.Duration) SplitOptions {
	return SplitOptions{PieceSize: 1 << 20, PassBusyLanes: passBusyLanes, Waited: func(w Wait, d time.Duration) { waits[w] += d }}
}

type pacedStallingLane struct {
	paced pacedLane
	stall *stallingWriter
}

func (l pacedStallingLane) Write(p []byte) (int, error) {
	_, _ = l.paced.Write(p)
	return l.stall.Write(p)
}

// BenchmarkSplitFromPipe: the splitter reading a pipe (1 MiB, written 10 MiB
// at a time, as the tools write their chunks), 2 lanes to io.Discard, at
// three source buffer sizes; cpu-ms/op is the process's CPU (the writer's
// copies into the pipe included). A buffer as large as a piece copies nearly
// every payload byte out of it once more.
func BenchmarkSplitFromPipe(b *testing.B) {
	stream := syntheticStream(b)
	for _, bs := range []int{64 << 10, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("buf=%dKiB", bs>>10), func(b *testing.B) {
			ws := []io.Writer{io.Discard, io.Discard}
			b.SetBytes(int64(len(stream)))
			var ru0, ru1 syscall.Rusage
			require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru0))
			for b.Loop() {
				splitFromPipe(b, stream, ws, SplitOptions{ReadBufferSize: bs, PieceSize: 1 << 20})
			}
			require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru1))
			cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

func splitFromPipe(b *testing.B, stream []byte, lanes []io.Writer, opts SplitOptions) {
	r, w, err := os.Pipe()
	require.NoError(b, err)
	_, _ = unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	var wg sync.WaitGroup
	wg.Go(func() {
		for p := stream; len(p) > 0; {
			n, err := w.Write(p[:min(len(p), 10<<20)])
			if err != nil {
				break
			}
			p = p[n:]
		}
		w.Close()
	})
	_, err = Split(context.Background(), r, lanes, opts)
	r.Close()
	wg.Wait()
	require.NoError(b, err)
}
