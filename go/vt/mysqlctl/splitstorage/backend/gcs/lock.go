package gcs

import (
	"context"

	"cloud.google.com/go/storage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// GCS object retention (a bucket created with object retention enabled):
// an object keeps its bytes until its retain-until date; "Unlocked" (our
// governance) can be shortened by a principal allowed to override it,
// "Locked" (compliance) by no one. A temporary hold (our legal hold) keeps
// it whatever the date. fake-gcs-server stores but does not enforce them:
// GCS locks are proven by the requests sent, not against an enforcing
// server.

var _ backend.Locker = (*Backend)(nil)

func gcsRetention(l backend.Lock) *storage.ObjectRetention {
	if l.Until.IsZero() {
		return nil
	}
	mode := "Unlocked"
	if l.Mode == backend.LockCompliance {
		mode = "Locked"
	}
	return &storage.ObjectRetention{Mode: mode, RetainUntil: l.Until.UTC()}
}

func lockOfAttrs(a *storage.ObjectAttrs) backend.Lock {
	var l backend.Lock
	if r := a.Retention; r != nil && !r.RetainUntil.IsZero() {
		l.Until, l.Mode = r.RetainUntil.UTC(), backend.LockGovernance
		if r.Mode == "Locked" {
			l.Mode = backend.LockCompliance
		}
	}
	l.LegalHold = a.TemporaryHold
	return l
}

// LockOf reads the object's retention and temporary hold.
func (b *Backend) LockOf(ctx context.Context, key string) (backend.Lock, error) {
	a, err := b.bucket.Object(b.prefix + key).Attrs(ctx)
	if err != nil {
		return backend.Lock{}, gcsErr(err)
	}
	return lockOfAttrs(a), nil
}

// Lock extends the object's retention and sets its temporary hold, in one
// metadata update.
func (b *Backend) Lock(ctx context.Context, key string, want backend.Lock) error {
	return backend.ExtendLock(ctx, key, want, b.LockOf, func(ctx context.Context, key string, l, had backend.Lock) error {
		var up storage.ObjectAttrsToUpdate
		if !l.Until.Equal(had.Until) || l.Mode != had.Mode {
			up.Retention = gcsRetention(l)
		}
		if l.LegalHold && !had.LegalHold {
			up.TemporaryHold = true
		}
		_, err := b.bucket.Object(b.prefix+key).Update(ctx, up)
		return gcsErr(err)
	})
}

// lockWriter sets a Put's lock on the object it writes.
func lockWriter(w *storage.Writer, l backend.Lock) {
	w.Retention = gcsRetention(l)
	w.TemporaryHold = l.LegalHold
}
