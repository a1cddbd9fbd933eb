package retry

import (
	"context"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

var _ backend.Locker = (*Backend)(nil)

// LockOf retries the wrapped backend's LockOf.
func (r *Backend) LockOf(ctx context.Context, key string) (backend.Lock, error) {
	lk, ok := backend.LockerOf(r.Backend)
	if !ok {
		return backend.Lock{}, backend.ErrNoLocks
	}
	var out backend.Lock
	err := r.do(ctx, "lock-of", key, func(ctx context.Context, _ func()) error {
		var err error
		out, err = lk.LockOf(ctx, key)
		return err
	})
	return out, err
}

// Lock retries the wrapped backend's Lock (which only extends: a retry of
// one that took effect changes nothing).
func (r *Backend) Lock(ctx context.Context, key string, l backend.Lock) error {
	lk, ok := backend.LockerOf(r.Backend)
	if !ok {
		return backend.ErrNoLocks
	}
	return r.do(ctx, "lock", key, func(ctx context.Context, _ func()) error {
		return lk.Lock(ctx, key, l)
	})
}
