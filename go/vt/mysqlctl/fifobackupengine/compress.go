package fifobackupengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strconv"

	"github.com/google/shlex"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/klauspost/pgzip"
	"github.com/pierrec/lz4"
	"github.com/planetscale/pargzip"
	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/vterrors"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// CompressionConfig mirrors Vitess's compression flags
// (--backup-storage-compress, --compression-engine-name, --compression-level,
// --external-compressor[-extension], --external-decompressor[-use-manifest],
// --manifest-external-decompressor, --backup-storage-block-size,
// --backup-storage-number-blocks) so existing flag files keep working. Each lane
// gets its own compressor built with the same libraries Vitess uses.
type CompressionConfig struct {
	Enabled bool
	Engine  string // pgzip | pargzip | zstd | lz4 | external
	Level   int

	ExternalCompressor string
	ExternalExtension  string
	// ExternalDecompressor is the restore-time command (--external-decompressor).
	ExternalDecompressor string
	// ManifestDecompressor is stored in the MANIFEST
	// (--manifest-external-decompressor); it is only run at restore when
	// UseManifestDecompressor is set, as in Vitess.
	ManifestDecompressor    string
	UseManifestDecompressor bool

	BlockSize int // pgzip/pargzip block size
	Blocks    int // pgzip/pargzip/lz4 blocks in flight per lane

	// gzipInLane: each lane's gzip (pgzip, pargzip) is one sequential
	// stream in the lane's goroutine (forLanes).
	gzipInLane bool
}

// forLanes is the configuration for a backup of lanes lanes. With as many
// lanes as cores, the lanes alone keep every core busy: a gzip engine
// (pgzip, pargzip) then compresses each lane as one sequential gzip stream
// (klauspost/compress/gzip), whose Reset at each frame reuses all of its
// state. pgzip's parallel blocks would add no speed, only memory: a new
// gzip member at each frame drops pgzip's pooled block buffers, and at 64
// lanes a backup grew by 489 MiB against zstd's 162 (docs/benchmarks-memory-64.md).
// The output is the same gzip format, read by the same decompressor.
func (c CompressionConfig) forLanes(lanes int) CompressionConfig {
	c.gzipInLane = c.Enabled && (c.Engine == mysqlctl.PgzipCompressor || c.Engine == mysqlctl.PargzipCompressor) && lanesKeepCoresBusy(lanes)
	return c
}

// lanesKeepCoresBusy: with as many lanes as cores or more, the lanes alone
// are the parallelism, and a codec's own goroutines add only memory.
func lanesKeepCoresBusy(lanes int) bool { return lanes >= runtime.GOMAXPROCS(0) }

// CompressionFromFlags reads Vitess's compression flags: the exported
// variables where Vitess has them, fs (the command's parsed flag set; nil:
// the defaults) for the unexported ones.
func CompressionFromFlags(fs *pflag.FlagSet) CompressionConfig {
	lookupFlag := func(name string) *pflag.Flag {
		if fs == nil {
			return nil
		}
		return fs.Lookup(name)
	}
	c := CompressionConfig{
		Enabled:                 true,
		Engine:                  mysqlctl.CompressionEngineName,
		Level:                   1,
		ExternalCompressor:      mysqlctl.ExternalCompressorCmd,
		ExternalExtension:       mysqlctl.ExternalCompressorExt,
		ExternalDecompressor:    mysqlctl.ExternalDecompressorCmd,
		ManifestDecompressor:    mysqlctl.ManifestExternalDecompressorCmd,
		UseManifestDecompressor: mysqlctl.ExternalDecompressorUseManifest,
		BlockSize:               250000,
		Blocks:                  2,
	}
	if f := lookupFlag("backup-storage-compress"); f != nil {
		c.Enabled, _ = strconv.ParseBool(f.Value.String())
	}
	if f := lookupFlag("compression-level"); f != nil {
		if v, err := strconv.Atoi(f.Value.String()); err == nil {
			c.Level = v
		}
	}
	if f := lookupFlag("backup-storage-block-size"); f != nil {
		if v, err := strconv.Atoi(f.Value.String()); err == nil && v > 0 {
			c.BlockSize = v
		}
	}
	if f := lookupFlag("backup-storage-number-blocks"); f != nil {
		if v, err := strconv.Atoi(f.Value.String()); err == nil && v > 0 {
			c.Blocks = v
		}
	}
	// Vitess selects the external compressor by setting its command; the
	// engine name may still say the default.
	if c.ExternalCompressor != "" {
		c.Engine = mysqlctl.ExternalCompressor
	}
	return c
}

// Validate names the Vitess flag that is wrong.
func (c *CompressionConfig) Validate() error {
	if !c.Enabled {
		return nil
	}
	switch c.Engine {
	case mysqlctl.PgzipCompressor, mysqlctl.PargzipCompressor, mysqlctl.ZstdCompressor, mysqlctl.Lz4Compressor:
	case mysqlctl.ExternalCompressor:
		if c.ExternalCompressor == "" {
			return vterrors.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "invalid value %q for --compression-engine-name: allowed values are pgzip, pargzip, zstd, lz4, or external with --external-compressor set", c.Engine)
		}
		if c.ExternalExtension == "" {
			return vterrors.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "flag --external-compressor-extension not provided when using an external compressor: allowed values are a file extension such as .zst")
		}
		if _, err := shlex.Split(c.ExternalCompressor); err != nil {
			return vterrors.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "invalid value %q for --external-compressor: allowed values are a command split like a shell would (balanced quotes, no trailing backslash); %v", c.ExternalCompressor, err)
		}
	default:
		return vterrors.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "invalid value %q for --compression-engine-name: allowed values are pgzip, pargzip, zstd, lz4, external", c.Engine)
	}
	return nil
}

// Extension is the lane file suffix for this configuration.
func (c *CompressionConfig) Extension() string {
	if !c.Enabled {
		return ""
	}
	switch c.Engine {
	case mysqlctl.PgzipCompressor, mysqlctl.PargzipCompressor:
		return ".gz"
	case mysqlctl.ZstdCompressor:
		return ".zst"
	case mysqlctl.Lz4Compressor:
		return ".lz4"
	case mysqlctl.ExternalCompressor:
		return c.ExternalExtension
	}
	return ""
}

// newCompressor wraps w in this configuration's compressor. Closing the
// result flushes the compressor, not w.
func (c *CompressionConfig) newCompressor(ctx context.Context, w io.Writer, logger logutil.Logger) (io.WriteCloser, error) {
	if !c.Enabled {
		return nopWriteCloser{w}, nil
	}
	if c.gzipInLane {
		gz, err := gzip.NewWriterLevel(w, c.Level)
		if err != nil {
			return nil, vterrors.Wrapf(err, "cannot create %s compressor", c.Engine)
		}
		return gz, nil
	}
	switch c.Engine {
	case mysqlctl.PgzipCompressor:
		gz, err := pgzip.NewWriterLevel(w, c.Level)
		if err != nil {
			return nil, vterrors.Wrap(err, "cannot create pgzip compressor")
		}
		if err := gz.SetConcurrency(c.BlockSize, c.Blocks); err != nil {
			return nil, vterrors.Wrap(err, "cannot configure pgzip compressor")
		}
		return gz, nil
	case mysqlctl.PargzipCompressor:
		gz := pargzip.NewWriter(w)
		gz.ChunkSize = c.BlockSize
		gz.Parallel = c.Blocks
		gz.CompressionLevel = c.Level
		return gz, nil
	case mysqlctl.Lz4Compressor:
		lw := lz4.NewWriter(w).WithConcurrency(c.Blocks)
		lw.Header = lz4.Header{CompressionLevel: c.Level}
		return lw, nil
	case mysqlctl.ZstdCompressor:
		level := zstd.EncoderLevelFromZstd(c.Level)
		zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(level), zstd.WithWindowSize(zstdWindow(level)), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, vterrors.Wrap(err, "cannot create zstd compressor")
		}
		return zw, nil
	case mysqlctl.ExternalCompressor:
		return startExternal(ctx, "compressor", c.ExternalCompressor, nil, w, logger)
	}
	return nil, vterrors.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "unsupported compression engine %q", c.Engine)
}

// seekable reports whether a lane written with this configuration can be
// read from any frame start: every built-in codec's reader takes a frame,
// or frames one after another, on its own; an external command's output
// cannot be cut.
func (c *CompressionConfig) seekable() bool {
	return !c.Enabled || c.Engine != mysqlctl.ExternalCompressor
}

// reuse returns the compressor of a new frame writing to w, given comp,
// whose frame has ended (closed): comp itself reset where the library can
// (zstd, gzip; pgzip, whose Reset restores its default concurrency, set
// again), a new one otherwise (lz4's Reset clears its level; pargzip has
// none). A new pgzip writer per frame would start with empty pools of blocks
// and flate writers: at 64 lanes and 1 MiB frames that took 2.2 GiB where
// one writer reset takes 0.3 GiB.
func (c *CompressionConfig) reuse(ctx context.Context, comp io.WriteCloser, w io.Writer, logger logutil.Logger) (io.WriteCloser, error) {
	switch comp := comp.(type) {
	case nopWriteCloser:
		return nopWriteCloser{w}, nil
	case *zstd.Encoder:
		comp.Reset(w)
		return comp, nil
	case *gzip.Writer:
		comp.Reset(w)
		return comp, nil
	case *pgzip.Writer:
		comp.Reset(w)
		if err := comp.SetConcurrency(c.BlockSize, c.Blocks); err != nil {
			return nil, vterrors.Wrap(err, "cannot configure pgzip compressor")
		}
		return comp, nil
	}
	return c.newCompressor(ctx, w, logger)
}

// newDecompressor wraps r in the decompressor for a backup written with m.
func newDecompressor(ctx context.Context, m *Manifest, local CompressionConfig, r io.Reader, logger logutil.Logger) (io.ReadCloser, error) {
	if !m.Compressed {
		return io.NopCloser(r), nil
	}
	switch m.CompressionEngine {
	case mysqlctl.PgzipCompressor, mysqlctl.PargzipCompressor:
		// pargzip only compresses; its output is plain gzip. With as many
		// lanes as cores each lane reads it as one sequential stream in its
		// own goroutine: pgzip's reader allocates its read-ahead blocks again
		// at every gzip member (every 1 MiB frame), and at 64 lanes a 4 GiB
		// restore grew by 352 MiB (docs/benchmarks-memory-4g.md).
		if lanesKeepCoresBusy(len(m.Lanes)) {
			d, err := gzip.NewReader(r)
			if err != nil {
				return nil, vterrors.Wrap(err, "cannot start gzip decompressor")
			}
			return d, nil
		}
		d, err := pgzip.NewReaderN(r, gzipReadBlock, gzipReadBlocks)
		if err != nil {
			return nil, vterrors.Wrap(err, "cannot start gzip decompressor")
		}
		return d, nil
	case mysqlctl.Lz4Compressor:
		return io.NopCloser(lz4.NewReader(r)), nil
	case mysqlctl.ZstdCompressor:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, vterrors.Wrap(err, "cannot start zstd decompressor")
		}
		return d.IOReadCloser(), nil
	case mysqlctl.ExternalCompressor:
		// As in Vitess: the local flag wins; the MANIFEST's command only runs
		// when the operator allows it.
		cmd := local.ExternalDecompressor
		if cmd == "" && local.UseManifestDecompressor {
			cmd = m.ExternalDecompressor
		}
		if cmd == "" {
			return nil, vterrors.Errorf(vtrpcpb.Code_FAILED_PRECONDITION, "backup was compressed with an external command: restore needs --external-decompressor (or --external-decompressor-use-manifest)")
		}
		return startExternal(ctx, "decompressor", cmd, r, nil, logger)
	}
	return nil, vterrors.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "unsupported compression engine %q in MANIFEST", m.CompressionEngine)
}

// Every lane has its own compressor, so their memory is paid once per lane
// (up to 64), and the lanes are the parallelism: each zstd encoder and
// decoder works synchronously (concurrency 1). The library's default runs a
// block ahead per lane in goroutines sized by the host's CPU count (up to 4
// decoders per lane): 0.9 MiB more per encoder, and no faster with several
// lanes (measured: 1.3-1.5x the throughput at 1-8 lanes, 2.03 -> 1.61 MiB
// per encoder; decoders 1.29 -> 1.07 MiB at GOMAXPROCS=16). The window of the fast zstd levels is that of the zstd command
// at levels 1 and 3 (windowLog 19 and 21) instead of the library's 8 MiB,
// which takes ~2 MiB per lane instead of ~9 and lets a restore's decoders
// hold 0.5-2 MiB of history each; the higher levels keep the library's window.
func zstdWindow(level zstd.EncoderLevel) int {
	switch level {
	case zstd.SpeedFastest:
		return 512 << 10
	case zstd.SpeedDefault:
		return 2 << 20
	}
	return 8 << 20
}

// With fewer lanes than cores, each lane's pgzip reader reads ahead two
// 512 KiB blocks (pgzip's default is four of 1 MiB).
const (
	gzipReadBlock  = 512 << 10
	gzipReadBlocks = 2
)

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// external runs a compressor or decompressor command (split like a shell,
// never through one) with its stderr sent to the logger.
type external struct {
	what   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *lineLogger
}

func startExternal(ctx context.Context, what, command string, in io.Reader, out io.Writer, logger logutil.Logger) (*external, error) {
	args, err := shlex.Split(command)
	if err != nil || len(args) == 0 {
		return nil, vterrors.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "cannot split external %s command %q", what, command)
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return nil, vterrors.Wrapf(err, "external %s %q not found", what, args[0])
	}
	e := &external{what: what, cmd: newCommand(ctx, path, args[1:]...)}
	if in != nil {
		e.cmd.Stdin = in
		if e.stdout, err = e.cmd.StdoutPipe(); err != nil {
			return nil, err
		}
	} else {
		e.cmd.Stdout = out
		if e.stdin, err = e.cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	e.stderr = &lineLogger{logger: logger, prefix: "external " + what + " stderr: "}
	e.cmd.Stderr = e.stderr
	if err := e.cmd.Start(); err != nil {
		return nil, vterrors.Wrapf(err, "cannot start external %s", what)
	}
	return e, nil
}

func (e *external) Write(p []byte) (int, error) { return e.stdin.Write(p) }
func (e *external) Read(p []byte) (int, error)  { return e.stdout.Read(p) }

func (e *external) Close() error {
	if e.stdin != nil {
		if err := e.stdin.Close(); err != nil {
			return err
		}
	}
	err := e.cmd.Wait()
	e.stderr.flush()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return fmt.Errorf("external %s %s failed: %v", e.what, e.cmd.Path, err)
		}
		return err
	}
	return nil
}
