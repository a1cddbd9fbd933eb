package fifobackupengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"testing/iotest"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/testutil/benchdata"
	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/xbstream"
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

// framedRead reads lane frame by frame with the frames' sizes, resuming as
// a gzip stream where a frame does not decode as sizes say; resumed lists
// the frames it resumed at.
func framedRead(lane []byte, sizes []int64) (got []byte, resumed []int, err error) {
	resume := func(off int64, frame int, _ error) (io.ReadCloser, error) {
		resumed = append(resumed, frame)
		return gzip.NewReader(bytes.NewReader(lane[off:]))
	}
	got, err = io.ReadAll(newFramedLane(bytes.NewReader(lane), sizes, gzipFrames(), resume))
	return got, resumed, err
}

// TestFramedLaneDecodesWhatTheStreamDoes: a lane read frame by frame, small
// frames from memory and one over maxFrameInMemory from the stream, gives
// the bytes the stream decoder gives. Where the index and the lane
// disagree, the lane decides: a good lane under a wrong index reads whole
// (the rest of it as a stream from the frame that did not decode), a
// damaged lane fails as its stream does, and a storage error is the
// storage's, with no stream tried.
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

	got, resumed, err := framedRead(lane, sizes)
	require.NoError(t, err)
	assert.Empty(t, resumed)
	assert.True(t, bytes.Equal(want, got), "framed read differs from the raw lane")

	zr, err := gzip.NewReader(bytes.NewReader(lane))
	require.NoError(t, err)
	streamed, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(streamed, got), "framed read differs from the stream decoder's")

	// Frames of whole members merged read the same bytes, frame by frame.
	got, resumed, err = framedRead(lane, append([]int64{sizes[0] + sizes[1]}, sizes[2:]...))
	require.NoError(t, err)
	assert.Empty(t, resumed)
	assert.True(t, bytes.Equal(want, got))

	t.Run("a wrong index over a good lane", func(t *testing.T) {
		for name, tc := range map[string]struct {
			sizes   []int64
			resumed int
		}{
			"a frame boundary ten bytes late":  {append([]int64{sizes[0] + 10, sizes[1] - 10}, sizes[2:]...), 0},
			"a frame boundary ten bytes early": {append([]int64{sizes[0] - 10, sizes[1] + 10}, sizes[2:]...), 0},
			"the big frame's end moved":        {append(sizes[:2:2], sizes[2]-5, sizes[3]+5, sizes[4]), 2},
			"frames missing at the end":        {sizes[:3], 3},
			"no frames for a lane with bytes":  {nil, 0},
		} {
			got, resumed, err := framedRead(lane, tc.sizes)
			require.NoError(t, err, name)
			assert.Equal(t, []int{tc.resumed}, resumed, "%s: resumed at the frame that did not decode", name)
			assert.True(t, bytes.Equal(want, got), "%s: the lane reads whole", name)
		}
	})

	t.Run("a damaged lane", func(t *testing.T) {
		flipped := bytes.Clone(lane)
		flipped[sizes[0]+sizes[1]/2] ^= 0xff
		for name, tc := range map[string]struct {
			lane []byte
			want string
		}{
			"bytes after the last frame":       {append(bytes.Clone(lane), 0x1f, 0x8b), "the lane read as one stream from frame 5 (stored byte"},
			"the lane cut in its second frame": {lane[:sizes[0]+100], "the lane read as one stream from frame 1 (stored byte"},
			"the lane cut in its big frame":    {lane[:sizes[0]+sizes[1]+100], "the lane read as one stream from frame 2 (stored byte"},
			"a byte flipped in frame 1":        {flipped, "the lane read as one stream from frame 1 (stored byte"},
		} {
			_, streamErr := io.ReadAll(must(gzip.NewReader(bytes.NewReader(tc.lane))))
			require.Error(t, streamErr, "%s: the stream fails too", name)
			_, _, err := framedRead(tc.lane, sizes)
			require.Error(t, err, name)
			assert.Contains(t, err.Error(), tc.want, name)
		}
	})

	t.Run("the storage fails", func(t *testing.T) {
		cut := io.MultiReader(bytes.NewReader(lane[:sizes[0]+100]), iotest.ErrReader(errStorage))
		resumed := 0
		resume := func(int64, int, error) (io.ReadCloser, error) { resumed++; return nil, errors.New("resumed") }
		_, err := io.ReadAll(newFramedLane(cut, sizes, gzipFrames(), resume))
		require.ErrorIs(t, err, errStorage)
		assert.Zero(t, resumed, "a frame the storage did not give says nothing of the index")
	})

	t.Run("an empty lane", func(t *testing.T) {
		got, resumed, err := framedRead(nil, nil)
		require.NoError(t, err)
		assert.Empty(t, resumed)
		assert.Empty(t, got)
	})
}

var errStorage = errors.New("storage: access denied")

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestWholeLanesFrameByFrameRealMariaDB: a pgzip backup of more lanes than
// cores restores with its lanes read frame by frame (the frames of its lane
// index, each decoded from memory). With its index damaged it still
// restores, from the lanes' streams, with a warning (a whole restore does
// not need the index), and verify, which reads every file, names the index;
// with an index that reads but does not match the lanes, the lanes decide
// (the rest of a lane is read as a stream from the frame that did not
// decode), so it restores, and verify says a table restore cannot use the
// index. A damaged lane still fails naming backup and lane.
func TestWholeLanesFrameByFrameRealMariaDB(t *testing.T) {
	f := newFixture(t, sampleData)
	f.useFileStorage(t)
	ctx := context.Background()
	lanes := runtime.GOMAXPROCS(0) + 1
	f.roundTrip(t, testConfig(lanes, SourceStdout, CompressionConfig{Enabled: true, Engine: mysqlctl.PgzipCompressor, Level: 1, BlockSize: 250000,
		Blocks: 2}))
	bh, m := f.latestBackup(t)
	logger := logutil.NewMemoryLogger()
	// framedLanes of a read of its own, as each restore and verify has.
	framedLanes := func() [][]int64 {
		return (&storedLanes{bh: bh, m: m, stats: newPhaseStats(nil), logger: logger}).framedLanes(ctx)
	}
	sizes := framedLanes()
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
	assert.Nil(t, framedLanes())
	assert.Contains(t, logger.String(), "backup "+bh.Name()+": reading its lanes as streams, without their frames")
	_, err = Verify(ctx, bh, VerifyOptions{Logger: logger})
	require.Error(t, err, "verify reads every file: the index is damaged")
	assert.Contains(t, err.Error(), "table restores cannot use this backup's lane index (a whole restore does not need it): backup "+bh.Name()+": lanes.index: ")
	_, err = f.restore(t, nil)
	require.NoError(t, err, "and a whole restore does not need it")
	assert.Equal(t, f.static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"))

	// An index that reads but puts a frame's start 10 bytes late (a bug in
	// whatever wrote it, or a hand edit): the lane decides, and it is good.
	var ix LaneIndex
	require.NoError(t, json.Unmarshal(index, &ix))
	ix.Lanes[0][1].Stored += 10
	moved, err := json.Marshal(ix)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, m.LaneIndex), moved, 0o640))
	require.Len(t, framedLanes(), lanes, "the index reads")
	logger.Clear()
	_, err = Verify(ctx, bh, VerifyOptions{Logger: logger})
	require.Error(t, err, "the lanes are good, but a table restore could not use the index")
	assert.Contains(t, logger.String(), "backup "+bh.Name()+": "+m.Lanes[0].File+" does not match its lane index (frame 0: unexpected EOF): the rest of the lane is read as one stream from frame 0")
	assert.Contains(t, err.Error(), "table restores cannot use this backup's lane index (a whole restore does not need it): backup "+bh.Name()+": "+
		m.Lanes[0].File+" does not match the lane index at frame 0 (stored byte 0): frame 0: unexpected EOF")
	_, err = f.restore(t, nil)
	require.NoError(t, err, "and restores")
	assert.Equal(t, f.static, mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes"))

	require.NoError(t, os.WriteFile(filepath.Join(dir, m.LaneIndex), index, 0o640))
	require.Len(t, framedLanes(), lanes)
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

// BenchmarkFramedLanes: what reading a backup's whole lanes frame by frame
// costs or saves against reading them as streams, on the same backup:
// verify's read (every lane read, decompressed and checked, no disk
// writes) frame by frame from its lane index (frames) and as streams, and
// frame by frame with the index checked against the records and each
// frame's CRC-32C as verify does (frames+crc: the lane's CRC-32C folded
// from its frames'),
// alternating, FIFO_BENCH_REPEAT times each, medians:
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
	// FIFO_BENCH_COMPRESSION=zstd or lz4: what verify's frame by frame read
	// (checkIndex) costs against the lanes' streams.
	require.NoError(b, f.backup(b, nil))
	bh, m := f.latestBackup(b)
	type row struct{ wall, cpu []float64 }
	hows := []string{"frames", "streams", "frames+crc"}
	rows := map[string]*row{}
	for _, how := range hows {
		rows[how] = &row{}
	}
	for range repeat {
		for _, how := range hows {
			logger := logutil.NewMemoryLogger()
			// Verify's read of the lanes: every chunk checked, nothing written.
			framed := how != "streams"
			from := &storedLanes{bh: bh, m: m, stats: newPhaseStats(nil), logger: logger, checkIndex: framed}
			require.Equal(b, framed, from.framedLanes(context.Background()) != nil, how)
			var opts xbstream.ExtractOptions
			var check *indexCheck
			if how == "frames+crc" {
				check = newIndexCheck(must(from.laneIndex(context.Background())), m)
				opts.OnRecord, from.sums = check.record, check.summer
			}
			start, c0 := time.Now(), cpuTime()
			_, err := xbstream.Verify(context.Background(), from.lanes(context.Background()), opts)
			require.NoError(b, err)
			require.NoError(b, from.indexMismatch.get())
			if check != nil {
				require.NoError(b, check.result(m))
			}
			rows[how].wall = append(rows[how].wall, time.Since(start).Seconds())
			rows[how].cpu = append(rows[how].cpu, (cpuTime() - c0).Seconds())
		}
	}
	out := fmt.Sprintf("\nVerify of one %s backup of %d MiB benchdata (mixed), %d lanes on %d cores, %d stored MB, medians of %d:\n%-10s %8s %8s\n",
		comp, dataMB, lanes, runtime.GOMAXPROCS(0), m.StoredBytes/1e6, repeat, "lanes", "wall s", "cpu s")
	for _, how := range hows {
		out += fmt.Sprintf("%-10s %8.2f %8.2f\n", how, median(rows[how].wall), median(rows[how].cpu))
	}
	out += fmt.Sprintf("frames / streams: wall %.3f, cpu %.3f (median of each repeat's ratio)\n", pairedRatio(rows["frames"].wall, rows["streams"].wall),
		pairedRatio(rows["frames"].cpu, rows["streams"].cpu))
	out += fmt.Sprintf("frames+crc / frames: wall %.3f, cpu %.3f\n", pairedRatio(rows["frames+crc"].wall, rows["frames"].wall),
		pairedRatio(rows["frames+crc"].cpu, rows["frames"].cpu))
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

// TestVerifyChecksTheLaneIndexRealMariaDB: verify reads the lanes of every
// codec that has frames (zstd, lz4 here; gzip above) frame by frame from
// the lane index, on any host, so an index that reads but does not match the
// lanes fails verify as a damaged one does (a table restore reads the frames
// it names); the lanes, read as streams from that frame, are still judged
// good.
func TestVerifyChecksTheLaneIndexRealMariaDB(t *testing.T) {
	f := newFixture(t, sampleData)
	f.useFileStorage(t)
	ctx := context.Background()
	t.Run("the FIFO source, 3 streams dealt to 2 lanes", func(t *testing.T) {
		cfg := testConfig(2, SourceFIFO, zstdConfig())
		cfg.ToolPath, cfg.FIFOStreams = standinPath, 3
		useEngine(t, cfg)
		require.NoError(t, f.backup(t, nil))
		bh, m := f.latestBackup(t)
		require.Equal(t, SourceFIFO, m.Source)
		logger := logutil.NewMemoryLogger()
		_, err := Verify(ctx, bh, VerifyOptions{Logger: logger})
		require.NoError(t, err, "its index matches its lanes")
		assert.NotContains(t, logger.String(), "lane index")
	})
	for _, engine := range []string{mysqlctl.ZstdCompressor, mysqlctl.Lz4Compressor} {
		t.Run(engine, func(t *testing.T) {
			useEngine(t, testConfig(2, SourceStdout, CompressionConfig{Enabled: true, Engine: engine, Level: 1}))
			require.NoError(t, f.backup(t, nil))
			bh, m := f.latestBackup(t)
			logger := logutil.NewMemoryLogger()
			_, err := Verify(ctx, bh, VerifyOptions{Logger: logger})
			require.NoError(t, err)
			assert.NotContains(t, logger.String(), "lane index")

			path := filepath.Join(f.root, testKeyspace, testShard, bh.Name(), m.LaneIndex)
			index, err := os.ReadFile(path)
			require.NoError(t, err)
			var ix LaneIndex
			require.NoError(t, json.Unmarshal(index, &ix))
			require.Greater(t, len(ix.Lanes[1]), 2, "lane 1 has frames to move")
			for l := range ix.Lanes {
				for k, fr := range ix.Lanes[l] {
					require.Regexp(t, "^[0-9a-f]{8}$", fr.CRC32C, "lane %d frame %d", l, k)
				}
			}
			ix.Lanes[1][2].Stored -= 7
			require.NoError(t, os.WriteFile(path, must(json.Marshal(ix)), 0o640))
			_, err = Verify(ctx, bh, VerifyOptions{Logger: logger})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "table restores cannot use this backup's lane index (a whole restore does not need it): backup "+bh.Name()+
				": "+m.Lanes[1].File+" does not match the lane index at frame 1 (stored byte "+strconv.FormatInt(ix.Lanes[1][1].Stored, 10)+")")
			assert.Contains(t, logger.String(), m.Lanes[1].File+" does not match its lane index")

			// Frames that start where the lane's do but do not list a
			// file they hold, or start inside a record.
			for _, c := range []struct {
				edit func(*LaneIndex) string
			}{
				{func(ix *LaneIndex) string {
					// A file another frame lists too: one no other frame
					// lists is "none of its frames holds" (below).
					i, k := sharedPath(t, ix, 0)
					fr := &ix.Lanes[0][i]
					gone := ix.Paths[fr.Paths[k]]
					fr.Paths = slices.Delete(fr.Paths, k, k+1)
					return fmt.Sprintf("frame %d does not list %s, which has a chunk at stream offset ", i, gone)
				}},
				{func(ix *LaneIndex) string {
					// A frame whose CRC-32C is not its bytes': a table
					// restore would refuse a good frame.
					fr := &ix.Lanes[0][0]
					real := fr.CRC32C
					fr.CRC32C = fmt.Sprintf("%08x", must(strconv.ParseUint(real, 16, 32))^1)
					return fmt.Sprintf("frame 0 (stream bytes 0 to %d): its CRC-32C is %s, the lane index says %s", ix.Lanes[0][1].Raw, real, fr.CRC32C)
				}},
				{func(ix *LaneIndex) string {
					ix.Lanes[0][1].Raw += 3
					return fmt.Sprintf("frame 1 starts at stream offset %d, inside a record", ix.Lanes[0][1].Raw)
				}},
				{func(ix *LaneIndex) string {
					// An empty frame at the lane's end: its stored bytes (none)
					// decode, and it starts where no record does.
					ix.Lanes[0] = append(ix.Lanes[0], Frame{Stored: m.Lanes[0].StoredBytes, Raw: m.Lanes[0].RawBytes})
					return fmt.Sprintf("frame %d starts at stream offset %d, past the lane's last record", len(ix.Lanes[0])-1, m.Lanes[0].RawBytes)
				}},
			} {
				var ix LaneIndex
				require.NoError(t, json.Unmarshal(index, &ix))
				want := c.edit(&ix)
				require.NoError(t, os.WriteFile(path, must(json.Marshal(ix)), 0o640))
				_, err = Verify(ctx, bh, VerifyOptions{Logger: logger})
				require.Error(t, err, want)
				assert.Contains(t, err.Error(), "table restores cannot use this backup's lane index (a whole restore does not need it): backup "+
					bh.Name()+": "+m.Lanes[0].File+" does not match the lane index: "+want)
			}
			// A file the index lists that no frame holds: a table restore
			// would take it for one of the backup's and read nothing for it.
			require.NoError(t, json.Unmarshal(index, &ix))
			ix.Paths = append(ix.Paths, "zzz/ghost.ibd")
			require.NoError(t, os.WriteFile(path, must(json.Marshal(ix)), 0o640))
			_, err = Verify(ctx, bh, VerifyOptions{Logger: logger})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "table restores cannot use this backup's lane index (a whole restore does not need it): backup "+
				bh.Name()+": the lane index lists zzz/ghost.ibd, which none of its frames holds")
			require.NoError(t, json.Unmarshal(index, &ix))

			// A table restore reads the frames the index names: with every
			// frame start moved, whichever it reads do not decode, and it
			// says the index may be what is wrong.
			for l := range ix.Lanes {
				for k := 1; k < len(ix.Lanes[l]); k++ {
					ix.Lanes[l][k].Stored -= 7
				}
			}
			require.NoError(t, os.WriteFile(path, must(json.Marshal(ix)), 0o640))
			ps, err := ParseTablePatterns([]string{"sample.t0123"})
			require.NoError(t, err)
			out := filepath.Join(t.TempDir(), "tables")
			_, err = RestoreToDir(ctx, bh, out, RestoreDirOptions{Config: testConfig(2, SourceStdout, zstdConfig()), Prepare: true, Tables: ps, Logger: logger})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "reading the frames the lane index names (a damaged lane, or an index that does not match it: vtfifo verify "+
				"reads the whole lanes and says which; a whole restore does not need the index)")
			assert.NoDirExists(t, out)
		})
	}
}

// sharedPath finds, in lane's frames, a file (frame i, its k-th path) that
// some other frame of the index lists as well: which files span frames
// depends on how the chunks were dealt to the lanes.
func sharedPath(t *testing.T, ix *LaneIndex, lane int) (i, k int) {
	t.Helper()
	count := map[int]int{}
	for _, frames := range ix.Lanes {
		for _, fr := range frames {
			for _, p := range fr.Paths {
				count[p]++
			}
		}
	}
	for i, fr := range ix.Lanes[lane] {
		for k, p := range fr.Paths {
			if count[p] > 1 {
				return i, k
			}
		}
	}
	t.Fatalf("no file of lane %d spans two frames", lane)
	return 0, 0
}
