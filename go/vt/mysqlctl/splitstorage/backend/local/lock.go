package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// On local disk a lock is the file made read-only and its lock (date, mode,
// hold) recorded in an extended attribute of the file (lockAttr): this
// backend refuses to delete or replace a file its lock still keeps. Nothing
// stops the file's owner or root outside our code (rm -f): local locks
// guard against our own mistakes and an operator's, not an attacker.

var _ backend.Locker = (*Backend)(nil)

// lockAttr is the extended attribute that holds a file's lock, as JSON.
const lockAttr = "user.vtfifo.lock"

// lockedFileMode is a locked file's mode: read-only for its owner and group.
const lockedFileMode = 0o440

// LockOf reads key's lock.
func (l *Backend) LockOf(_ context.Context, key string) (backend.Lock, error) {
	p, err := l.path(key)
	if err != nil {
		return backend.Lock{}, err
	}
	lk, err := lockAt(p)
	return lk, localErr(err)
}

// Lock extends key's lock.
func (l *Backend) Lock(_ context.Context, key string, want backend.Lock) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	had, err := lockAt(p)
	if err != nil {
		return localErr(err)
	}
	if had.Covers(want) {
		return nil
	}
	return localErr(setLock(p, had.Extend(want)))
}

// lockAt reads the lock of the file at p (the zero Lock when it has none).
func lockAt(p string) (backend.Lock, error) {
	var lk backend.Lock
	b, err := getxattr(p, lockAttr)
	if errors.Is(err, errNoAttr) {
		if _, serr := os.Stat(p); serr != nil {
			return lk, serr
		}
		return lk, nil
	}
	if err != nil {
		return lk, fmt.Errorf("reading the lock of %s: %w", p, err)
	}
	if err := json.Unmarshal(b, &lk); err != nil {
		return lk, fmt.Errorf("the lock of %s: %w", p, err)
	}
	return lk, nil
}

// setLock records lk on the file at p and makes it read-only.
func setLock(p string, lk backend.Lock) error {
	if err := lk.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(lk)
	if err != nil {
		return err
	}
	if err := setxattr(p, lockAttr, b); err != nil {
		return fmt.Errorf("locking %s: the file system keeps no extended attribute %s here: %w", p, lockAttr, err)
	}
	return os.Chmod(p, lockedFileMode)
}

// refuseLocked fails when the file at p exists and its lock still keeps it.
func refuseLocked(p, key, what string) error {
	lk, err := lockAt(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case lk.HoldsAt(time.Now()):
		return backend.Permanent(fmt.Errorf("%s %s: %s: %w", what, key, lk, backend.ErrLocked))
	}
	return nil
}
