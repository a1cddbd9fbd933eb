package backend

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A Lock keeps an object from being deleted or replaced until a date, on the
// stores that enforce it: S3 Object Lock retention and legal hold, GCS object
// retention and temporary hold, Azure version-level immutability and legal
// hold; on local disk, our own code refuses and the file is made read-only
// (local has no authority above the file's owner).
type Lock struct {
	// Until is the retain-until date; zero: no retention.
	Until time.Time `json:"until"`
	// Mode is how strict the retention is: governance (a privileged
	// principal of the store may shorten or remove it) or compliance (no
	// one can, not even the account's root, until the date).
	Mode LockMode `json:"mode,omitempty"`
	// LegalHold keeps the object until the hold is taken off, whatever the
	// date (S3 and Azure legal hold, GCS temporary hold).
	LegalHold bool `json:"legal_hold,omitempty"`
}

// LockMode is a retention's strictness.
type LockMode string

// The lock modes. Each store names them its own way: S3 GOVERNANCE and
// COMPLIANCE, GCS and Azure Unlocked and Locked.
const (
	LockGovernance LockMode = "governance"
	LockCompliance LockMode = "compliance"
)

// LockModes lists the modes, for flags and messages.
func LockModes() []string { return []string{string(LockGovernance), string(LockCompliance)} }

// IsZero says whether l locks nothing.
func (l Lock) IsZero() bool { return l.Until.IsZero() && !l.LegalHold }

// HoldsAt says whether l keeps its object at t.
func (l Lock) HoldsAt(t time.Time) bool { return l.LegalHold || l.Until.After(t) }

// Covers says whether l already keeps its object at least as long and as
// strictly as want: Lock then has nothing to do.
func (l Lock) Covers(want Lock) bool {
	if want.LegalHold && !l.LegalHold {
		return false
	}
	if want.Until.IsZero() {
		return true
	}
	return !l.Until.Before(want.Until) && (l.Mode == want.Mode || l.Mode == LockCompliance)
}

// Extend returns the lock that keeps both what l and want keep: the later
// date, the stricter mode, a hold when either has one. Locks extend, never
// shorten.
func (l Lock) Extend(want Lock) Lock {
	out := l
	if want.Until.After(out.Until) {
		out.Until = want.Until
	}
	if out.Mode == "" || want.Mode == LockCompliance {
		out.Mode = want.Mode
	}
	out.LegalHold = l.LegalHold || want.LegalHold
	return out
}

// String says what l keeps, for messages.
func (l Lock) String() string {
	var s string
	if !l.Until.IsZero() {
		s = fmt.Sprintf("locked until %s (%s)", l.Until.UTC().Format(time.RFC3339), l.Mode)
	}
	if l.LegalHold {
		if s != "" {
			s += ", "
		}
		s += "under legal hold"
	}
	if s == "" {
		return "not locked"
	}
	return s
}

// Validate checks a lock asked for.
func (l Lock) Validate() error {
	if l.Until.IsZero() {
		return nil
	}
	if l.Mode != LockGovernance && l.Mode != LockCompliance {
		return fmt.Errorf("lock mode %q: must be one of %v", l.Mode, LockModes())
	}
	return nil
}

// ErrLocked is returned (wrapped) for a delete or a replacement of an object
// that a lock still keeps, by the stores where our code is the enforcement
// (local) and by the storage before it asks a store.
var ErrLocked = errors.New("locked")

// Locker is a Backend that keeps objects locked (Lock). A Put whose
// PutOptions carry a Lock stores the object locked in the same request; Lock
// locks one already stored.
type Locker interface {
	// LockOf returns key's lock; the zero Lock when it has none. A missing
	// key gives ErrNotExist.
	LockOf(ctx context.Context, key string) (Lock, error)
	// Lock keeps key as l says, extending what it has: a later date or a
	// stricter mode already on it is kept, never shortened (Extend).
	Lock(ctx context.Context, key string, l Lock) error
}

// ErrNoLocks is the error of a wrapper's Lock or LockOf over a store that
// does not lock objects (LockerOf says which do).
var ErrNoLocks = Permanent(errors.New("this store does not lock objects"))

// LockerOf returns b as a Locker when the store behind its wrappers locks
// objects; every wrapper passes Lock and LockOf through.
func LockerOf(b Backend) (Locker, bool) {
	if _, ok := Innermost(b).(Locker); !ok {
		return nil, false
	}
	l, ok := b.(Locker)
	return l, ok
}

// ExtendLock is Locker.Lock for a store whose lock request sets the lock it
// is given (it would shorten one): it reads the lock first, and sends only
// what extends it.
func ExtendLock(ctx context.Context, key string, want Lock, get func(context.Context, string) (Lock, error), set func(ctx context.Context, key string, l Lock, had Lock) error) error {
	had, err := get(ctx, key)
	if err != nil {
		return err
	}
	if had.Covers(want) {
		return nil
	}
	return set(ctx, key, had.Extend(want), had)
}
