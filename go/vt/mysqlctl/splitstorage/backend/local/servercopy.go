package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// CopyFrom hard-links the object of another file backend on the same file
// system (objects are never written in place: Put renames a new file over)
// for a move (opts.Moving); a copy gets bytes of its own, so that damage to
// one is never damage to both.
func (l *Backend) CopyFrom(ctx context.Context, src backend.Backend, key string, size int64, opts backend.PutOptions) (bool, error) {
	sl, ok := src.(*Backend)
	if !ok || !opts.Moving || !opts.Lock.IsZero() {
		return false, nil // a locked copy is a file of its own: a link shares the source's lock
	}
	from, err := sl.path(key)
	if err != nil {
		return false, err
	}
	if lk, err := lockAt(from); err != nil || !lk.IsZero() {
		return false, nil
	}
	to, err := l.path(key)
	if err != nil {
		return false, err
	}
	if err := l.mkdirs(filepath.Dir(to)); err != nil {
		return false, localErr(err)
	}
	if err := os.Remove(to); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, localErr(err)
	}
	if err := os.Link(from, to); err != nil {
		if errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EMLINK) {
			return false, nil // another file system, or no links there: stream
		}
		return false, localErr(err)
	}
	return true, localErr(syncDir(filepath.Dir(to)))
}
