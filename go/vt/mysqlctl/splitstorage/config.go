package splitstorage

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/azure"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/gcs"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/s3"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

// The names of the built-in backends in --split-storage-backend; Config's
// backend fields are the list.
const (
	BackendFile  = local.Name
	BackendS3    = s3.Name
	BackendGCS   = gcs.Name
	BackendAzure = azure.Name
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
	Backend string // the Kind of one of the backend fields below

	// The settings of every kind of backend, each owned by its package: the
	// fields that are backend.Settings are the list of backends, so adding
	// one is its package and a line here.
	File  local.Config
	S3    s3.Config
	GCS   gcs.Config
	Azure azure.Config

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

	// EncryptionKeyFile holds the master keys (crypt.LoadKeyring); empty:
	// backups are written in the clear (encrypted ones still cannot be read).
	EncryptionKeyFile string
	// SigningKeyFile holds the keys that seal new backups and check
	// sealed ones (seal.go; the format of EncryptionKeyFile); empty: none.
	SigningKeyFile string
	// AcceptUnsealed reads backups without a seal, unchecked, while a
	// signing key is set.
	AcceptUnsealed bool
	// LockFor locks every object a new backup writes, in the request that
	// writes it, until the backup's start plus LockFor (0: no lock; lock.go).
	LockFor time.Duration
	// LockMode is the locks' strictness (governance or compliance).
	LockMode backend.LockMode
	// Legacy names a Vitess storage implementation (file, s3, gcs,
	// azblob, ceph) whose backups are listed and restored beside this
	// storage's (legacy.go); "" none.
	Legacy string
}

// DefaultConfig returns the defaults of the flags.
func DefaultConfig() Config {
	c := Config{
		Backend:             BackendFile,
		PartSize:            256 << 20,
		MemoryBudget:        64 << 20,
		UploadConcurrency:   4,
		ReadAhead:           8 << 20,
		RetryMaxAttempts:    10,
		RetryInitialBackoff: 500 * time.Millisecond,
		RetryMaxBackoff:     30 * time.Second,
		RequestTimeout:      2 * time.Minute,
		LockMode:            backend.LockGovernance,
	}
	for _, b := range c.backends() {
		b.Defaults()
	}
	return c
}

// backends returns the settings of every kind of backend c holds: its
// fields that are backend.Settings, in their order.
func (c *Config) backends() []backend.Settings {
	v := reflect.ValueOf(c).Elem()
	var out []backend.Settings
	for i := range v.NumField() {
		if f := v.Field(i); f.CanAddr() && f.Addr().CanInterface() {
			if s, ok := f.Addr().Interface().(backend.Settings); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// selected returns the settings of the backend c.Backend names, or nil.
func (c *Config) selected() backend.Settings {
	for _, b := range c.backends() {
		if b.Kind() == c.Backend {
			return b
		}
	}
	return nil
}

// LocalRoot is the directory of this host that the selected backend keeps
// its objects in (backend.LocalDir: the file backend's root); "" for a
// backend elsewhere.
func (c Config) LocalRoot() string {
	if d, ok := c.selected().(backend.LocalDir); ok {
		return d.Dir()
	}
	return ""
}

// SameStore says whether c and o name the same store: one backend kind,
// location and endpoint (backend.Served). What differs only in how it is
// read (part size, limits, keys) is the same store.
func (c Config) SameStore(o Config) bool {
	endpoint := func(c Config) string {
		if s, ok := c.selected().(backend.Served); ok {
			return s.ServiceEndpoint()
		}
		return ""
	}
	return c.Backend == o.Backend && c.Location() == o.Location() && endpoint(c) == endpoint(o)
}

// BackendNames lists the values --split-storage-backend accepts.
func BackendNames() []string {
	var c Config
	var names []string
	for _, b := range c.backends() {
		names = append(names, b.Kind())
	}
	return names
}

// Location names where c keeps backups, for messages: a directory, or the
// backend's URL with its bucket and prefix (never a credential).
func (c Config) Location() string {
	if b := c.selected(); b != nil {
		return b.Location()
	}
	return c.Backend
}

// Validate checks c; see ValidateFlags. Every error names the flag and the allowed values.
func (c Config) Validate() error {
	var p flagvalue.Problems
	c.checkBackends(&p)
	c.checkParts(&p)
	c.checkTransfers(&p)
	c.checkLegacy(&p)
	c.checkLocks(&p)
	if c.SigningKeyFile != "" {
		if _, err := crypt.LoadKeyring(c.SigningKeyFile); err != nil {
			p.Add("invalid value %q for --%s: %v: allowed values are %s", c.SigningKeyFile, flagSigningKeyFile, err, allowedSigningKeyFile)
		}
	}
	if len(p) > 0 {
		return fmt.Errorf("split backup storage: invalid flags: %s", strings.Join(p, "; "))
	}
	return nil
}

// checkBackends: the backend is known and what it needs is set; a value no
// backend accepts is a mistake in the flags even while another one is selected.
func (c *Config) checkBackends(p *flagvalue.Problems) {
	if c.selected() == nil {
		p.Invalid(flagBackend, c.Backend, allowedBackend())
	}
	for _, b := range c.backends() {
		b.Check(b.Kind() == c.Backend, p)
	}
}

// checkParts checks the part size, with the encryption key file that
// constrains it.
func (c Config) checkParts(p *flagvalue.Problems) {
	if c.PartSize < MinPartSize || c.PartSize > MaxPartSize {
		p.Invalid("split-storage-part-size", flagvalue.FormatSize(c.PartSize), allowedPartSize)
	}
	if c.EncryptionKeyFile == "" {
		return
	}
	if _, err := crypt.LoadKeyring(c.EncryptionKeyFile); err != nil {
		p.Add("invalid value %q for --split-storage-encryption-key-file: %v: allowed values are %s", c.EncryptionKeyFile, err, allowedKeyFile)
	} else if c.PartSize%crcBlockSize != 0 && c.PartSize >= MinPartSize && c.PartSize <= MaxPartSize {
		p.Invalid("split-storage-part-size", flagvalue.FormatSize(c.PartSize), allowedEncryptedPartSize)
	}
}

// checkTransfers checks concurrency, rate limits, read-ahead, retries,
// timeouts, memory and the spool.
func (c Config) checkTransfers(p *flagvalue.Problems) {
	if c.UploadConcurrency < 1 || c.UploadConcurrency > 256 {
		p.Invalid("split-storage-upload-concurrency", c.UploadConcurrency, allowedConcurrency)
	}
	for _, l := range []struct {
		flag string
		v    int64
	}{{"split-storage-upload-limit", c.UploadLimit}, {"split-storage-download-limit", c.DownloadLimit}} {
		if l.v != 0 && (l.v < 1<<20 || l.v > 1<<40) {
			p.Invalid(l.flag, flagvalue.FormatSize(l.v), allowedRateLimit)
		}
	}
	if c.ReadAhead < 1<<20 || c.ReadAhead > 1<<30 {
		p.Invalid("split-storage-read-ahead", flagvalue.FormatSize(c.ReadAhead), allowedReadAhead)
	}
	if c.RetryMaxAttempts < 1 || c.RetryMaxAttempts > 100 {
		p.Invalid("split-storage-retry-max-attempts", c.RetryMaxAttempts, allowedRetryMaxAttempts)
	}
	if c.RetryInitialBackoff <= 0 {
		p.Invalid("split-storage-retry-initial-backoff", c.RetryInitialBackoff, allowedPositiveDuration)
	}
	if c.RetryMaxBackoff < c.RetryInitialBackoff {
		p.Invalid("split-storage-retry-max-backoff", c.RetryMaxBackoff, fmt.Sprintf("%s (%v)", allowedRetryMaxBackoff, c.RetryInitialBackoff))
	}
	if c.RequestTimeout <= 0 {
		p.Invalid("split-storage-request-timeout", c.RequestTimeout, allowedPositiveDuration)
	}
	if c.MemoryBudget < 0 {
		p.Invalid("split-storage-memory-budget", c.MemoryBudget, allowedMemoryBudget)
	}
	if c.SpoolDir != "" {
		if fi, err := os.Stat(c.SpoolDir); err != nil || !fi.IsDir() {
			p.Invalid("split-storage-spool-dir", c.SpoolDir, allowedSpoolDir)
		}
	}
}

// checkLocks checks the lock of new backups: a mode the stores know (none
// is governance), a
// duration of at least a day and at most 100 years (S3's limits).
func (c Config) checkLocks(p *flagvalue.Problems) {
	if c.LockMode != "" && c.LockMode != backend.LockGovernance && c.LockMode != backend.LockCompliance {
		p.Invalid(flagLockMode, c.LockMode, allowedLockMode)
	}
	if c.LockFor != 0 && (c.LockFor < 24*time.Hour || c.LockFor > 100*365*24*time.Hour) {
		p.Invalid(flagLockFor, c.LockFor, allowedLockFor)
	}
}
