package fifobackupengine

import (
	"context"
	"io"
	"slices"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/klauspost/pgzip"
	lz4v4 "github.com/pierrec/lz4/v4"
	"github.com/planetscale/pargzip"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// codec is one compression engine (Vitess's --compression-engine-name):
// everything the engine does with it. Adding one is an entry in codecs:
// the frame and round-trip tests take every entry.
type codec struct {
	// extension is the lane files' suffix (external: the operator's).
	extension string
	// writer starts a lane's compressor.
	writer func(ctx context.Context, c *CompressionConfig, w io.Writer, logger logutil.Logger) (io.WriteCloser, error)
	// reset, where the library can, points comp (its frame closed) at w
	// with all of its state reused; ok false starts a new writer instead.
	reset func(c *CompressionConfig, comp io.WriteCloser, w io.Writer) (_ io.WriteCloser, ok bool, err error)
	// reader starts a lane's decompressor for a backup written with m.
	reader func(ctx context.Context, m *Manifest, local CompressionConfig, r io.Reader, logger logutil.Logger) (io.ReadCloser, error)
	// frames, where set, starts a lane's frame decoder for a whole lane read
	// frame by frame from memory (framedLane): verify reads lanes so, to
	// check them against the lane index, and so do restores where
	// framesFaster says the codec reads frames from memory faster than its
	// stream (when the lanes keep the cores busy). The backup must have a
	// lane index.
	frames       func() frameDecoder
	framesFaster bool
	// seekable: a lane can be read from any frame start (the reader takes
	// frames one after another on its own); an external command's output
	// cannot be cut.
	seekable bool
	// threaded: the codec runs goroutines of its own per lane (pgzip's and
	// pargzip's blocks, lz4's concurrency), which a lane runs serially in
	// its own goroutine when the lanes alone keep the cores busy (forLanes).
	threaded bool
}

var codecs = map[string]codec{
	mysqlctl.PgzipCompressor: {extension: ".gz", writer: pgzipWriter, reset: resetGzip, reader: gzipReader, frames: gzipFrames, framesFaster: true,
		seekable: true, threaded: true},
	mysqlctl.PargzipCompressor: {extension: ".gz", writer: pargzipWriter, reset: resetGzip, reader: gzipReader, frames: gzipFrames, framesFaster: true,
		seekable: true, threaded: true},
	mysqlctl.ZstdCompressor:     {extension: ".zst", writer: zstdWriter, reset: resetZstd, reader: zstdReader, frames: zstdFrames, seekable: true},
	mysqlctl.Lz4Compressor:      {extension: ".lz4", writer: lz4Writer, reset: resetLz4, reader: lz4Reader, frames: lz4Frames, seekable: true, threaded: true},
	mysqlctl.ExternalCompressor: {writer: externalWriter, reader: externalReader},
}

// codecNames are the allowed values of --compression-engine-name: Vitess's
// in its order, then the others sorted (the same text on every run).
func codecNames() []string {
	names := []string{mysqlctl.PgzipCompressor, mysqlctl.PargzipCompressor, mysqlctl.ZstdCompressor, mysqlctl.Lz4Compressor, mysqlctl.ExternalCompressor}
	var others []string
	for n := range codecs {
		if !slices.Contains(names, n) {
			others = append(others, n)
		}
	}
	slices.Sort(others)
	return append(names, others...)
}

// sequentialGzip is a lane's gzip as one sequential stream (serialInLane).
func sequentialGzip(c *CompressionConfig, w io.Writer) (io.WriteCloser, error) {
	gz, err := gzip.NewWriterLevel(w, c.Level)
	if err != nil {
		return nil, errtext.Wrapf(err, "cannot create %s compressor", c.Engine)
	}
	return gz, nil
}

func pgzipWriter(_ context.Context, c *CompressionConfig, w io.Writer, _ logutil.Logger) (io.WriteCloser, error) {
	if c.serialInLane {
		return sequentialGzip(c, w)
	}
	gz, err := pgzip.NewWriterLevel(w, c.Level)
	if err != nil {
		return nil, errtext.Wrap(err, "cannot create pgzip compressor")
	}
	if err := gz.SetConcurrency(c.BlockSize, c.Blocks); err != nil {
		return nil, errtext.Wrap(err, "cannot configure pgzip compressor")
	}
	return gz, nil
}

func pargzipWriter(_ context.Context, c *CompressionConfig, w io.Writer, _ logutil.Logger) (io.WriteCloser, error) {
	if c.serialInLane {
		return sequentialGzip(c, w)
	}
	gz := pargzip.NewWriter(w)
	gz.ChunkSize = c.BlockSize
	gz.Parallel = c.Blocks
	gz.CompressionLevel = c.Level
	return gz, nil
}

// resetGzip reuses a gzip or pgzip writer; pgzip's Reset restores its
// default concurrency, set again. A new pgzip writer per frame would start
// with empty pools of blocks and flate writers. pargzip has no Reset.
func resetGzip(c *CompressionConfig, comp io.WriteCloser, w io.Writer) (io.WriteCloser, bool, error) {
	switch comp := comp.(type) {
	case *gzip.Writer:
		comp.Reset(w)
		return comp, true, nil
	case *pgzip.Writer:
		comp.Reset(w)
		if err := comp.SetConcurrency(c.BlockSize, c.Blocks); err != nil {
			return nil, false, errtext.Wrap(err, "cannot configure pgzip compressor")
		}
		return comp, true, nil
	}
	return nil, false, nil
}

// gzipReader reads pgzip's and pargzip's output (pargzip only compresses;
// its output is plain gzip). With as many lanes as cores each lane reads it
// as one sequential stream in its own goroutine: pgzip's reader allocates
// its read-ahead blocks again at every gzip member (every frame).
func gzipReader(_ context.Context, m *Manifest, _ CompressionConfig, r io.Reader, _ logutil.Logger) (io.ReadCloser, error) {
	if lanesKeepCoresBusy(len(m.Lanes)) {
		d, err := gzip.NewReader(r)
		if err != nil {
			return nil, errtext.Wrap(err, "cannot start gzip decompressor")
		}
		return d, nil
	}
	d, err := pgzip.NewReaderN(r, gzipReadBlock, gzipReadBlocks)
	if err != nil {
		return nil, errtext.Wrap(err, "cannot start gzip decompressor")
	}
	return d, nil
}

// gzipFrames decodes each frame with one gzip reader reset from frame to
// frame. A frame is one gzip member (gzip, pgzip) or several (pargzip's
// chunks, a member each): the reader reads members to the frame's end.
func gzipFrames() frameDecoder {
	var zr gzip.Reader
	return func(src io.Reader) (io.Reader, error) {
		if err := zr.Reset(src); err != nil {
			return nil, err
		}
		return &zr, nil
	}
}

// With fewer lanes than cores, each lane's pgzip reader reads ahead two
// 512 KiB blocks (pgzip's default is four of 1 MiB).
const (
	gzipReadBlock  = 512 << 10
	gzipReadBlocks = 2
)

// zstdWriter: every lane has its own encoder, so its memory is paid once
// per lane and the lanes are the parallelism: each encoder and decoder
// works synchronously (concurrency 1), with the window of the zstd command
// at the fast levels (zstdWindow). docs/benchmarks/archive/memory-1g.md has the
// figures.
func zstdWriter(_ context.Context, c *CompressionConfig, w io.Writer, _ logutil.Logger) (io.WriteCloser, error) {
	level := zstd.EncoderLevelFromZstd(c.Level)
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(level), zstd.WithWindowSize(zstdWindow(level)), zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false))
	if err != nil {
		return nil, errtext.Wrap(err, "cannot create zstd compressor")
	}
	return zw, nil
}

// The frames carry no content checksum (WithEncoderCRC(false)): every
// xbstream chunk's CRC32, which the tool computed on the data and the
// restore checks after decompression, the extractor's checks of each
// file's offsets and completeness, and on the split storage its part
// checksums already cover what it would; hashing each byte once more cost
// a sixth of a lane's CPU (docs/benchmarks/backup-cpu.md). Frames written
// with one are still checked when read.

// zstdWindow is the zstd command's window at levels 1 and 3 (windowLog 19
// and 21) instead of the library's 8 MiB, so a restore's decoders hold
// little history each; the higher levels keep the library's window.
func zstdWindow(level zstd.EncoderLevel) int {
	switch level {
	case zstd.SpeedFastest:
		return 512 << 10
	case zstd.SpeedDefault:
		return 2 << 20
	}
	return 8 << 20
}

func resetZstd(_ *CompressionConfig, comp io.WriteCloser, w io.Writer) (io.WriteCloser, bool, error) {
	zw, ok := comp.(*zstd.Encoder)
	if ok {
		zw.Reset(w)
	}
	return zw, ok, nil
}

func zstdReader(_ context.Context, _ *Manifest, _ CompressionConfig, r io.Reader, _ logutil.Logger) (io.ReadCloser, error) {
	d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, errtext.Wrap(err, "cannot start zstd decompressor")
	}
	return d.IOReadCloser(), nil
}

// zstdFrames decodes a lane's frames one after another with one decoder,
// synchronous (concurrency 1: no goroutines, nothing to close).
func zstdFrames() frameDecoder {
	var d *zstd.Decoder
	return func(src io.Reader) (io.Reader, error) {
		if d != nil {
			return d, d.Reset(src)
		}
		var err error
		d, err = zstd.NewReader(src, zstd.WithDecoderConcurrency(1))
		return d, err
	}
}

// lz4Frames decodes a lane's frames one after another with one reader
// (lz4/v4's default concurrency, 1: no goroutines, nothing to close).
func lz4Frames() frameDecoder {
	var r *lz4v4.Reader
	return func(src io.Reader) (io.Reader, error) {
		if r != nil {
			r.Reset(src)
			return r, nil
		}
		r = lz4v4.NewReader(src)
		return r, nil
	}
}

// lz4Writer writes lz4 frames as Vitess's own engines do since they moved
// to lz4/v4 (the level mapped the same way: lz4Level), with no content
// checksum, as zstd's frames (every chunk's CRC32 and the storage's part
// checksums cover it). pierrec/lz4 v2, which wrote them before, took
// --compression-level=1 as a hash-chain search of depth 1: a third of the
// fast compressor's speed for 2 % smaller output.
func lz4Writer(_ context.Context, c *CompressionConfig, w io.Writer, _ logutil.Logger) (io.WriteCloser, error) {
	lw := lz4v4.NewWriter(w)
	if err := lw.Apply(lz4v4.ConcurrencyOption(lz4Blocks(c)), lz4v4.CompressionLevelOption(lz4Level(c.Level)), lz4v4.ChecksumOption(false)); err != nil {
		return nil, errtext.Wrap(err, "cannot create lz4 compressor")
	}
	return lw, nil
}

// lz4Blocks is a lane's lz4 concurrency: its blocks in flight, one (no
// goroutines of its own) where the lanes keep the cores busy. lz4/v4 reads
// 0 as GOMAXPROCS goroutines.
func lz4Blocks(c *CompressionConfig) int {
	if c.serialInLane || c.Blocks < 1 {
		return 1
	}
	return c.Blocks
}

// lz4Level maps --compression-level onto lz4/v4's levels as Vitess's
// builtin compressor does (its lz4CompressionLevel is unexported), so that
// one flag means the same compression in both engines: 0 and 1 the fast
// compressor, 2 to 8 the hash-chain levels, anything else the deepest.
func lz4Level(level int) lz4v4.CompressionLevel {
	switch {
	case level < 0 || level >= 9:
		return lz4v4.Level9
	case level <= 1:
		return lz4v4.Fast
	default:
		return lz4v4.Level1 << (level - 1)
	}
}

// resetLz4: lz4/v4's Reset keeps the writer's options. A writer with
// goroutines of its own is not reused: Reset after Close waits forever on
// the goroutine that Close ended (v4.1.27).
func resetLz4(c *CompressionConfig, comp io.WriteCloser, w io.Writer) (io.WriteCloser, bool, error) {
	lw, ok := comp.(*lz4v4.Writer)
	if ok = ok && lz4Blocks(c) == 1; ok {
		lw.Reset(w)
	}
	return lw, ok, nil
}

// lz4Reader reads lz4/v4's frames and v2's, which backups before it hold
// (the same frame format; TestLz4ReadsEveryLevel): v2's amd64 assembly
// decoder fails on blocks it compressed itself at levels above 0 ("invalid
// source or destination buffer too short") when built with Go 1.26 on some
// CPUs.
func lz4Reader(_ context.Context, _ *Manifest, _ CompressionConfig, r io.Reader, _ logutil.Logger) (io.ReadCloser, error) {
	return io.NopCloser(lz4v4.NewReader(r)), nil
}

func externalWriter(ctx context.Context, c *CompressionConfig, w io.Writer, logger logutil.Logger) (io.WriteCloser, error) {
	return startExternal(ctx, "compressor", c.ExternalCompressor, nil, w, logger)
}

// externalReader runs, as Vitess does, the local --external-decompressor;
// the MANIFEST's command only when the operator allows it.
func externalReader(ctx context.Context, m *Manifest, local CompressionConfig, r io.Reader, logger logutil.Logger) (io.ReadCloser, error) {
	cmd := local.ExternalDecompressor
	if cmd == "" && local.UseManifestDecompressor {
		cmd = m.ExternalDecompressor
	}
	if cmd == "" {
		return nil, unreadable.Error(errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup was compressed with an external command: restore needs "+
			"--external-decompressor (or --external-decompressor-use-manifest)"))
	}
	dec, err := startExternal(ctx, "decompressor", cmd, r, nil, logger)
	if err != nil {
		return nil, unreadable.Error(err) // this host's command, not the backup
	}
	return dec, nil
}
