package fifobackupengine

import (
	"context"
	"errors"
	"io"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// A restore of an incremental backup reads every backup of its chain, and a
// failure that proves one of them damaged is that backup's, which may not
// be the one the restore was asked for. Such a failure carries the name of
// the backup it proves damaged (DamagedBackup), so that what judges a
// restore judges the backup the proof is about: a test restore of a delta
// whose base's lane is damaged quarantines the base, and with it every
// backup that needs it, instead of the delta alone, which would leave the
// damaged base for the next restore to pick.

// damaged is an error that proves backup's own stored data damaged.
type damaged struct {
	backup string
	err    error
}

func (e *damaged) Error() string { return e.err.Error() }
func (e *damaged) Unwrap() error { return e.err }

// damageOf marks err as proof that backup's stored data is damaged. An
// error that unreadable.Is proves nothing, and is returned as it is.
func damageOf(backup string, err error) error {
	if err == nil || unreadable.Is(err) {
		return err
	}
	return &damaged{backup: backup, err: err}
}

// DamagedBackup names the backup whose own stored data err proves damaged:
// one of a restore's chain, found damaged by reading it (its MANIFEST, a
// lane not stored whole, a lane that does not decode, check or parse). ""
// where err proves nothing (unreadable) or cannot be laid on one backup: a
// prepare that failed, a delta that does not follow its base, the restore's
// own disk.
func DamagedBackup(err error) string {
	var d *damaged
	if errors.As(err, &d) && !unreadable.Is(err) {
		return d.backup
	}
	return ""
}

// laneFault is an error in reading a lane: opening it, its stored bytes,
// their decompression, their checks.
type laneFault struct{ err error }

func (e *laneFault) Error() string { return e.err.Error() }
func (e *laneFault) Unwrap() error { return e.err }

// markLaneFaults marks every error of opening and reading lane as a
// laneFault (not the end of the lane, nor a cancellation), so that an
// extraction's failure tells the lane's bytes from its own disk.
func markLaneFaults(lane xbstream.Lane) xbstream.Lane {
	return func(ctx context.Context) (io.ReadCloser, error) {
		rc, err := lane(ctx)
		if err != nil {
			return nil, asLaneFault(err)
		}
		return laneFaults{rc}, nil
	}
}

type laneFaults struct{ io.ReadCloser }

func (r laneFaults) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	return n, asLaneFault(err)
}

func asLaneFault(err error) error {
	if err == nil || err == io.EOF || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &laneFault{err}
}

// inLanes says whether an extraction's err is in the lanes' bytes: read
// from them (laneFault), or what xbstream found in what they gave.
func inLanes(err error) bool {
	var f *laneFault
	var parse *xbstream.FormatError
	if errors.As(err, &f) || errors.As(err, &parse) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	for _, e := range []error{xbstream.ErrBadMagic, xbstream.ErrUnknownType, xbstream.ErrChecksum, xbstream.ErrChunkTooLarge, xbstream.ErrPathTooLong,
		xbstream.ErrBadSparseMap, xbstream.ErrBadPath, xbstream.ErrGap, xbstream.ErrOverlap, xbstream.ErrOutOfOrder, xbstream.ErrReappears,
		xbstream.ErrSequence, xbstream.ErrStreamCut} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// laneDamage is an extraction's err, marked as proof that backup is damaged
// where it is in the lanes' bytes.
func laneDamage(backup string, err error) error {
	if inLanes(err) {
		return damageOf(backup, err)
	}
	return err
}
