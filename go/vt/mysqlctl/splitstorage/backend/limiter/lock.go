package limiter

import (
	"context"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

var _ backend.Locker = (*Backend)(nil)

// LockOf passes to the backend wrapped: a lock moves no data.
func (l *Backend) LockOf(ctx context.Context, key string) (backend.Lock, error) {
	lk, ok := backend.LockerOf(l.Backend)
	if !ok {
		return backend.Lock{}, backend.ErrNoLocks
	}
	return lk.LockOf(ctx, key)
}

// Lock passes to the backend wrapped.
func (l *Backend) Lock(ctx context.Context, key string, want backend.Lock) error {
	lk, ok := backend.LockerOf(l.Backend)
	if !ok {
		return backend.ErrNoLocks
	}
	return lk.Lock(ctx, key, want)
}
