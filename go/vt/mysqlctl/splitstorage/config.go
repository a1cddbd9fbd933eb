package splitstorage

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/utils"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

// Backend names accepted by --split-storage-backend.
const (
	BackendFile  = "file"
	BackendS3    = "s3"
	BackendGCS   = "gcs"
	BackendAzure = "azure"
)

// Limits enforced by ValidateFlags / Config.Validate.
const (
	MinPartSize = 1 << 20 // 1 MiB: smaller parts defeat the purpose (and S3 multipart has 5 MiB anyway)
	MaxPartSize = 5 << 30 // 5 GiB: the largest single S3 PutObject
	MaxParts    = 99999999
)

// Config is everything the split storage needs. The flags fill one package-level
// Config; tests and tools can build their own with DefaultConfig and New.
type Config struct {
	Backend string // file | s3 | gcs | azure
	Root    string // file backend: local directory

	PartSize          int64  // bytes per part object (the last part of a file may be shorter)
	SpoolDir          string // where parts wait for their upload; empty: see Config.spoolPlace
	MemoryBudget      int64  // bytes of read-ahead buffers all files being read share
	UploadConcurrency int    // parts in flight per backup
	ReadAhead         int64  // bytes read ahead of the reader per file, at most
	UploadLimit       int64  // bytes per second all uploads of the process share; 0: no limit
	DownloadLimit     int64  // bytes per second all downloads of the process share; 0: no limit

	RetryMaxAttempts    int           // attempts per request, first one included
	RetryInitialBackoff time.Duration // first backoff; doubles up to RetryMaxBackoff, full jitter
	RetryMaxBackoff     time.Duration
	RequestTimeout      time.Duration // a request that moves no byte for this long is cancelled and retried

	S3Endpoint       string
	S3Region         string
	S3Bucket         string
	S3Prefix         string
	S3ForcePathStyle bool
	S3SSE            string // "", AES256, aws:kms, aws:kms:dsse
	S3SSEKMSKeyID    string
	S3StorageClass   string

	GCSBucket string
	GCSPrefix string

	AzureAccount   string
	AzureContainer string
	AzurePrefix    string
	AzureEndpoint  string // the service URL; empty: https://<account>.blob.core.windows.net/
	AzureKeyFile   string // a file holding the account's shared key (never the key itself in a flag)

	// EncryptionKeyFile holds the master keys (crypt.LoadKeyring); empty:
	// backups are written in the clear (encrypted ones still cannot be read).
	EncryptionKeyFile string
}

// DefaultConfig returns the defaults of the flags.
func DefaultConfig() Config {
	return Config{
		Backend:             BackendFile,
		PartSize:            256 << 20,
		MemoryBudget:        64 << 20,
		UploadConcurrency:   4,
		ReadAhead:           8 << 20,
		RetryMaxAttempts:    10,
		RetryInitialBackoff: 500 * time.Millisecond,
		RetryMaxBackoff:     30 * time.Second,
		RequestTimeout:      2 * time.Minute,
		S3Region:            "us-east-1",
	}
}

var (
	flagMu     sync.Mutex
	flagConfig = DefaultConfig()
)

// The allowed values of each flag, as its errors name them.
const (
	allowedBackend           = "file, s3, gcs, azure"
	allowedPartSize          = "1MiB..5GiB"
	allowedMemoryBudget      = "a size >= 0"
	allowedReadAhead         = "1MiB..1GiB"
	allowedRateLimit         = "0 (no limit) or 1MiB..1TiB (bytes per second)"
	allowedSpoolDir          = "empty (the system's temporary directory) or an existing directory"
	allowedConcurrency       = "1..256"
	allowedRetryMaxAttempts  = "1..100"
	allowedPositiveDuration  = "a duration > 0"
	allowedRetryMaxBackoff   = "a duration >= --split-storage-retry-initial-backoff"
	allowedS3SSE             = "empty, AES256, aws:kms, aws:kms:dsse"
	allowedS3Endpoint        = "empty (AWS) or an http:// or https:// URL with a host"
	allowedAzureEndpoint     = "empty (https://<account>.blob.core.windows.net/) or an http:// or https:// URL with a host"
	allowedS3SSEKMSKeyIDOnly = "empty unless --split-storage-s3-sse is aws:kms or aws:kms:dsse"
	allowedKeyFile           = "empty (no encryption) or a readable file of lines \"<id> <base64 of 32 random bytes>\" (vtfifo keygen writes one)"
	allowedEncryptedPartSize = "a multiple of 256KiB (the encryption frame) in 1MiB..5GiB when --split-storage-encryption-key-file is set"
)

// RegisterFlags declares the --split-storage-* flags in fs, the command's own
// flag set (go/cmd/plugin.Install does it for Vitess's binaries; fifoverify
// for its own); it is the only place they are declared. Registering sets the
// defaults.
func RegisterFlags(fs *pflag.FlagSet) {
	registerFlagsInto(fs, &flagConfig)
}

// ConfigFromArgs parses --split-storage-* flags (args holds nothing else)
// into a Config of their own, apart from the process's flags: a second
// storage, such as the destination of a copy. The result is validated.
func ConfigFromArgs(args []string) (Config, error) {
	c := DefaultConfig()
	fs := pflag.NewFlagSet("split storage", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	registerFlagsInto(fs, &c)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("not split storage flags: %q", fs.Args())
	}
	return c, c.Validate()
}

func registerFlagsInto(fs *pflag.FlagSet, c *Config) {
	d := DefaultConfig()
	str := func(p *string, name, def, usage string) {
		utils.SetFlagStringVar(fs, p, name, def, usage)
	}
	integer := func(p *int, name string, def int, allowed, usage string) {
		*p = def
		utils.SetFlagVar(fs, flagvalue.Int{P: p, Allowed: allowed}, name, usage)
		flagvalue.Document(name, allowed)
	}
	dur := func(p *time.Duration, name string, def time.Duration, allowed, usage string) {
		*p = def
		utils.SetFlagVar(fs, flagvalue.Duration{P: p, Allowed: allowed}, name, usage)
		flagvalue.Document(name, allowed)
	}
	size := func(p *int64, name string, def int64, allowed, usage string) {
		*p = def
		utils.SetFlagVar(fs, flagvalue.Size{P: p, Allowed: allowed}, name, usage)
		flagvalue.Document(name, allowed)
	}
	// What Validate checks of the string flags, as it says it.
	for name, allowed := range map[string]string{
		"split-storage-backend":             allowedBackend,
		"split-storage-s3-sse":              allowedS3SSE,
		"split-storage-s3-sse-kms-key-id":   allowedS3SSEKMSKeyIDOnly,
		"split-storage-s3-endpoint":         allowedS3Endpoint,
		"split-storage-azure-endpoint":      allowedAzureEndpoint,
		"split-storage-spool-dir":           allowedSpoolDir,
		"split-storage-encryption-key-file": allowedKeyFile,
		"split-storage-root":                "must be set when --split-storage-backend=file",
		"split-storage-s3-bucket":           "must be set when --split-storage-backend=s3",
		"split-storage-s3-region":           "must be set when --split-storage-backend=s3",
		"split-storage-gcs-bucket":          "must be set when --split-storage-backend=gcs",
		"split-storage-azure-account":       "must be set when --split-storage-backend=azure",
		"split-storage-azure-container":     "must be set when --split-storage-backend=azure",
		"split-storage-azure-key-file":      "must be set when --split-storage-backend=azure",
	} {
		flagvalue.Document(name, allowed)
	}
	str(&c.Backend, "split-storage-backend", d.Backend, "split backup storage: where part objects go: file, s3, gcs or azure.")
	str(&c.Root, "split-storage-root", d.Root, "split backup storage: root directory of the file backend.")
	size(&c.PartSize, "split-storage-part-size", d.PartSize, allowedPartSize, "split backup storage: size of every part object (the last part of a file may be shorter); human units accepted (e.g. 256MiB). No other setting changes it.")
	str(&c.SpoolDir, "split-storage-spool-dir", d.SpoolDir, "split backup storage: directory where each part waits on disk, nameless, until it is uploaded (empty: for file storage its --split-storage-root when that takes nameless files, so that an upload links the part instead of copying it; otherwise $TMPDIR or /tmp); a backup needs part-size x (files written at once + upload-concurrency) free there and checks it before it starts.")
	size(&c.MemoryBudget, "split-storage-memory-budget", d.MemoryBudget, allowedMemoryBudget, "split backup storage: bytes of read-ahead buffers that all files being read share (each file also has one 256 KiB buffer of its own); writes hold no part in memory.")
	integer(&c.UploadConcurrency, "split-storage-upload-concurrency", d.UploadConcurrency, allowedConcurrency, "split backup storage: part uploads in flight per backup.")
	size(&c.ReadAhead, "split-storage-read-ahead", d.ReadAhead, allowedReadAhead, "split backup storage: bytes downloaded ahead of the reader per file, at most (taken from --split-storage-memory-budget while it lasts).")
	size(&c.UploadLimit, "split-storage-upload-limit", d.UploadLimit, allowedRateLimit, "split backup storage: bytes per second that all uploads of this storage share (e.g. 200MiB), so a backup leaves network for live traffic; 0: no limit. Server-side copies are not limited.")
	size(&c.DownloadLimit, "split-storage-download-limit", d.DownloadLimit, allowedRateLimit, "split backup storage: bytes per second that all downloads of this storage share (restore, verify, copy); 0: no limit.")
	integer(&c.RetryMaxAttempts, "split-storage-retry-max-attempts", d.RetryMaxAttempts, allowedRetryMaxAttempts, "split backup storage: attempts per request (first one included) on transient errors.")
	dur(&c.RetryInitialBackoff, "split-storage-retry-initial-backoff", d.RetryInitialBackoff, allowedPositiveDuration, "split backup storage: first retry backoff; doubles per attempt (full jitter).")
	dur(&c.RetryMaxBackoff, "split-storage-retry-max-backoff", d.RetryMaxBackoff, allowedRetryMaxBackoff, "split backup storage: largest retry backoff.")
	dur(&c.RequestTimeout, "split-storage-request-timeout", d.RequestTimeout, allowedPositiveDuration, "split backup storage: a request that moves no byte for this long is cancelled and retried.")
	str(&c.S3Endpoint, "split-storage-s3-endpoint", d.S3Endpoint, "split backup storage: S3 endpoint URL, http:// or https:// (empty: AWS).")
	str(&c.S3Region, "split-storage-s3-region", d.S3Region, "split backup storage: S3 region.")
	str(&c.S3Bucket, "split-storage-s3-bucket", d.S3Bucket, "split backup storage: S3 bucket.")
	str(&c.S3Prefix, "split-storage-s3-prefix", d.S3Prefix, "split backup storage: key prefix inside the S3 bucket.")
	flagvalue.BoolVar(fs, &c.S3ForcePathStyle, "split-storage-s3-force-path-style", d.S3ForcePathStyle, "split backup storage: use path-style S3 URLs (most S3-compatible servers).")
	str(&c.S3SSE, "split-storage-s3-sse", d.S3SSE, "split backup storage: S3 server-side encryption: empty, AES256, aws:kms or aws:kms:dsse.")
	str(&c.S3SSEKMSKeyID, "split-storage-s3-sse-kms-key-id", d.S3SSEKMSKeyID, "split backup storage: KMS key id for --split-storage-s3-sse=aws:kms.")
	str(&c.S3StorageClass, "split-storage-s3-storage-class", d.S3StorageClass, "split backup storage: S3 storage class of the objects (e.g. STANDARD_IA); empty: bucket default.")
	str(&c.GCSBucket, "split-storage-gcs-bucket", d.GCSBucket, "split backup storage: GCS bucket (STORAGE_EMULATOR_HOST is honoured).")
	str(&c.GCSPrefix, "split-storage-gcs-prefix", d.GCSPrefix, "split backup storage: object name prefix inside the GCS bucket.")
	str(&c.AzureAccount, "split-storage-azure-account", d.AzureAccount, "split backup storage: Azure storage account name.")
	str(&c.AzureContainer, "split-storage-azure-container", d.AzureContainer, "split backup storage: Azure blob container.")
	str(&c.AzurePrefix, "split-storage-azure-prefix", d.AzurePrefix, "split backup storage: blob name prefix inside the Azure container.")
	str(&c.AzureEndpoint, "split-storage-azure-endpoint", d.AzureEndpoint, "split backup storage: Azure blob service URL, http:// or https:// (empty: https://<account>.blob.core.windows.net/).")
	str(&c.AzureKeyFile, "split-storage-azure-key-file", d.AzureKeyFile, "split backup storage: file holding the Azure storage account's shared key (read at startup; the key never goes in a flag).")
	str(&c.EncryptionKeyFile, "split-storage-encryption-key-file", d.EncryptionKeyFile, "split backup storage: file of master keys, one \"<id> <base64 of 32 bytes>\" per line: every backup is encrypted (AES-256-GCM) under a random data key wrapped by the first key; every key listed decrypts (rotation). Empty: no encryption.")
}

// FlagConfig returns a copy of the configuration the flags hold now.
func FlagConfig() Config {
	flagMu.Lock()
	defer flagMu.Unlock()
	return flagConfig
}

// ValidateFlags checks the --split-storage-* flags once parsed, where split is
// the --backup-storage-implementation (a process that does not use the storage
// must not be stopped by it); the error names the flag and the allowed values.
// Vitess's binaries run it at startup (go/cmd/plugin.Install), so a bad value
// stops the process before any data moves. The storage also validates on
// first use.
func ValidateFlags(*pflag.FlagSet) error {
	if backupstorage.BackupStorageImplementation != Name {
		return nil
	}
	return FlagConfig().Validate()
}

// Location names where c keeps backups, for messages: a directory, or the
// backend's URL with its bucket and prefix (never a credential).
func (c Config) Location() string {
	join := func(scheme, bucket, prefix string) string {
		return scheme + "://" + path.Join(bucket, prefix)
	}
	switch c.Backend {
	case BackendS3:
		return join("s3", c.S3Bucket, c.S3Prefix)
	case BackendGCS:
		return join("gs", c.GCSBucket, c.GCSPrefix)
	case BackendAzure:
		return join("azure", c.AzureAccount, path.Join(c.AzureContainer, c.AzurePrefix))
	}
	return c.Root
}

// Validate checks c; see ValidateFlags. Every error names the flag and the allowed values.
func (c Config) Validate() error {
	var p flagProblems
	c.checkBackend(&p)
	c.checkObjectStores(&p)
	c.checkParts(&p)
	c.checkTransfers(&p)
	if len(p) > 0 {
		return fmt.Errorf("split backup storage: invalid flags: %s", strings.Join(p, "; "))
	}
	return nil
}

// flagProblems collects what Validate finds, each naming its flag.
type flagProblems []string

func (p *flagProblems) bad(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func (p *flagProblems) invalid(flag string, value any, allowed string) {
	p.bad("invalid value %q for --%s: allowed values are %s", fmt.Sprint(value), flag, allowed)
}

// checkBackend: the backend is known and what it needs is set.
func (c Config) checkBackend(p *flagProblems) {
	type setting struct{ flag, v string }
	var required []setting
	switch c.Backend {
	case BackendFile:
		required = []setting{{"root", c.Root}}
	case BackendS3:
		required = []setting{{"s3-bucket", c.S3Bucket}, {"s3-region", c.S3Region}}
	case BackendGCS:
		required = []setting{{"gcs-bucket", c.GCSBucket}}
	case BackendAzure:
		required = []setting{{"azure-account", c.AzureAccount}, {"azure-container", c.AzureContainer}, {"azure-key-file", c.AzureKeyFile}}
	default:
		p.invalid("split-storage-backend", c.Backend, allowedBackend)
	}
	for _, f := range required {
		if f.v == "" {
			p.bad("--split-storage-%s must be set when --split-storage-backend=%s", f.flag, c.Backend)
		}
	}
}

// checkObjectStores checks the S3 and Azure settings whatever the backend:
// a value no backend accepts is a mistake in the flags even while another
// backend is selected.
func (c Config) checkObjectStores(p *flagProblems) {
	switch c.S3SSE {
	case "", "AES256", "aws:kms", "aws:kms:dsse":
	default:
		p.invalid("split-storage-s3-sse", c.S3SSE, allowedS3SSE)
	}
	if c.S3SSEKMSKeyID != "" && !strings.HasPrefix(c.S3SSE, "aws:kms") {
		p.invalid("split-storage-s3-sse-kms-key-id", c.S3SSEKMSKeyID, allowedS3SSEKMSKeyIDOnly)
	}
	for _, e := range []struct{ flag, v, allowed string }{
		{"split-storage-s3-endpoint", c.S3Endpoint, allowedS3Endpoint},
		{"split-storage-azure-endpoint", c.AzureEndpoint, allowedAzureEndpoint},
	} {
		if e.v == "" {
			continue
		}
		if u, err := url.Parse(e.v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.invalid(e.flag, e.v, e.allowed)
		}
	}
}

// checkParts checks the part size, with the encryption key file that
// constrains it.
func (c Config) checkParts(p *flagProblems) {
	if c.PartSize < MinPartSize || c.PartSize > MaxPartSize {
		p.invalid("split-storage-part-size", flagvalue.FormatSize(c.PartSize), allowedPartSize)
	}
	if c.EncryptionKeyFile == "" {
		return
	}
	if _, err := crypt.LoadKeyring(c.EncryptionKeyFile); err != nil {
		p.bad("invalid value %q for --split-storage-encryption-key-file: %v: allowed values are %s", c.EncryptionKeyFile, err, allowedKeyFile)
	} else if c.PartSize%crcBlockSize != 0 && c.PartSize >= MinPartSize && c.PartSize <= MaxPartSize {
		p.invalid("split-storage-part-size", flagvalue.FormatSize(c.PartSize), allowedEncryptedPartSize)
	}
}

// checkTransfers checks concurrency, rate limits, read-ahead, retries,
// timeouts, memory and the spool.
func (c Config) checkTransfers(p *flagProblems) {
	if c.UploadConcurrency < 1 || c.UploadConcurrency > 256 {
		p.invalid("split-storage-upload-concurrency", c.UploadConcurrency, allowedConcurrency)
	}
	for _, l := range []struct {
		flag string
		v    int64
	}{{"split-storage-upload-limit", c.UploadLimit}, {"split-storage-download-limit", c.DownloadLimit}} {
		if l.v != 0 && (l.v < 1<<20 || l.v > 1<<40) {
			p.invalid(l.flag, flagvalue.FormatSize(l.v), allowedRateLimit)
		}
	}
	if c.ReadAhead < 1<<20 || c.ReadAhead > 1<<30 {
		p.invalid("split-storage-read-ahead", flagvalue.FormatSize(c.ReadAhead), allowedReadAhead)
	}
	if c.RetryMaxAttempts < 1 || c.RetryMaxAttempts > 100 {
		p.invalid("split-storage-retry-max-attempts", c.RetryMaxAttempts, allowedRetryMaxAttempts)
	}
	if c.RetryInitialBackoff <= 0 {
		p.invalid("split-storage-retry-initial-backoff", c.RetryInitialBackoff, allowedPositiveDuration)
	}
	if c.RetryMaxBackoff < c.RetryInitialBackoff {
		p.invalid("split-storage-retry-max-backoff", c.RetryMaxBackoff, fmt.Sprintf("%s (%v)", allowedRetryMaxBackoff, c.RetryInitialBackoff))
	}
	if c.RequestTimeout <= 0 {
		p.invalid("split-storage-request-timeout", c.RequestTimeout, allowedPositiveDuration)
	}
	if c.MemoryBudget < 0 {
		p.invalid("split-storage-memory-budget", c.MemoryBudget, allowedMemoryBudget)
	}
	if c.SpoolDir != "" {
		if fi, err := os.Stat(c.SpoolDir); err != nil || !fi.IsDir() {
			p.invalid("split-storage-spool-dir", c.SpoolDir, allowedSpoolDir)
		}
	}
}

// ObjectsPerTiB is how many part objects one TiB of backup data makes.
func (c Config) ObjectsPerTiB() int64 {
	return (1<<40 + c.PartSize - 1) / c.PartSize
}
