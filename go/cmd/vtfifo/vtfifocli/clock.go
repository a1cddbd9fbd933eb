package vtfifocli

import (
	"context"
	"time"
)

// hostNow is this host's clock (a test sets it off).
var hostNow = time.Now

// storeClock reads the storage's own clock (splitstorage.Storage.Now).
type storeClock interface {
	Now(ctx context.Context) (time.Time, error)
}

// judgingNow is the time a cleanup judges ages against (an incomplete
// backup's last write, a backup's name under --keep-within) and a lock
// for a duration runs from (a lock cannot be shortened): the storage's
// clock where it has one, since those times are the store's and the
// tablets'; this host's where it has none or it could not be read, said on
// stderr. A host whose clock is more than a minute off the storage's is
// said too: its own clock would have taken a backup still running, or one
// younger than --keep-within, for an old one, and locked for too long.
func (s *session) judgingNow() time.Time {
	host := hostNow()
	c, ok := has[storeClock](s.bs)
	if !ok {
		return host
	}
	now, err := c.Now(s.ctx)
	if err != nil {
		s.o.notef("ages and dates are this host's clock's: %s", errText(err))
		return host
	}
	switch off := host.Sub(now); {
	case off > time.Minute:
		s.o.notef("this host's clock is %s ahead of the storage's: ages and dates are the storage's clock's", shortDuration(off))
	case off < -time.Minute:
		s.o.notef("this host's clock is %s behind the storage's: ages and dates are the storage's clock's", shortDuration(-off))
	}
	return now
}
