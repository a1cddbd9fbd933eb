package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// hostNow is this host's clock (a test sets it off).
var hostNow = time.Now

// storeClock reads the storage's own clock (splitstorage.Storage.Now,
// which writes a probe; SeenNow, which writes nothing).
type storeClock interface {
	Now(ctx context.Context) (time.Time, error)
	SeenNow(ctx context.Context) (time.Time, error)
}

// judgingNow is the time a cleanup judges ages against (an incomplete
// backup's last write, a backup's name under --keep-within) and a lock
// for a duration runs from (a lock cannot be shortened): the storage's
// clock where it has one, since those times are the store's and the
// tablets'; this host's where it has none or it could not be read, said on
// stderr. A host whose clock is more than a minute off the storage's is
// said too: its own clock would have taken a backup still running, or one
// younger than --keep-within, for an old one, and locked for too long.
func (s *session) judgingNow() time.Time { return s.nowBy(storeClock.Now, "ages and dates") }

// viewingNow is the time a view that writes nothing judges ages against
// (ls's --max-age and --max-unproven-age, the exporter's checks): the
// storage's clock as its answer to one read gives it (a network store);
// this host's where the answers carry none (local disk: its clock is this
// host's) or it could not be read, said. Judged by a host whose clock runs
// ahead, a fresh backup was stale; behind, a stale one passed.
func (s *session) viewingNow() time.Time { return s.nowBy(storeClock.SeenNow, "ages") }

// nowBy is the storage's time as read reads it, or this host's where the
// storage has none (said where reading it failed); what names what is
// judged by it, in the notes.
func (s *session) nowBy(read func(storeClock, context.Context) (time.Time, error), what string) time.Time {
	host := hostNow()
	c, ok := has[storeClock](s.bs)
	if !ok {
		return host
	}
	now, err := read(c, s.ctx)
	switch {
	case errors.Is(err, splitstorage.ErrNoClockSeen):
		return host
	case err != nil:
		s.noteClock(fmt.Sprintf("%s are this host's clock's: %s", what, errtext.Line(err)))
		return host
	}
	switch off := host.Sub(now).Round(time.Minute); { // the store's times are whole seconds
	case off > time.Minute:
		s.noteClock(fmt.Sprintf("this host's clock is %s ahead of the storage's: %s are the storage's clock's", shortDuration(off), what))
	case off < -time.Minute:
		s.noteClock(fmt.Sprintf("this host's clock is %s behind the storage's: %s are the storage's clock's", shortDuration(-off), what))
	default:
		s.clockNote = ""
	}
	return now
}

// noteClock says note on stderr, unless it was the last one said: the
// exporter reads the clock at every refresh.
func (s *session) noteClock(note string) {
	if note != s.clockNote {
		s.o.notef("%s", note)
		s.clockNote = note
	}
}
