package fifobackupengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/google/shlex"
	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
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

	// serialInLane: each lane's codec runs in the lane's goroutine alone
	// (forLanes): gzip (pgzip, pargzip) as one sequential stream, lz4
	// without goroutines of its own.
	serialInLane bool
}

// forLanes is the configuration for a backup of lanes lanes. With as many
// lanes as cores, the lanes alone keep every core busy: a gzip engine
// (pgzip, pargzip) then compresses each lane as one sequential gzip stream
// (klauspost/compress/gzip), whose Reset at each frame reuses all of its
// state, and lz4 compresses each lane's blocks one after another. The
// codecs' own goroutines would add no speed, only memory and hand-offs: a
// new gzip member at each frame drops pgzip's pooled block buffers (the
// figures at 64 lanes: docs/benchmarks/archive/memory-64.md).
// The output is the same format, read by the same decompressor.
func (c CompressionConfig) forLanes(lanes int) CompressionConfig {
	c.serialInLane = c.Enabled && codecs[c.Engine].threaded && lanesKeepCoresBusy(lanes)
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
	if _, ok := codecs[c.Engine]; !ok {
		return errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "invalid value %q for --compression-engine-name: allowed values are %s", c.Engine,
			strings.Join(codecNames(), ", "))
	}
	if c.Engine != mysqlctl.ExternalCompressor {
		return nil
	}
	if c.ExternalCompressor == "" {
		builtin := slices.DeleteFunc(codecNames(), func(n string) bool { return n == mysqlctl.ExternalCompressor })
		return errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "invalid value %q for --compression-engine-name: allowed values are %s, or external with "+
			"--external-compressor set", c.Engine, strings.Join(builtin, ", "))
	}
	if c.ExternalExtension == "" {
		return errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "flag --external-compressor-extension not provided when using an external compressor: "+
			"allowed values are a file extension such as .zst")
	}
	if _, err := shlex.Split(c.ExternalCompressor); err != nil {
		return errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "invalid value %q for --external-compressor: allowed values are a command split like a "+
			"shell would (balanced quotes, no trailing backslash); %v", c.ExternalCompressor, err)
	}
	return nil
}

// Extension is the lane file suffix for this configuration.
func (c *CompressionConfig) Extension() string {
	if !c.Enabled {
		return ""
	}
	if c.Engine == mysqlctl.ExternalCompressor {
		return c.ExternalExtension
	}
	return codecs[c.Engine].extension
}

// LaneCompressor wraps w in the compressor a lane of a backup of lanes lanes
// writes with (forLanes): what the benchmark's ceilings compress with, so
// that they measure the engine's own codec settings. Closing the result
// flushes the compressor, not w.
func (c CompressionConfig) LaneCompressor(lanes int, w io.Writer) (io.WriteCloser, error) {
	lc := c.forLanes(lanes)
	return lc.newCompressor(context.Background(), w, logutil.NewMemoryLogger())
}

// newCompressor wraps w in this configuration's compressor. Closing the
// result flushes the compressor, not w.
func (c *CompressionConfig) newCompressor(ctx context.Context, w io.Writer, logger logutil.Logger) (io.WriteCloser, error) {
	if !c.Enabled {
		return nopWriteCloser{w}, nil
	}
	cd, ok := codecs[c.Engine]
	if !ok {
		return nil, errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "unsupported compression engine %q", c.Engine)
	}
	return cd.writer(ctx, c, w, logger)
}

// seekable reports whether a lane written with this configuration can be
// read from any frame start.
func (c *CompressionConfig) seekable() bool {
	return !c.Enabled || codecs[c.Engine].seekable
}

// reuse returns the compressor of a new frame writing to w, given comp,
// whose frame has ended (closed): comp itself reset where its codec can, a
// new one otherwise.
func (c *CompressionConfig) reuse(ctx context.Context, comp io.WriteCloser, w io.Writer, logger logutil.Logger) (io.WriteCloser, error) {
	if _, ok := comp.(nopWriteCloser); ok {
		return nopWriteCloser{w}, nil
	}
	if reset := codecs[c.Engine].reset; reset != nil {
		if comp, ok, err := reset(c, comp, w); ok || err != nil {
			return comp, err
		}
	}
	return c.newCompressor(ctx, w, logger)
}

// newDecompressor wraps r in the decompressor for a backup written with m.
func newDecompressor(ctx context.Context, m *Manifest, local CompressionConfig, r io.Reader, logger logutil.Logger) (io.ReadCloser, error) {
	if !m.Compressed {
		return io.NopCloser(r), nil
	}
	cd, ok := codecs[m.CompressionEngine]
	if !ok {
		return nil, errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "unsupported compression engine %q in MANIFEST", m.CompressionEngine)
	}
	return cd.reader(ctx, m, local, r, logger)
}

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
		return nil, errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "cannot split external %s command %q", what, command)
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		return nil, errtext.Wrapf(err, "external %s %q not found", what, args[0])
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
		return nil, errtext.Wrapf(err, "cannot start external %s", what)
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

func compressionName(c *CompressionConfig) string {
	if !c.Enabled {
		return "none"
	}
	if c.Engine == mysqlctl.ExternalCompressor {
		return "external (" + c.ExternalExtension + ")"
	}
	return fmt.Sprintf("%s level %d", c.Engine, c.Level)
}
