package splitstorage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// A locked backup: every object it holds (parts, indexes, its start and
// base markers, its records) is locked at the store until a date
// (backend.Lock), and a lock record says so, itself locked:
// .locked-<when> holds the lock and, once the backup is complete, its
// completion marker. The markers that move as a backup changes state
// (.complete, .retired, .quarantined), the records stored after completion
// (.sidecar-*, replaced by each new one) and read leases are not locked: a
// lost completion marker can be put back from the lock record. Nothing here removes
// a backup its records lock (refuseLocked), whatever the store enforces.
//
// A new backup is locked as it is written when --split-storage-lock-for is
// set (each object in the request that writes it: no extra request per
// part); an existing one by Lock, which extends. An incremental backup is
// never locked longer than the backups it needs: a new one's lock is
// capped at its base's, and Lock locks the bases first, as long.
const lockRecordPrefix = ".locked-"

type lockDoc struct {
	Backup string       `json:"backup"`
	Lock   backend.Lock `json:"lock"`
	At     time.Time    `json:"at"`
	// Complete is the backup's completion marker when it was locked (none
	// for the lock a backup is written with, recorded at its start).
	Complete json.RawMessage `json:"complete,omitempty"`
}

// isLockRecordKey says whether key is a lock record of the backup at prefix.
func isLockRecordKey(prefix, key string) bool { return strings.HasPrefix(key, prefix+lockRecordPrefix) }

// lockCovers says whether a backup's lock covers the object at key: every
// object of the backup (ownKey) but the markers that move and the read
// leases; never one put there by someone else.
func lockCovers(prefix, key string) bool {
	rel := strings.TrimPrefix(key, prefix)
	switch {
	case !ownKey(prefix, key):
		return false
	case rel == completeMarker || rel == retiredMarker || rel == quarantineMarker, rel == promotingMarker || rel == promotedMarker:
		return false
	case strings.HasPrefix(rel, leasePrefix), strings.HasPrefix(rel, sidecarPrefix):
		return false // read leases go as readers leave; records are replaced
	}
	return true
}

// lockerOf returns the store's Locker, or an error naming the store.
func lockerOf(e *env) (backend.Locker, error) {
	lk, ok := backend.LockerOf(e.be)
	if !ok {
		return nil, fmt.Errorf("split storage: %s does not lock objects", e.be)
	}
	return lk, nil
}

// writeLockRecord stores a lock record of dir/name, locked as it says.
func writeLockRecord(ctx context.Context, e *env, dir, name string, l backend.Lock, complete []byte) error {
	at := time.Now().UTC()
	doc, err := json.Marshal(lockDoc{Backup: dir + "/" + name, Lock: l, At: at, Complete: complete})
	if err != nil {
		return err
	}
	key := backupPrefix(dir, name) + lockRecordPrefix + at.Format("20060102T150405.000000000Z")
	return e.be.Put(ctx, key, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{IfNotExists: true, CRC32C: crc32c(doc), Lock: l})
}

// BackupLock is what a backup's lock records say: its lock (the zero Lock
// when it has none), and the completion marker the latest one saved.
type BackupLock struct {
	Lock     backend.Lock
	Complete json.RawMessage
	// At is the store's time when the records were read (as its answer
	// gave it; on a local root, which may be a file server's, the write
	// time of a probe: judgingNow): whether Lock still holds is judged by
	// it, never by this host's clock, which may be days off.
	At time.Time `json:"-"`
}

// Holds says whether the lock held when it was read, by the store's clock
// (one not read from the store: by this host's).
func (bl BackupLock) Holds() bool {
	if bl.At.IsZero() {
		return bl.Lock.HoldsAt(hostNow())
	}
	return bl.Lock.HoldsAt(bl.At)
}

// readBackupLock reads every lock record of dir/name (usually one or two).
func readBackupLock(ctx context.Context, be backend.Backend, dir, name string) (BackupLock, error) {
	var out BackupLock
	wctx, clock := backend.WatchClock(ctx)
	objs, err := be.List(wctx, backupPrefix(dir, name)+lockRecordPrefix, false)
	if err != nil {
		return out, err
	}
	out.At = storeNow(clock)
	if len(objs) > 0 { // a lock to judge: by the store's clock, a local root's too
		out.At = judgingNow(ctx, be, clock)
	}
	for _, o := range objs {
		doc, err := readSmall(ctx, be, o.Key)
		if err != nil {
			return out, err
		}
		var d lockDoc
		if err := strictJSON(doc, &d); err != nil {
			return out, fmt.Errorf("%s: %w", o.Key, err)
		}
		if d.Backup != dir+"/"+name {
			return out, fmt.Errorf("%s: a lock record of backup %s", o.Key, d.Backup)
		}
		out.Lock = out.Lock.Extend(d.Lock)
		if d.Complete != nil {
			out.Complete = d.Complete
		}
	}
	return out, nil
}

// LockOf returns what backup dir/name's lock records say.
func (s *Storage) LockOf(ctx context.Context, dir, name string) (BackupLock, error) {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return BackupLock{}, err
	}
	bl, err := readBackupLock(ctx, e.be, dir, name)
	if err != nil {
		return bl, fmt.Errorf("split storage: reading the lock of backup %s/%s: %w", dir, name, err)
	}
	return bl, nil
}

// refuseLocked fails, with an error that no retry or later call fixes
// before the date (a contradiction: exit 2 in vtfifo), when dir/name's
// lock still holds.
func refuseLocked(ctx context.Context, e *env, dir, name, what string) error {
	bl, err := readBackupLock(ctx, e.be, dir, name)
	if err != nil {
		return fmt.Errorf("split storage: %s backup %s/%s: reading its lock: %w", what, dir, name, err)
	}
	if !bl.Holds() {
		return nil
	}
	return flagvalue.Contradiction(fmt.Errorf("split storage: not %s backup %s/%s: it is %s, and nothing removes it before then "+
		"(vtfifo show shows its lock): %w", what, dir, name, bl.Lock, backend.ErrLocked))
}

// newBackupLock is the lock a backup started at start is written with: none
// without --split-storage-lock-for.
func newBackupLock(c Config, start time.Time) backend.Lock {
	if c.LockFor == 0 {
		return backend.Lock{}
	}
	return backend.Lock{Until: start.Add(c.LockFor).UTC().Truncate(time.Second), Mode: cmp.Or(c.LockMode, backend.LockGovernance)}
}

// capToBase caps this backup's lock at its base's, so that it never
// outlives a backup it needs; an unlocked base leaves it unlocked (vtfifo
// lock locks the chain).
func (h *Handle) capToBase(ctx context.Context) error {
	if h.lock.IsZero() || h.base == "" {
		return nil
	}
	bl, err := readBackupLock(ctx, h.e.be, h.dir, h.base)
	if err != nil {
		return fmt.Errorf("split storage: backup %s/%s: reading the lock of its base %s: %w", h.dir, h.name, h.base, err)
	}
	switch {
	case !bl.Lock.Until.After(bl.At):
		h.e.logger.Warningf("split storage: %s/%s is not locked: its base %s is not (%s), and a backup is never locked longer than "+
			"one it needs (vtfifo lock locks a chain)", h.dir, h.name, h.base, bl.Lock)
		h.lock = backend.Lock{}
	case bl.Lock.Until.Before(h.lock.Until):
		h.e.logger.Infof("split storage: %s/%s is locked until %s, as its base %s is (%s): never longer than a backup it needs",
			h.dir, h.name, bl.Lock.Until.Format(time.RFC3339), h.base, bl.Lock)
		h.lock.Until = bl.Lock.Until
	}
	return nil
}

// lockStart records this backup's lock and locks what was written before
// it was known (the start and base markers): once, before the first file.
func (h *Handle) lockStart(ctx context.Context) error {
	h.lockOnce.Do(func() {
		if h.lock.IsZero() {
			return
		}
		if h.lockErr = writeLockRecord(ctx, h.e, h.dir, h.name, h.lock, nil); h.lockErr != nil {
			return
		}
		lk, err := lockerOf(h.e)
		if err != nil {
			h.lockErr = err
			return
		}
		prefix := backupPrefix(h.dir, h.name)
		keys := []string{prefix + startedMarker}
		if h.base != "" {
			keys = append(keys, prefix+baseMarker)
		}
		for _, k := range keys {
			if err := lk.Lock(ctx, k, h.lock); err != nil {
				h.lockErr = err
				return
			}
		}
	})
	if h.lockErr != nil {
		return fmt.Errorf("split storage: backup %s/%s: locking it until %s: %w", h.dir, h.name, h.lock.Until.Format(time.RFC3339), h.lockErr)
	}
	return nil
}

// putOptions are a Put's options for an object of this backup: locked as
// the backup is.
func (h *Handle) putOptions(crc uint32) backend.PutOptions {
	return backend.PutOptions{CRC32C: crc, Lock: h.lock}
}

// LockResult is what Lock did.
type LockResult struct {
	Backup  string
	Lock    backend.Lock // what the backup is locked with now: the lock asked for, or a longer one it had
	Objects int          // objects of the backup locked (or found locked)
	Bases   []string     // the backups it needs, locked first, as long
}

// Lock locks backup dir/name, a complete one this storage wrote, and the
// backups it needs, until l.Until (extending, never shortening, what they
// have). Each backup's lock record is written first, then its objects are
// locked: a lock cut short leaves the backup refused to removal, and a new
// Lock finishes it.
func (s *Storage) Lock(ctx context.Context, dir, name string, l backend.Lock) (LockResult, error) {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return LockResult{}, err
	}
	if err := l.Validate(); err != nil {
		return LockResult{}, flagvalue.Contradiction(err)
	}
	if now := datingNow(ctx, e.be); !l.HoldsAt(now) {
		return LockResult{}, flagvalue.Contradiction(fmt.Errorf("split storage: a lock until %s keeps nothing: the date has passed (the store's clock says %s)",
			l.Until.Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	lk, err := lockerOf(e)
	if err != nil {
		return LockResult{}, flagvalue.Contradiction(err)
	}
	res := LockResult{Backup: dir + "/" + name, Lock: l}
	for cur := name; cur != ""; {
		n, base, held, err := lockOne(ctx, e, lk, dir, cur, l)
		if err != nil {
			return res, err
		}
		if cur == name {
			res.Objects, res.Lock = n, held
		} else {
			res.Bases = append(res.Bases, cur)
		}
		cur = base
	}
	return res, nil
}

// lockOne locks one backup of a chain and returns its object count, its
// base and the lock it holds now.
func lockOne(ctx context.Context, e *env, lk backend.Locker, dir, name string, l backend.Lock) (int, string, backend.Lock, error) {
	fail := func(err error) (int, string, backend.Lock, error) {
		return 0, "", backend.Lock{}, fmt.Errorf("split storage: locking backup %s/%s: %w", dir, name, err)
	}
	ours, _, err := proveBackup(ctx, e.be, dir, name)
	if err != nil {
		return fail(err)
	}
	if !ours {
		return fail(flagvalue.Contradiction(fmt.Errorf("not a backup the split storage wrote: %w", ErrNotOurs)))
	}
	complete, err := completionDoc(ctx, e.be, dir, name)
	if err != nil {
		return fail(err)
	}
	base, err := baseOf(ctx, e.be, dir, name)
	if err != nil {
		return fail(err)
	}
	had, err := readBackupLock(ctx, e.be, dir, name)
	if err != nil {
		return fail(err)
	}
	// Every object is locked as the records say once this one is written:
	// what they had, extended. A lock the records already cover writes
	// none, and locks what a lock cut short left.
	if !had.Lock.Covers(l) {
		l = had.Lock.Extend(l)
		if err := writeLockRecord(ctx, e, dir, name, l, complete); err != nil {
			return fail(err)
		}
	} else {
		l = had.Lock
	}
	prefix := backupPrefix(dir, name)
	objs, err := e.be.List(ctx, prefix, false)
	if err != nil {
		return fail(err)
	}
	var covered []backend.ObjectInfo
	for _, o := range objs {
		if !o.Dir && lockCovers(prefix, o.Key) {
			covered = append(covered, o)
		}
	}
	if err := forEach(ctx, listWorkers, covered, func(ctx context.Context, o backend.ObjectInfo) error {
		return lk.Lock(ctx, o.Key, l)
	}); err != nil {
		return fail(err)
	}
	return len(covered), base, l, nil
}

// completionDoc is a complete or retired backup's completion marker; any
// other state is not locked (an incomplete backup may never complete, a
// quarantined one failed).
func completionDoc(ctx context.Context, be backend.Backend, dir, name string) ([]byte, error) {
	prefix := backupPrefix(dir, name)
	doc, err := readSmall(ctx, be, prefix+completeMarker)
	if errors.Is(err, ErrNotExist) {
		r, rerr := readRetired(ctx, be, prefix)
		if rerr == nil {
			return r.Complete, nil
		}
		if errors.Is(rerr, ErrNotExist) {
			return nil, flagvalue.Contradiction(fmt.Errorf("it is not complete (incomplete, quarantined or removed): only a complete backup is locked: %w", ErrNotExist))
		}
		err = rerr
	}
	return doc, err
}

// What the commands above the storage name of a lock (they import the
// storage, not its backends).
type (
	// Lock is backend.Lock.
	Lock = backend.Lock
	// LockMode is backend.LockMode.
	LockMode = backend.LockMode
)

// The lock modes, and the error of a removal a lock refuses.
const (
	LockGovernance = backend.LockGovernance
	LockCompliance = backend.LockCompliance
)

// ErrLocked is wrapped by the error of a removal that a lock refuses.
var ErrLocked = backend.ErrLocked

// LockState is what this backup's lock records say.
func (h *Handle) LockState(ctx context.Context) (BackupLock, error) {
	bl, err := readBackupLock(ctx, h.e.be, h.dir, h.name)
	if err != nil {
		return bl, fmt.Errorf("split storage: reading the lock of backup %s/%s: %w", h.dir, h.name, err)
	}
	return bl, nil
}
