// Package splitstorage implements the Vitess BackupStorage "split": every file of
// a backup is stored as part objects of one configured size, uploaded in
// parallel with per-part retries and CRC32C checksums inside a memory budget,
// and read back in parallel with verification. Backends: a local directory, S3,
// GCS and Azure Blob Storage. See docs/split-storage.md.
//
// Adding a backend is a package under backend/ whose Config implements
// backend.Settings (its flags, their checks, its location and how to open
// it) and passes backendtest.Run, plus one field of that type in Config.
package splitstorage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"vitess.io/vitess/go/vt/logutil"
	stats "vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/limiter"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/retry"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

// Name is the key of this storage in backupstorage.BackupStorageMap.
const Name = "split"

// listWorkers is how many backups ListBackups reads at once.
const listWorkers = 16

func init() {
	backupstorage.BackupStorageMap[Name] = &Storage{params: backupstorage.NoParams(), retries: new(atomic.Int64)}
}

// Storage is the split BackupStorage. The registered instance reads the
// --split-storage-* flags on first use; New builds one from a Config.
type Storage struct {
	fixed  *Config // nil: use the flags
	params backupstorage.Params

	mu      sync.Mutex
	cfg     Config
	base    backend.Backend
	limits  *limiter.Limits
	keys    *crypt.Keyring // nil: backups are written in the clear
	seals   *crypt.Keyring // nil: backups are not sealed, seals not checked
	spool   spoolPlace
	retries *atomic.Int64
	// summaries are the fleet summaries read or written (fleet.go).
	summaries map[string]cachedSummary
	// listCopies lists backups copied or renamed by hand (ListingCopies).
	listCopies bool
}

// New returns a Storage for c (validated). Tests and tools use it; the
// registered "split" storage uses the flags.
func New(c Config) (*Storage, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Storage{fixed: &c, params: backupstorage.NoParams(), retries: new(atomic.Int64)}, nil
}

// WithParams is part of backupstorage.BackupStorage: a shared-nothing copy.
func (s *Storage) WithParams(p backupstorage.Params) backupstorage.BackupStorage {
	if p.Logger == nil {
		p.Logger = backupstorage.NoParams().Logger
	}
	if p.Stats == nil {
		p.Stats = stats.NoStats()
	}
	return &Storage{fixed: s.fixed, params: p, retries: new(atomic.Int64), listCopies: s.listCopies}
}

// Retries returns the number of retried requests this storage has made.
func (s *Storage) Retries() int64 { return s.retries.Load() }

// peerOf is bs as the split storage an operation of s works with beside it
// (role: a copy's destination, a repair's copy): both ends of a copy or a
// repair are split storages; any other is a usage error naming it.
func peerOf(bs backupstorage.BackupStorage, role string) (*Storage, error) {
	if p, ok := bs.(*Storage); ok && p != nil {
		return p, nil
	}
	return nil, flagvalue.Contradiction(fmt.Errorf("%s must be a split storage, not %T", role, bs))
}

// Close is part of backupstorage.BackupStorage: it closes the backend client;
// the storage can be used again afterwards.
func (s *Storage) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base == nil {
		return nil
	}
	err := s.base.Close()
	s.base = nil
	return err
}

// ErrNotExist and ErrExists are the backends' errors, under the names callers
// of this package know. ErrDamaged says a backup's stored objects do not
// match its indexes (Release of a backup that fails verification).
var (
	ErrNotExist = backend.ErrNotExist
	ErrExists   = backend.ErrExists
	ErrDamaged  = errors.New("the backup is damaged")
)

// OpenBackend returns the backend c names, without the retrying wrapper.
func OpenBackend(ctx context.Context, c Config) (backend.Backend, error) {
	b := c.selected()
	if b == nil {
		return nil, backend.Permanent(fmt.Errorf("--%s %q: must be one of %s", flagBackend, c.Backend, allowedBackend()))
	}
	return b.Open(ctx)
}

type env struct {
	cfg    Config
	be     backend.Backend // change marks over limiter over retry over the store
	spool  *spool
	linked bool // parts are linked into the store, not copied (see spoolPlace)
	budget *readBudget
	keys   *crypt.Keyring
	seals  *crypt.Keyring // signing keys (seal.go); nil: no seal made or checked
	logger logutil.Logger
	stats  stats.Stats
}

func (s *Storage) env(ctx context.Context) (*env, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base == nil {
		c := FlagConfig()
		if s.fixed != nil {
			c = *s.fixed
		}
		if err := c.Validate(); err != nil {
			return nil, err
		}
		var keys *crypt.Keyring
		if c.EncryptionKeyFile != "" {
			kr, err := crypt.LoadKeyring(c.EncryptionKeyFile)
			if err != nil {
				return nil, fmt.Errorf("split storage: --split-storage-encryption-key-file: %w", err)
			}
			keys = kr
		}
		var seals *crypt.Keyring
		if c.SigningKeyFile != "" {
			kr, err := crypt.LoadKeyring(c.SigningKeyFile)
			if err != nil {
				return nil, fmt.Errorf("split storage: --%s: %w", flagSigningKeyFile, err)
			}
			seals = kr
		}
		b, err := OpenBackend(ctx, c)
		if err != nil {
			return nil, err
		}
		s.cfg, s.base, s.limits, s.keys, s.seals = c, b, limiter.NewLimits(c.UploadLimit, c.DownloadLimit), keys, seals
		if s.spool.dir == "" {
			s.spool = c.spoolPlace() // chosen once: one spool account per storage for its life
		}
	}
	st := s.params.Stats.Scope(stats.Component(stats.BackupStorage), stats.Implementation(Name))
	pol := retry.Policy{MaxAttempts: s.cfg.RetryMaxAttempts, InitialBackoff: s.cfg.RetryInitialBackoff, MaxBackoff: s.cfg.RetryMaxBackoff,
		RequestTimeout: s.cfg.RequestTimeout}
	return &env{
		cfg:    s.cfg,
		be:     changeMarking{s.limits.Wrap(retry.New(s.base, pol, s.params.Logger, st, s.retries))},
		spool:  spoolFor(s.spool.dir),
		linked: s.spool.linked,
		budget: sharedReadBudget(s.cfg.MemoryBudget),
		keys:   s.keys,
		seals:  s.seals,
		logger: s.params.Logger,
		stats:  st,
	}, nil
}

// checkName accepts only plain relative names: one segment, or (slashOK, for
// the keyspace/shard directory) segments joined by single '/'. It refuses an
// empty name or segment (so a leading, trailing or doubled '/'), a segment
// that starts with '.' ("." and ".." included: a key must not depend on path
// cleaning, and the markers start with '.'), ".." anywhere, backslashes,
// control characters (NUL included) and invalid UTF-8. Every name that reaches
// a key goes through it: vtctld passes keyspace, shard and backup names from
// its callers as they are.
func checkName(kind, v string, slashOK bool) error {
	if !PlainName(v, slashOK) {
		return fmt.Errorf("split storage: invalid %s %q: want a relative name without '.'-leading or empty segments, '..', backslashes or "+
			"control characters", kind, v)
	}
	return nil
}

// PlainName reports whether v is a name checkName accepts: the rule every
// keyspace/shard directory (slashOK) and backup name must follow, for
// callers that check them before they reach the storage (vtfifo's flags).
func PlainName(v string, slashOK bool) bool {
	if v == "" || !utf8.ValidString(v) || strings.Contains(v, "..") || strings.ContainsRune(v, '\\') ||
		strings.IndexFunc(v, unicode.IsControl) >= 0 || (!slashOK && strings.Contains(v, "/")) {
		return false
	}
	for seg := range strings.SplitSeq(v, "/") {
		if seg == "" || strings.HasPrefix(seg, ".") {
			return false
		}
	}
	return true
}

// backupNames lists the names of every backup in dir, complete or not.
func (s *Storage) backupNames(ctx context.Context, dir string) (*env, []string, error) {
	if err := checkName("directory", dir, true); err != nil {
		return nil, nil, err
	}
	e, err := s.env(ctx)
	if err != nil {
		return nil, nil, err
	}
	entries, err := e.be.List(ctx, dir+"/", true)
	if err != nil {
		return nil, nil, fmt.Errorf("split storage: listing backups in %s: %w", dir, err)
	}
	var names []string
	for _, en := range entries {
		if en.Dir {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(en.Key, dir+"/"), "/"))
		}
	}
	return e, names, nil
}

// holdsOwnBackup reports whether one of names in dir is a backup this
// storage can prove it wrote (ownership.go).
func holdsOwnBackup(ctx context.Context, e *env, dir string, names []string) (bool, error) {
	for _, name := range names {
		if ours, _, err := proveBackup(ctx, e.be, dir, name); ours || err != nil {
			return ours, err
		}
	}
	return false, nil
}

// ListBackups is part of backupstorage.BackupStorage: only completed
// backups, this storage's and the legacy storage's (legacy.go), sorted by
// name. A backup copied or renamed by hand (moved.go) is not one of its
// directory's unless s lists copies (ListingCopies): Vitess's retention
// (vtbackup's --min-retention-count) never counts or removes one, and no
// restore considers it.
func (s *Storage) ListBackups(ctx context.Context, dir string) ([]backupstorage.BackupHandle, error) {
	e, names, err := s.backupNames(ctx, dir)
	if err != nil {
		return nil, err
	}
	states, err := s.statesOf(ctx, e, dir, names)
	if err != nil {
		return nil, err
	}
	return s.withLegacy(ctx, e, dir, names, s.handles(e, dir, names, states))
}

// ListShard is ListBackups and ListIncomplete of dir in one: one listing
// and one completion check per backup, where the two make two of each.
func (s *Storage) ListShard(ctx context.Context, dir string) ([]backupstorage.BackupHandle, []IncompleteBackup, error) {
	e, names, err := s.backupNames(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	states, err := s.statesOf(ctx, e, dir, names)
	if err != nil {
		return nil, nil, err
	}
	bhs, err := s.withLegacy(ctx, e, dir, names, s.handles(e, dir, names, states))
	if err != nil {
		return nil, nil, err
	}
	inc, err := incompleteAmong(ctx, e, dir, names, states)
	return bhs, inc, err
}

// ListingCopies returns a storage like s whose listings also hold the
// backups copied or renamed by hand (moved.go), each of whose reads says
// what it is: the vtfifo CLI's view, which shows them, and removes them
// when told to.
func (s *Storage) ListingCopies() *Storage {
	return &Storage{fixed: s.fixed, params: s.params, retries: s.retries, listCopies: true}
}

// listedState is what a listing knows of one backup directory.
type listedState uint8

const (
	stateIncomplete listedState = iota // no completion marker
	stateComplete
	stateCopied // complete, but another backup's, copied or renamed by hand (moved.go)
)

// statesOf reads the completion marker of each of names (backup
// directories in dir), listWorkers at a time.
func (s *Storage) statesOf(ctx context.Context, e *env, dir string, names []string) ([]listedState, error) {
	states := make([]listedState, len(names))
	errs := make([]error, len(names))
	var g errgroup.Group
	g.SetLimit(listWorkers)
	for i, n := range names {
		g.Go(func() error {
			states[i], errs[i] = s.stateOf(ctx, e, dir, n)
			return nil
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("split storage: listing backups in %s: %w", dir, err)
	}
	return states, nil
}

// stateOf is the state of backup dir/name. A completion marker that is
// there but cannot be read makes a complete backup: a listing does not
// judge one, its reads say what is wrong.
func (s *Storage) stateOf(ctx context.Context, e *env, dir, name string) (listedState, error) {
	key := backupPrefix(dir, name) + completeMarker
	doc, err := readSmall(ctx, e.be, key)
	if err != nil && !errors.Is(err, ErrNotExist) {
		_, err = e.be.Stat(ctx, key)
	}
	switch {
	case errors.Is(err, ErrNotExist):
		return stateIncomplete, nil
	case err != nil:
		return stateIncomplete, err
	case doc != nil && (&Handle{s: s, e: e, dir: dir, name: name, readOnly: true}).movedFromDoc(ctx, doc) != "":
		return stateCopied, nil
	}
	return stateComplete, nil
}

// handles are the read-only handles of the complete ones among names
// (and of the copied ones where s lists copies), sorted by name.
func (s *Storage) handles(e *env, dir string, names []string, states []listedState) []backupstorage.BackupHandle {
	var out []backupstorage.BackupHandle
	for i, n := range names {
		if states[i] == stateComplete || states[i] == stateCopied && s.listCopies {
			out = append(out, &Handle{s: s, e: e, dir: dir, name: n, readOnly: true, copied: states[i] == stateCopied})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// StartBackup is part of backupstorage.BackupStorage. It fails if the backup
// exists: the start marker is written with create-if-absent semantics (O_EXCL /
// link, S3 If-None-Match: *, GCS DoesNotExist).
func (s *Storage) StartBackup(ctx context.Context, dir, name string) (backupstorage.BackupHandle, error) {
	if err := checkName("directory", dir, true); err != nil {
		return nil, err
	}
	if err := checkName("backup name", name, false); err != nil {
		return nil, err
	}
	e, err := s.env(ctx)
	if err != nil {
		return nil, err
	}
	// The spool room for this backup's uploads, before anything is stored.
	uploads := e.cfg.PartSize * int64(e.cfg.UploadConcurrency)
	if err := e.spool.reserve(uploads, fmt.Sprintf("backup %s/%s: --split-storage-upload-concurrency=%d uploads of --split-storage-part-size=%s", dir,
		name, e.cfg.UploadConcurrency, flagvalue.FormatSize(e.cfg.PartSize))); err != nil {
		return nil, err
	}
	h, err := s.startBackup(ctx, e, dir, name)
	if err != nil {
		e.spool.unreserve(uploads)
		return nil, err
	}
	h.spoolHeld = uploads
	return h, nil
}

func (s *Storage) startBackup(ctx context.Context, e *env, dir, name string) (*Handle, error) {
	ctx, meter := backend.Metered(ctx) // what the backup costs at the store, from its first request
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	host, _ := os.Hostname()
	started := startedDoc{Storage: storageID, Layout: layoutVersion, Token: hex.EncodeToString(tok[:]), Host: host, Started: time.Now().UTC(),
		PartSize: e.cfg.PartSize}
	var dataKey *crypt.DataKey
	if e.keys != nil {
		dk, env, err := e.keys.NewDataKey(dir + "/" + name)
		if err != nil {
			return nil, fmt.Errorf("split storage: starting backup %s/%s: making its data key: %w", dir, name, err)
		}
		dataKey, started.Encryption = &dk, &env
	}
	if err := notAnothersDirectory(ctx, e.be, dir, name); err != nil {
		return nil, fmt.Errorf("split storage: starting backup %s/%s: %w", dir, name, err)
	}
	if err := claimRoot(ctx, e.be); err != nil {
		return nil, fmt.Errorf("split storage: starting backup %s/%s: %w", dir, name, err)
	}
	lock := newBackupLock(e.cfg, started.Started)
	if !lock.IsZero() {
		if _, err := lockerOf(e); err != nil {
			return nil, fmt.Errorf("split storage: starting backup %s/%s: --%s is set: %w", dir, name, flagLockFor, err)
		}
	}
	doc, _ := json.Marshal(started)
	key := backupPrefix(dir, name) + startedMarker
	err := e.be.Put(ctx, key, strings.NewReader(string(doc)), int64(len(doc)), backend.PutOptions{IfNotExists: true, CRC32C: crc32c(doc)})
	if errors.Is(err, ErrExists) {
		// Ours, from an attempt whose answer was lost?
		if got, rerr := readSmall(ctx, e.be, key); rerr == nil && string(got) == string(doc) {
			err = nil
		} else {
			return nil, fmt.Errorf("split storage: backup %s/%s already exists (%s): %w", dir, name, e.be, ErrExists)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("split storage: starting backup %s/%s: %w", dir, name, err)
	}
	if !lock.IsZero() {
		// The lock runs from the store's clock, its write time of the start
		// marker: this host's may be off, and a lock cannot be shortened.
		if info, err := e.be.Stat(ctx, key); err == nil && !info.Modified.IsZero() {
			lock = newBackupLock(e.cfg, info.Modified)
		}
	}
	// StartBackup's ctx is only valid for this call: the backup lives on its own.
	bctx, cancel := context.WithCancel(context.Background())
	return &Handle{s: s, e: e, dir: dir, name: name, started: doc, dataKey: dataKey, ctx: bctx, cancel: cancel, lock: lock, meter: meter,
		uploadSlots: make(chan struct{}, e.cfg.UploadConcurrency), files: map[string]*fileState{}}, nil
}

// RemoveBackup is part of backupstorage.BackupStorage: it deletes every object of
// the backup, the completion marker first so that it leaves the listing at once,
// and last again, in case the backup was still running and completed meanwhile
// (its EndBackup then finds objects missing and fails). A backup that others
// depend on as their base is retired instead: out of the listing, kept until
// its last dependent goes (see chain.go).
func (s *Storage) RemoveBackup(ctx context.Context, dir, name string) error {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return err
	}
	return s.removeProven(ctx, e, dir, name)
}

// backupEnv checks a backup's directory and name and returns the storage's
// environment, for the operations on one backup by name.
func (s *Storage) backupEnv(ctx context.Context, dir, name string) (*env, error) {
	if err := checkName("directory", dir, true); err != nil {
		return nil, err
	}
	if err := checkName("backup name", name, false); err != nil {
		return nil, err
	}
	return s.env(ctx)
}

func removeBackup(ctx context.Context, e *env, dir, name string) error {
	if err := refuseLocked(ctx, e, dir, name, "removing"); err != nil {
		return err
	}
	prefix := backupPrefix(dir, name)
	if err := e.be.Delete(ctx, prefix+completeMarker); err != nil {
		return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
	}
	objs, err := e.be.List(ctx, prefix, false)
	if err != nil {
		return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
	}
	var (
		g       errgroup.Group
		mu      sync.Mutex
		errs    []error
		foreign []string
	)
	g.SetLimit(listWorkers)
	for _, o := range objs {
		switch {
		case o.Dir || o.Key == prefix+startedMarker:
			continue
		case !ownKey(prefix, o.Key):
			foreign = append(foreign, strings.TrimPrefix(o.Key, prefix))
			continue
		}
		g.Go(func() error {
			if err := e.be.Delete(ctx, o.Key); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
	}
	for _, key := range []string{prefix + startedMarker, prefix + completeMarker} {
		if err := e.be.Delete(ctx, key); err != nil {
			return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
		}
	}
	if len(foreign) > 0 {
		e.logger.Warningf("split storage: removed backup %s/%s, and left in its directory %s, which the split storage does not write "+
			"(put there by hand or by another tool): remove them by hand if nothing needs them", dir, name, foreignObjects(foreign))
	}
	return nil
}

func readSmall(ctx context.Context, be backend.Backend, key string) ([]byte, error) {
	r, err := be.Get(ctx, key, 0, -1)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxIndexBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxIndexBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", key, maxIndexBytes)
	}
	return b, nil
}

// ListBackupDirs lists the backup directories of the storage
// (keyspace/shard, as mysqlctl.GetBackupDir names them) that hold at least
// one backup of this storage, complete or not, sorted: a root one level
// too high (root/<r>/<ks>/<shard>/...) or another storage's tree lists
// none.
func (s *Storage) ListBackupDirs(ctx context.Context) ([]string, error) {
	var dirs []string
	err := s.eachBackupDir(ctx, func(dir string) bool { dirs = append(dirs, dir); return true })
	sort.Strings(dirs)
	return dirs, err
}

// eachBackupDir calls fn with each keyspace/shard directory that holds a
// backup this storage can prove it wrote, until fn returns false. A proof
// that cannot be read counts the directory in: its own listing then says
// what could not be read, rather than the shard silently vanishing.
func (s *Storage) eachBackupDir(ctx context.Context, fn func(dir string) bool) error {
	e, err := s.env(ctx)
	if err != nil {
		return err
	}
	keyspaces, err := e.be.List(ctx, "", true)
	if err != nil {
		return fmt.Errorf("split storage: listing %s: %w", e.be, err)
	}
	for _, ks := range keyspaces {
		if !ks.Dir {
			continue
		}
		shards, err := e.be.List(ctx, ks.Key, true)
		if err != nil {
			return fmt.Errorf("split storage: listing %s in %s: %w", ks.Key, e.be, err)
		}
		for _, sh := range shards {
			if !sh.Dir {
				continue
			}
			dir := strings.TrimSuffix(sh.Key, "/")
			_, names, err := s.backupNames(ctx, dir)
			if err != nil {
				continue // not a name a backup directory can have
			}
			if ours, err := holdsOwnBackup(ctx, e, dir, names); (ours || err != nil) && !fn(dir) {
				return nil
			}
		}
	}
	return nil
}
