package splitstorage

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/utils"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

var (
	flagMu     sync.Mutex
	flagConfig = DefaultConfig()
)

const (
	flagBackend  = "split-storage-backend"
	flagLockFor  = "split-storage-lock-for"
	flagLockMode = "split-storage-lock-mode"

	flagSigningKeyFile = "split-storage-signing-key-file"
	flagAcceptUnsealed = "split-storage-accept-unsealed"
)

// The allowed values of each flag, as its errors name them.
const (
	allowedPartSize          = "1MiB..5GiB"
	allowedMemoryBudget      = "a size >= 0"
	allowedReadAhead         = "1MiB..1GiB"
	allowedRateLimit         = "0 (no limit) or 1MiB..1TiB (bytes per second)"
	allowedSpoolDir          = "empty (the system's temporary directory) or an existing directory"
	allowedConcurrency       = "1..256"
	allowedRetryMaxAttempts  = "1..100"
	allowedPositiveDuration  = "a duration > 0"
	allowedRetryMaxBackoff   = "a duration >= --split-storage-retry-initial-backoff"
	allowedKeyFile           = "empty (no encryption) or a readable file of lines \"<id> <base64 of 32 random bytes>\" (vtfifo keygen writes one)"
	allowedLockFor           = "0 (no lock) or 24h..876000h (a day to 100 years)"
	allowedLockMode          = "governance or compliance"
	allowedSigningKeyFile    = "empty (no seal) or a readable file of lines \"<id> <base64 of 32 random bytes>\" (vtfifo keygen writes one)"
	allowedEncryptedPartSize = "a multiple of 256KiB (the encryption frame) in 1MiB..5GiB when --split-storage-encryption-key-file is set"
)

// allowedBackend lists the backends, as --split-storage-backend's errors name them.
func allowedBackend() string { return strings.Join(BackendNames(), ", ") }

// RegisterFlags declares the --split-storage-* flags in fs, the command's own
// flag set (go/cmd/plugin.Install does it for Vitess's binaries; fifoverify
// for its own); it is the only place they are declared. Registering sets the
// defaults.
func RegisterFlags(fs *pflag.FlagSet) {
	flagMu.Lock()
	defer flagMu.Unlock()
	flagConfig = DefaultConfig()
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

// Args returns c as --split-storage-* flags, every one, so that a process
// given them (or ConfigFromArgs) gets exactly c.
func (c Config) Args() []string {
	fs := pflag.NewFlagSet("split storage", pflag.ContinueOnError)
	registerFlagsInto(fs, &c)
	var out []string
	fs.VisitAll(func(f *pflag.Flag) { out = append(out, "--"+f.Name+"="+f.Value.String()) })
	return out
}

// registerFlagsInto declares the storage's flags, then each backend's, in fs,
// bound to c; c's values are their defaults.
func registerFlagsInto(fs *pflag.FlagSet, c *Config) {
	const pre = "split backup storage: "
	integer := func(p *int, name, allowed, usage string) {
		utils.SetFlagVar(fs, flagvalue.Int{P: p, Allowed: allowed}, name, pre+usage)
		flagvalue.Document(name, allowed)
	}
	dur := func(p *time.Duration, name, allowed, usage string) {
		utils.SetFlagVar(fs, flagvalue.Duration{P: p, Allowed: allowed}, name, pre+usage)
		flagvalue.Document(name, allowed)
	}
	size := func(p *int64, name, allowed, usage string) {
		utils.SetFlagVar(fs, flagvalue.Size{P: p, Allowed: allowed}, name, pre+usage)
		flagvalue.Document(name, allowed)
	}
	str := func(p *string, name, allowed, usage string) {
		utils.SetFlagStringVar(fs, p, name, *p, pre+usage)
		flagvalue.Document(name, allowed)
	}
	str(&c.Backend, flagBackend, allowedBackend(), "where part objects go: "+allowedBackend()+".")
	size(&c.PartSize, "split-storage-part-size", allowedPartSize,
		"size of every part object (the last part of a file may be shorter), e.g. 256MiB.")
	str(&c.SpoolDir, "split-storage-spool-dir", allowedSpoolDir,
		"directory where each part waits, nameless, for its upload (empty: a file storage's root when it takes nameless files, "+
			"so uploads link parts instead of copying them; else $TMPDIR or /tmp); checked for part-size x (files at once + upload-concurrency) free.")
	size(&c.MemoryBudget, "split-storage-memory-budget", allowedMemoryBudget,
		"bytes of read-ahead buffers that all files being read share (writes hold no part in memory).")
	integer(&c.UploadConcurrency, "split-storage-upload-concurrency", allowedConcurrency, "part uploads in flight per backup.")
	size(&c.ReadAhead, "split-storage-read-ahead", allowedReadAhead,
		"bytes downloaded ahead of the reader per file, at most (taken from --split-storage-memory-budget while it lasts).")
	size(&c.UploadLimit, "split-storage-upload-limit", allowedRateLimit,
		"bytes per second all uploads of this storage share (e.g. 200MiB), to leave network for live traffic; 0: no limit. Server-side copies are not limited.")
	size(&c.DownloadLimit, "split-storage-download-limit", allowedRateLimit,
		"bytes per second all downloads of this storage share (restore, verify, copy); 0: no limit.")
	integer(&c.RetryMaxAttempts, "split-storage-retry-max-attempts", allowedRetryMaxAttempts,
		"attempts per request (the first one included) on transient errors.")
	dur(&c.RetryInitialBackoff, "split-storage-retry-initial-backoff", allowedPositiveDuration,
		"first retry backoff; doubles per attempt (full jitter).")
	dur(&c.RetryMaxBackoff, "split-storage-retry-max-backoff", allowedRetryMaxBackoff, "largest retry backoff.")
	dur(&c.RequestTimeout, "split-storage-request-timeout", allowedPositiveDuration,
		"a request that moves no byte for this long is cancelled and retried.")
	str(&c.EncryptionKeyFile, "split-storage-encryption-key-file", allowedKeyFile,
		"file of master keys, one \"<id> <base64 of 32 bytes>\" per line: backups are encrypted (AES-256-GCM) under a data key "+
			"wrapped by the first; every key listed decrypts (rotation). Empty: no encryption.")
	str(&c.Legacy, flagLegacy, allowedLegacy(), "a Vitess backup storage whose backups, written before the switch to this one, are listed "+
		"and restored beside this storage's (GetBackups, restores, retention, vtfifo); it is configured by its own flags (--file-backup-storage-root, "+
		"--s3-backup-storage-bucket, ...). New backups go to this storage only; the legacy one is read, and written to by a removal only. Empty: none.")
	str(&c.SigningKeyFile, flagSigningKeyFile, allowedSigningKeyFile,
		"file of signing keys, one \"<id> <base64 of 32 bytes>\" per line: new backups are sealed (a tag of every part's bytes and of every "+
			"document, bound to the backup's name) with the first, and sealed backups are checked with any before they are read (rotation): "+
			"a part, index or marker replaced, even with matching checksums, is refused naming it. Empty: no seal, nothing checked.")
	utils.SetFlagBoolVar(fs, &c.AcceptUnsealed, flagAcceptUnsealed, false, pre+"with --"+flagSigningKeyFile+": read backups that carry no seal "+
		"(written before signing was turned on), unchecked; without it they are refused.")
	dur(&c.LockFor, flagLockFor, allowedLockFor,
		"lock every object a new backup writes, in the request that writes it, until the backup's start plus this (S3 Object Lock, "+
			"GCS object retention, Azure immutability, on local disk read-only files our code will not remove): no removal, "+
			"retention included, takes the backup before then; 0: no lock. The bucket or container must have locks enabled.")
	utils.SetFlagVar(fs, (*lockModeValue)(&c.LockMode), flagLockMode, pre+"how strict the locks of --split-storage-lock-for are: "+
		"governance (a principal of the store allowed to bypass it may shorten it) or compliance (no one can, until the date).")
	flagvalue.Document(flagLockMode, allowedLockMode)
	for _, b := range c.backends() {
		b.RegisterFlags(fs)
	}
}

// lockModeValue is --split-storage-lock-mode's value: a mode the stores know.
type lockModeValue backend.LockMode

func (v *lockModeValue) String() string { return string(*v) }
func (v *lockModeValue) Type() string   { return "string" }
func (v *lockModeValue) Set(s string) error {
	if err := (backend.Lock{Until: time.Unix(1, 0), Mode: backend.LockMode(s)}).Validate(); err != nil {
		return fmt.Errorf("must be one of %s", allowedLockMode)
	}
	*v = lockModeValue(s)
	return nil
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
