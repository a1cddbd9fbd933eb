package fifobackupengine

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/shlex"
	"github.com/spf13/pflag"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/backuphandle"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// Source modes: where the backup tool's xbstream comes from.
const (
	SourceAuto   = "auto"
	SourceFIFO   = "fifo"
	SourceStdout = "stdout"
)

// Tool flavors.
const (
	FlavorXtrabackup  = "xtrabackup"
	FlavorMariabackup = "mariabackup"
)

const maxLanes = 64

// Limits of the size flags. Percona's --read-buffer-size is at least 128KiB
// in 64KiB steps (xtrabackup.cc, read_buffer_size: min 2*UNIV_PAGE_SIZE_MAX,
// block UNIV_PAGE_SIZE_MAX), and a chunk is as large as the read buffer
// (xbstream_write.cc, xb_stream_write_data): the cap is the largest chunk the
// splitter and the extractor take, so no backup can hold a chunk its restore
// refuses.
const (
	minReadBufferSize  = 128 << 10
	readBufferSizeStep = 64 << 10
	maxReadBufferSize  = xbstream.DefaultMaxChunkSize
	maxUseMemory       = 1 << 50 // 1PiB
)

// The allowed values of each flag, as its errors name them.
const (
	allowedLanes          = "0 (auto) or 1..64"
	allowedFIFOStreams    = "0 (as many as --fifo-backup-lanes) or 1..64"
	allowedSource         = "auto, fifo, stdout"
	allowedFlavor         = "xtrabackup, mariabackup (or empty to detect)"
	allowedParallel       = "1..256"
	allowedReadBufferSize = "0 (tool default, 10MiB) or 128KiB..64MiB in steps of 64KiB"
	allowedFIFOTimeout    = "2s..1h"
	allowedUseMemory      = "auto (twice the redo to apply, 128MiB..4GiB, at most half of what this host or its cgroup has available), 0 (tool default) or a size up to 1PiB"
	allowedProgress       = "0 (off) or a positive duration"
	allowedToolFlags      = "flags split like a shell would (balanced quotes, no trailing backslash)"
	allowedExternalDirs   = "absolute, clean directory paths, comma-separated"
	allowedFullInterval   = "0 (off: every backup is full) or 1m..8760h"
	allowedBase           = "full, latest"
	allowedMaxChainLength = "1..1000"
)

// Bases of an incremental backup (--fifo-backup-incremental-base).
const (
	BaseFull   = "full"   // differential: every delta on the full (the default)
	BaseLatest = "latest" // a chain: each delta on the one before
)

// Config is everything the engine reads from its flags. Tests build one
// directly; the registered engine reads the flags at the start of each
// backup or restore.
type Config struct {
	Lanes          int
	FIFOStreams    int // the tool's --fifo-streams; 0: as many as Lanes
	Source         string
	ToolPath       string
	ToolFlavor     string
	User           string
	BackupFlags    string
	PrepareFlags   string
	Parallel       int
	ReadBufferSize int64
	FIFODir        string
	FIFOTimeout    time.Duration
	// UseMemory is the prepare's --use-memory: UseMemoryAuto sizes it to
	// the host when the prepare starts (prepareMemory), 0 leaves the
	// tool's default.
	UseMemory int64
	Progress  time.Duration
	// ExternalTablespaceDirs are where a restore may put tablespaces that
	// lived outside the data directory (DATA DIRECTORY tables, MySQL's
	// innodb_directories are added from my.cnf).
	ExternalTablespaceDirs []string

	// Incremental backups (incremental.go): a delta is taken unless a full
	// is due every FullInterval (0: every backup is full), on the latest
	// backup of the chain or on its full (IncrementalBase), at most
	// MaxChainLength deltas after a full.
	FullInterval    time.Duration
	IncrementalBase string
	MaxChainLength  int

	// Compression, from Vitess's own flags (see compress.go).
	Compression CompressionConfig
}

// defaultFlagConfig is the flags' defaults.
func defaultFlagConfig() Config {
	return Config{
		Source:      SourceAuto,
		Parallel:    4,
		FIFOTimeout: 60 * time.Second,
		UseMemory:   UseMemoryAuto,
		Progress:    10 * time.Second,

		// Differential: a restore applies one delta whatever the chain's
		// length (each delta's prepare is most of what a chain adds: full +
		// 6 deltas restored in 1.83x the full alone, docs/incremental.md).
		IncrementalBase: BaseFull,
		MaxChainLength:  6,
	}
}

var flagConfig = defaultFlagConfig()

var (
	// commandFlags is the flag set RegisterFlags declared the engine's flags
	// in: the command's own, where Vitess's compression flags (whose
	// variables Vitess keeps unexported) are too.
	commandFlagsMu sync.Mutex
	commandFlags   *pflag.FlagSet
)

// RegisterFlags declares the engine's flags in fs, the command's own flag set
// (go/cmd/plugin.Install does it for Vitess's binaries; it is the only place
// they are declared). The engine reads Vitess's compression flags from the
// same set. Registering sets the defaults, so every command that declares the
// flags starts from them.
func RegisterFlags(fs *pflag.FlagSet) {
	commandFlagsMu.Lock()
	defer commandFlagsMu.Unlock()
	commandFlags = fs
	c, d := &flagConfig, defaultFlagConfig()
	integer := func(p *int, name string, def int, allowed, usage string) {
		*p = def
		fs.Var(flagvalue.Int{P: p, Allowed: allowed}, name, usage)
		flagvalue.Document(name, allowed)
	}
	duration := func(p *time.Duration, name string, def time.Duration, allowed, usage string) {
		*p = def
		fs.Var(flagvalue.Duration{P: p, Allowed: allowed}, name, usage)
		flagvalue.Document(name, allowed)
	}
	size := func(p *int64, name string, def int64, allowed, usage string) {
		*p = def
		fs.Var(flagvalue.Size{P: p, Allowed: allowed}, name, usage)
		flagvalue.Document(name, allowed)
	}
	// What Validate checks of the string flags, as it says it; Vitess's
	// compression engine as the codec table has it.
	for name, allowed := range map[string]string{
		"fifo-backup-source":                   allowedSource,
		"fifo-backup-tool-flavor":              allowedFlavor,
		"fifo-backup-backup-flags":             allowedToolFlags,
		"fifo-backup-prepare-flags":            allowedToolFlags,
		"fifo-backup-incremental-base":         allowedBase,
		"fifo-backup-external-tablespace-dirs": allowedExternalDirs,
		"compression-engine-name":              strings.Join(codecNames(), ", ") + " (external needs --external-compressor)",
	} {
		flagvalue.Document(name, allowed)
	}
	integer(&c.Lanes, "fifo-backup-lanes", d.Lanes, allowedLanes, "number of parallel lanes (compress, then store) a fifo backup is carried through, "+
		"1..64; 0 (auto) picks one per CPU, at most 64 and at most what the backup storage can write at once (the split storage: the parts its spool "+
		"directory has free space for). The tool's stream is dealt to them by bytes, whatever the source.")
	integer(&c.FIFOStreams, "fifo-backup-fifo-streams", d.FIFOStreams, allowedFIFOStreams, "number of FIFO streams Percona XtraBackup writes (its "+
		"--fifo-streams) with source fifo; 0 uses as many as --fifo-backup-lanes. Their chunks are dealt to the lanes by bytes, so the two need not match.")
	fs.StringVar(&c.Source, "fifo-backup-source", d.Source, "where the backup stream comes from: auto|fifo|stdout. fifo uses Percona XtraBackup's "+
		"--fifo-streams (>= 8.0.33); stdout splits the tool's single stream into lanes at chunk boundaries; auto picks fifo when the tool supports it.")
	fs.StringVar(&c.ToolPath, "fifo-backup-tool-path", d.ToolPath, "path of the backup tool (xtrabackup or mariabackup); empty looks up xtrabackup, "+
		"then mariabackup, in PATH.")
	fs.StringVar(&c.ToolFlavor, "fifo-backup-tool-flavor", d.ToolFlavor, "flavor of the backup tool: xtrabackup|mariabackup; empty detects it from "+
		"the tool's --version.")
	fs.StringVar(&c.User, "fifo-backup-user", d.User, "MySQL user the backup tool connects as; empty uses the tablet's DBA user (--db-dba-user).")
	fs.StringVar(&c.BackupFlags, "fifo-backup-backup-flags", d.BackupFlags, "extra flags for the tool's --backup, split like a shell would (never run "+
		"through a shell).")
	fs.StringVar(&c.PrepareFlags, "fifo-backup-prepare-flags", d.PrepareFlags, "extra flags for the tool's --prepare, split like a shell would (never "+
		"run through a shell).")
	integer(&c.Parallel, "fifo-backup-parallel", d.Parallel, allowedParallel, "the tool's copy threads (--parallel), 1..256.")
	size(&c.ReadBufferSize, "fifo-backup-read-buffer-size", d.ReadBufferSize, allowedReadBufferSize, "the tool's chunk size (Percona's "+
		"--read-buffer-size, e.g. 8MiB); 0 leaves the tool's default. mariabackup has no such setting: asking for it there is an error.")
	fs.StringVar(&c.FIFODir, "fifo-backup-fifo-dir", d.FIFODir, "directory for the tool's FIFO streams (source fifo); empty uses a fresh directory "+
		"under the tablet's tmp dir.")
	duration(&c.FIFOTimeout, "fifo-backup-fifo-timeout", d.FIFOTimeout, allowedFIFOTimeout, "how long the tool waits for the engine to open each of "+
		"its FIFOs (its --fifo-timeout: that many tries, one a second); 2s..1h. The engine waits for the FIFOs to appear as long as the tool runs.")
	c.UseMemory = d.UseMemory
	fs.Var(flagvalue.AutoSize{P: &c.UseMemory, Allowed: allowedUseMemory}, "fifo-backup-use-memory", "memory for the tool's --prepare (--use-memory): "+
		"auto takes twice the redo the prepare applies (from the MANIFEST; 512MiB where it is not known), 128MiB..4GiB, and at most half of what "+
		"this host, or the cgroup the process runs in, has available when the prepare starts (the tool's default when under 256MiB is); or a "+
		"size, e.g. 1GiB; 0 leaves the tool's default.")
	flagvalue.Document("fifo-backup-use-memory", allowedUseMemory)
	duration(&c.Progress, "fifo-backup-progress-interval", d.Progress, allowedProgress, "how often a running backup or restore logs bytes done, rate "+
		"and ETA; 0 disables.")
	duration(&c.FullInterval, "fifo-backup-full-interval", d.FullInterval, allowedFullInterval, "take incremental backups (the InnoDB pages changed "+
		"since a base backup) and a full one when the last full is older than this, e.g. 168h; 0 (the default) takes every backup full. A full is also "+
		"taken, and the log says why, when no usable base exists. Needs the split backup storage, which keeps a base until its last delta is removed.")
	fs.StringVar(&c.IncrementalBase, "fifo-backup-incremental-base", d.IncrementalBase, "what an incremental backup is taken against: full (the "+
		"default, differential: each delta holds every change since the last full and a restore applies one) or latest (the newest backup of the "+
		"chain: smaller deltas, but a restore applies them all, one prepare each).")
	integer(&c.MaxChainLength, "fifo-backup-max-chain-length", d.MaxChainLength, allowedMaxChainLength, "most incremental backups after a full (a chain's "+
		"deltas, or the differentials on one full); the next backup is full. 1..1000.")
	fs.StringSliceVar(&c.ExternalTablespaceDirs, "fifo-backup-external-tablespace-dirs", d.ExternalTablespaceDirs, "directories a restore may write "+
		"tablespaces to that lived outside the data directory (tables with DATA DIRECTORY, MySQL 8 remote tablespaces), besides MySQL's "+
		"innodb_directories from my.cnf; comma-separated absolute paths. A restored tablespace's path comes from the backup, so any other is refused.")
}

// ValidateFlags checks the flags declared in fs (by RegisterFlags) once they
// are parsed, so a bad value stops the process at startup naming the flag and
// its allowed values. The engine's own flags are checked whatever the default
// engine is (a request may pick any engine); Vitess's compression flags, as
// the engine reads them, only where fifo is the default engine
// (--backup-engine-implementation): they are stock flags, and elsewhere a
// stock binary starts with them. A fifo backup checks them again when it
// begins.
func ValidateFlags(fs *pflag.FlagSet) error {
	c := currentConfig()
	if err := c.validateOwn(); err != nil {
		return err
	}
	if !IsDefaultEngine(fs) {
		return nil
	}
	return c.Compression.Validate()
}

// IsDefaultEngine reports whether fs's --backup-engine-implementation is this
// engine.
func IsDefaultEngine(fs *pflag.FlagSet) bool {
	f := fs.Lookup("backup-engine-implementation")
	return f != nil && f.Value.String() == engineName
}

// Validate checks every field, the compression included, and names the flag
// and the allowed values.
func (c *Config) Validate() error {
	if err := c.validateOwn(); err != nil {
		return err
	}
	return c.Compression.Validate()
}

// validateOwn checks the fields set by the engine's own flags.
func (c *Config) validateOwn() error {
	bad := func(flag, value, allowed string) error {
		return errtext.Errorf(vtrpcpb.Code_INVALID_ARGUMENT, "invalid value %q for --%s: allowed values are %s", value, flag, allowed)
	}
	if c.Lanes < 0 || c.Lanes > maxLanes {
		return bad("fifo-backup-lanes", strconv.Itoa(c.Lanes), allowedLanes)
	}
	switch c.Source {
	case SourceAuto, SourceFIFO, SourceStdout:
	default:
		return bad("fifo-backup-source", c.Source, allowedSource)
	}
	switch c.ToolFlavor {
	case "", FlavorXtrabackup, FlavorMariabackup:
	default:
		return bad("fifo-backup-tool-flavor", c.ToolFlavor, allowedFlavor)
	}
	if c.Parallel < 1 || c.Parallel > 256 {
		return bad("fifo-backup-parallel", strconv.Itoa(c.Parallel), allowedParallel)
	}
	if c.FIFOStreams < 0 || c.FIFOStreams > maxLanes {
		return bad("fifo-backup-fifo-streams", strconv.Itoa(c.FIFOStreams), allowedFIFOStreams)
	}
	if c.ReadBufferSize != 0 && (c.ReadBufferSize < minReadBufferSize || c.ReadBufferSize > maxReadBufferSize || c.ReadBufferSize%readBufferSizeStep != 0) {
		return bad("fifo-backup-read-buffer-size", flagvalue.FormatSize(c.ReadBufferSize), allowedReadBufferSize)
	}
	if c.ReadBufferSize > 0 && c.ToolFlavor == FlavorMariabackup {
		return bad("fifo-backup-read-buffer-size", flagvalue.FormatSize(c.ReadBufferSize),
			"0 with --fifo-backup-tool-flavor=mariabackup, which has no chunk size setting")
	}
	if c.ToolFlavor == FlavorMariabackup && c.Source == SourceFIFO {
		return bad("fifo-backup-source", c.Source,
			"auto, stdout with --fifo-backup-tool-flavor=mariabackup (fifo needs Percona XtraBackup >= 8.0.33)")
	}
	// Percona tries each FIFO once a second, --fifo-timeout times
	// (open_fifo_for_write_with_timeout): with 1 it tries once, at once, before
	// any reader can have seen the FIFO appear.
	if c.FIFOTimeout < 2*time.Second || c.FIFOTimeout > time.Hour {
		return bad("fifo-backup-fifo-timeout", c.FIFOTimeout.String(), allowedFIFOTimeout)
	}
	if (c.UseMemory < 0 && c.UseMemory != UseMemoryAuto) || c.UseMemory > maxUseMemory {
		return bad("fifo-backup-use-memory", flagvalue.FormatSize(c.UseMemory), allowedUseMemory)
	}
	if c.Progress < 0 {
		return bad("fifo-backup-progress-interval", c.Progress.String(), allowedProgress)
	}
	if c.FullInterval != 0 && (c.FullInterval < time.Minute || c.FullInterval > 8760*time.Hour) {
		return bad("fifo-backup-full-interval", c.FullInterval.String(), allowedFullInterval)
	}
	switch c.IncrementalBase {
	case BaseLatest, BaseFull:
	default:
		return bad("fifo-backup-incremental-base", c.IncrementalBase, allowedBase)
	}
	if c.MaxChainLength < 1 || c.MaxChainLength > 1000 {
		return bad("fifo-backup-max-chain-length", strconv.Itoa(c.MaxChainLength), allowedMaxChainLength)
	}
	backupFlags, err := shlex.Split(c.BackupFlags)
	if err != nil {
		return bad("fifo-backup-backup-flags", RedactedFlags(c.BackupFlags), fmt.Sprintf("%s; %v", allowedToolFlags, err))
	}
	if err := checkToolFlags("fifo-backup-backup-flags", backupFlags, backupOptionRules); err != nil {
		return err
	}
	for _, d := range c.ExternalTablespaceDirs {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d {
			return bad("fifo-backup-external-tablespace-dirs", d, allowedExternalDirs)
		}
	}
	prepareFlags, err := shlex.Split(c.PrepareFlags)
	if err != nil {
		return bad("fifo-backup-prepare-flags", c.PrepareFlags, fmt.Sprintf("%s; %v", allowedToolFlags, err))
	}
	return checkToolFlags("fifo-backup-prepare-flags", prepareFlags, prepareOptionRules)
}

// AutoLanes is --fifo-backup-lanes=0: one lane per CPU, at most 64, and no
// more than bh (the backup's storage handle) can write at once when it says.
func AutoLanes(cpus int, bh any) int {
	n := min(cpus, maxLanes)
	if w, ok := bh.(backuphandle.ConcurrentFiles); ok {
		n = min(n, w.WritableFilesAtOnce())
	}
	return max(n, 1)
}

// streams is the number of FIFO streams the tool is asked for.
func (c *Config) streams() int {
	if c.FIFOStreams > 0 {
		return c.FIFOStreams
	}
	return c.Lanes
}

// FlagConfig is the configuration from the flags, as the next backup or
// restore will use it.
func FlagConfig() Config { return currentConfig() }

// currentConfig is the configuration the registered engine uses: the flags,
// plus Vitess's compression flags read from the command's flag set.
func currentConfig() Config {
	c := flagConfig
	commandFlagsMu.Lock()
	fs := commandFlags
	commandFlagsMu.Unlock()
	c.Compression = CompressionFromFlags(fs)
	return c
}
