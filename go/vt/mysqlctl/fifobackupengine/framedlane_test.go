package fifobackupengine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/testutil/benchdata"
	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

// gzipLane is a lane of a frame per raw block, each frame two gzip
// members (as pargzip writes them) where the block is larger than 64 KiB,
// and the index's frames of it.
func gzipLane(t testing.TB, raws [][]byte) (lane []byte, frames []Frame) {
	var out bytes.Buffer
	var raw int64
	for _, r := range raws {
		frames = append(frames, Frame{Stored: int64(out.Len()), Raw: raw})
		members := [][]byte{r}
		if len(r) > 64<<10 {
			members = [][]byte{r[:64<<10], r[64<<10:]}
		}
		for _, m := range members {
			zw, err := gzip.NewWriterLevel(&out, 1)
			require.NoError(t, err)
			_, err = zw.Write(m)
			require.NoError(t, err)
			require.NoError(t, zw.Close())
		}
		raw += int64(len(r))
	}
	return out.Bytes(), frames
}

// TestFramedLaneDecodesWhatTheStreamDoes: a lane read frame by frame, small
// frames from memory and one over maxFrameInMemory from the stream, gives
// the bytes the stream decoder gives; a lane whose frames do not match its
// index, or that was cut short or grown, fails naming the frame.
func TestFramedLaneDecodesWhatTheStreamDoes(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	var raws [][]byte
	for _, n := range []int{1 << 20, 70_000, 3 * maxFrameInMemory, 1 << 20, 1} {
		r := make([]byte, n)
		rng.Read(r) // incompressible: the big frame stays big once stored
		raws = append(raws, r)
	}
	lane, frames := gzipLane(t, raws)
	sizes := frameSizes(frames, int64(len(lane)))
	require.Greater(t, sizes[2], int64(maxFrameInMemory), "one frame is read from the stream")
	want := bytes.Join(raws, nil)

	read := func(lane []byte, sizes []int64) ([]byte, error) {
		return io.ReadAll(newFramedLane(bytes.NewReader(lane), sizes, gzipFrames()))
	}
	got, err := read(lane, sizes)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "framed read differs from the raw lane")

	zr, err := gzip.NewReader(bytes.NewReader(lane))
	require.NoError(t, err)
	streamed, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(streamed, got), "framed read differs from the stream decoder's")

	// Frames of whole members merged read the same bytes; a boundary inside
	// a member is an error.
	merged := append([]int64{sizes[0] + sizes[1]}, sizes[2:]...)
	got, err = read(lane, merged)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got))
	shifted := append([]int64{sizes[0] + 10, sizes[1] - 10}, sizes[2:]...)
	for name, tc := range map[string]struct {
		lane  []byte
		sizes []int64
		want  string
	}{
		"a frame boundary off by ten bytes": {lane, shifted, "frame 0: unexpected EOF"},
		"a frame boundary ten bytes early":  {lane, append([]int64{sizes[0] - 10, sizes[1] + 10}, sizes[2:]...), "frame 0: unexpected EOF"},
		"bytes after the last frame":        {append(bytes.Clone(lane), 0x1f, 0x8b), sizes, "bytes after the lane's last frame (5 frames)"},
		"the lane cut in its second frame":  {lane[:sizes[0]+100], sizes, "frame 1: reading its"},
		"the lane cut in its big frame":     {lane[:sizes[0]+sizes[1]+100], sizes, "frame 2: "},
		"no frames for a lane with bytes":   {lane, nil, "bytes after the lane's last frame (0 frames)"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := read(tc.lane, tc.sizes)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("an empty lane", func(t *testing.T) {
		got, err := read(nil, nil)
		require.NoError(t, err)
		assert.Empty(t, got)
	})
}

// TestWholeLanesFrameByFrameRealMariaDB: a pgzip backup of more lanes than
// cores restores with its lanes read frame by frame (the frames of its lane
// index, each decoded from memory). With its index damaged it still
// verifies and restores, from the lanes' streams, with a warning: a whole
// restore does not need the index, and a good backup is not called bad for
// it. A damaged lane still fails naming backup and lane.
func TestWholeLanesFrameByFrameRealMariaDB(t *testing.T) {
	f := newFixture(t, sampleData)
	f.useFileStorage(t)
	ctx := context.Background()
	lanes := runtime.GOMAXPROCS(0) + 1
	f.roundTrip(t, testConfig(lanes, SourceStdout, CompressionConfig{Enabled: true, Engine: mysqlctl.PgzipCompressor, Level: 1, BlockSize: 250000,
		Blocks: 2}))
	bh, m := f.latestBackup(t)
	logger := logutil.NewMemoryLogger()
	from := &storedLanes{bh: bh, m: m, stats: newPhaseStats(nil), logger: logger}
	sizes := from.framedLanes(ctx)
	require.Len(t, sizes, lanes, "the restore read the lanes frame by frame")
	frames := 0
	for i, s := range sizes {
		var sum int64
		for _, n := range s {
			sum += n
		}
		assert.Equal(t, m.Lanes[i].StoredBytes, sum, "lane %d: its frames cover it", i)
		frames += len(s)
	}
	assert.Greater(t, frames, lanes, "lanes of several frames")

	dir := filepath.Join(f.root, testKeyspace, testShard, bh.Name())
	index, err := os.ReadFile(filepath.Join(dir, m.LaneIndex))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, m.LaneIndex), []byte("{not an index"), 0o640))
	assert.Nil(t, from.framedLanes(ctx))
	assert.Contains(t, logger.String(), "backup "+bh.Name()+": reading its lanes as streams, without their frames")
	_, err = Verify(ctx, bh, VerifyOptions{Logger: logger})
	require.NoError(t, err, "a backup whose index is damaged verifies whole")
	_, err = f.restore(t, nil)
	require.NoError(t, err, "and restores")
	assert.Equal(t, f.static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"))

	require.NoError(t, os.WriteFile(filepath.Join(dir, m.LaneIndex), index, 0o640))
	require.Len(t, from.framedLanes(ctx), lanes)
	lane := filepath.Join(dir, m.Lanes[1].File)
	data, err := os.ReadFile(lane)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	require.NoError(t, os.WriteFile(lane, data, 0o640))
	_, err = Verify(ctx, bh, VerifyOptions{Logger: logger})
	require.Error(t, err)
	assert.Contains(t, err.Error(), bh.Name())
	assert.Contains(t, err.Error(), m.Lanes[1].File)
}

// BenchmarkFramedLanes: what reading a gzip backup's whole lanes frame by
// frame saves, on the same backup: Verify (every lane read, decompressed
// and checked, no disk writes) with its lane index in place (frames) and
// set aside (streams), alternating, FIFO_BENCH_REPEAT times each, medians:
//
//	FIFO_BENCH_DATA_MB=1024 FIFO_BENCH_REPEAT=5 go test -run '^$' -bench FramedLanes \
//	  -benchtime 1x -timeout 60m ./go/vt/mysqlctl/fifobackupengine/
func BenchmarkFramedLanes(b *testing.B) {
	dataMB := envInt("FIFO_BENCH_DATA_MB", 512)
	repeat := envInt("FIFO_BENCH_REPEAT", 5)
	comp := envString("FIFO_BENCH_COMPRESSION", mysqlctl.PgzipCompressor)
	lanes := envInt("FIFO_BENCH_LANES", runtime.GOMAXPROCS(0))
	f := newFixture(b, mariadbtest.Options{Tables: 200})
	f.useFileStorage(b)
	_, err := benchdata.Load(context.Background(), f.srv.DB(), benchdata.Options{Shape: benchdata.Mixed, Bytes: int64(dataMB) << 20, Seed: 1,
		DataDir: f.tb.Cnf.DataDir, Log: b.Logf})
	require.NoError(b, err)
	useEngine(b, testConfig(lanes, SourceStdout, CompressionConfig{Enabled: true, Engine: comp, Level: 1, BlockSize: 250000, Blocks: 2}))
	require.NoError(b, f.backup(b, nil))
	bh, m := f.latestBackup(b)
	index := filepath.Join(f.root, testKeyspace, testShard, bh.Name(), m.LaneIndex)
	type row struct{ wall, cpu []float64 }
	rows := map[string]*row{"frames": {}, "streams": {}}
	for range repeat {
		for _, how := range []string{"frames", "streams"} {
			if how == "streams" {
				require.NoError(b, os.Rename(index, index+".aside"))
			}
			logger := logutil.NewMemoryLogger()
			from := &storedLanes{bh: bh, m: m, stats: newPhaseStats(nil), logger: logger}
			require.Equal(b, how == "frames", from.framedLanes(context.Background()) != nil, how)
			start, c0 := time.Now(), cpuTime()
			_, err := Verify(context.Background(), bh, VerifyOptions{Logger: logger})
			require.NoError(b, err)
			rows[how].wall = append(rows[how].wall, time.Since(start).Seconds())
			rows[how].cpu = append(rows[how].cpu, (cpuTime() - c0).Seconds())
			if how == "streams" {
				require.NoError(b, os.Rename(index+".aside", index))
			}
		}
	}
	out := fmt.Sprintf("\nVerify of one %s backup of %d MiB benchdata (mixed), %d lanes on %d cores, %d stored MB, medians of %d:\n%-8s %8s %8s\n",
		comp, dataMB, lanes, runtime.GOMAXPROCS(0), m.StoredBytes/1e6, repeat, "lanes", "wall s", "cpu s")
	for _, how := range []string{"frames", "streams"} {
		out += fmt.Sprintf("%-8s %8.2f %8.2f\n", how, median(rows[how].wall), median(rows[how].cpu))
	}
	out += fmt.Sprintf("frames / streams: wall %.3f, cpu %.3f (median of each repeat's ratio)\n", pairedRatio(rows["frames"].wall, rows["streams"].wall),
		pairedRatio(rows["frames"].cpu, rows["streams"].cpu))
	b.Log(out)
	fmt.Print(out)
}

// TestFramesOfManyGzipMembersRealMariaDB: pargzip with fewer lanes than
// cores writes each frame as several gzip members (one per 250 kB block); a
// restore on a host with no more cores than lanes reads those lanes frame
// by frame, every member of each frame. GOMAXPROCS plays the two hosts (2
// at the backup, 1 at the restore), whatever this machine's cores.
func TestFramesOfManyGzipMembersRealMariaDB(t *testing.T) {
	f := newFixture(t, sampleData)
	f.useFileStorage(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	cfg := testConfig(1, SourceStdout, CompressionConfig{Enabled: true, Engine: mysqlctl.PargzipCompressor, Level: 1, BlockSize: 250000, Blocks: 2})
	require.False(t, cfg.Compression.forLanes(1).serialInLane, "pargzip's parallel writer")
	useEngine(t, cfg)
	require.NoError(t, f.backup(t, nil))
	bh, m := f.latestBackup(t)
	lane, err := os.ReadFile(filepath.Join(f.root, testKeyspace, testShard, bh.Name(), m.Lanes[0].File))
	require.NoError(t, err)
	members := bytes.Count(lane, []byte{0x1f, 0x8b, 8}) // gzip magic and deflate: at least one per member
	ix, err := ReadLaneIndex(context.Background(), bh, m)
	require.NoError(t, err)
	require.Greater(t, members, 2*len(ix.Lanes[0]), "frames of several members")

	runtime.GOMAXPROCS(1)
	from := &storedLanes{bh: bh, m: m, stats: newPhaseStats(nil), logger: logutil.NewMemoryLogger()}
	require.Len(t, from.framedLanes(context.Background()), 1, "read frame by frame")
	_, err = f.restore(t, nil)
	require.NoError(t, err)
	assert.Equal(t, f.static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"))
}
