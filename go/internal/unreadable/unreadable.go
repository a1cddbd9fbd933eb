// Package unreadable tells an error that says something could not be read,
// reached or accessed (a permission, credentials, a timeout, an interrupt,
// the network, this host's keys or decompressor) from one that says what was
// read is wrong; this host failing at its part (a full disk, no memory, a
// program killed from outside: HostFault) counts with the first.
// The first is never damage: no command records it as a failed check,
// quarantines a backup for it, or lets it change what restores and
// retention pick; the CLI exits 3 for it.
package unreadable

import (
	"context"
	"io/fs"
	"net"
	"os"
	"syscall"

	"github.com/go-sql-driver/mysql"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// Marker is implemented by an error that knows it is about access, where
// its cause alone does not say so (an object store's 403, a host without
// the backup's keys).
type Marker interface{ Unreadable() bool }

// Is reports whether err, or anything it wraps (through Unwrap or a Vitess
// error's Cause), says that something could not be read, reached or
// accessed.
func Is(err error) bool {
	for _, e := range chain(err) {
		if access(e) {
			return true
		}
	}
	return false
}

func access(e error) bool {
	if m, ok := e.(Marker); ok && m.Unreadable() {
		return true
	}
	for _, target := range []error{context.Canceled, context.DeadlineExceeded, os.ErrDeadlineExceeded, fs.ErrPermission} {
		if e == target {
			return true
		}
	}
	if hostWhy(e) != "" {
		return true
	}
	if me, ok := e.(*mysql.MySQLError); ok {
		return serverRefusals[me.Number]
	}
	// An errno is access only for these (or this host's: hostErrnos):
	// syscall.Errno also satisfies net.Error, and a file not there (ENOENT)
	// is not access.
	if se, ok := e.(syscall.Errno); ok {
		return accessErrnos[se]
	}
	if _, ok := e.(net.Error); ok {
		return true
	}
	if c, ok := e.(interface{ ErrorCode() vtrpcpb.Code }); ok {
		switch c.ErrorCode() {
		case vtrpcpb.Code_CANCELED, vtrpcpb.Code_DEADLINE_EXCEEDED, vtrpcpb.Code_UNAVAILABLE, vtrpcpb.Code_PERMISSION_DENIED,
			vtrpcpb.Code_UNAUTHENTICATED:
			return true
		}
	}
	return false
}

// accessErrnos are the OS's errors that say the way to the data failed,
// not what the data is: permissions, the network, and the file systems a
// backup root is often read through (NFS, a FUSE mount of a bucket), which
// report a server or a connection gone as an input/output error (EIO), a
// stale handle (ESTALE) or a transport not connected (ENOTCONN). A symbolic
// link loop (ELOOP) is a path that cannot be followed: the split storage
// writes no links. The read may succeed again, on this host or another: a
// backup is never judged from them.
var accessErrnos = map[syscall.Errno]bool{
	syscall.EACCES: true, syscall.EPERM: true,
	syscall.ECONNREFUSED: true, syscall.ECONNRESET: true, syscall.ECONNABORTED: true, syscall.EHOSTUNREACH: true,
	syscall.ENETUNREACH: true, syscall.ENETDOWN: true, syscall.EHOSTDOWN: true, syscall.ETIMEDOUT: true,
	syscall.EIO: true, syscall.ESTALE: true, syscall.ENOTCONN: true, syscall.EREMOTEIO: true, syscall.ENOLINK: true,
	syscall.ECOMM: true, syscall.ELOOP: true,
}

// Missing reports whether err, or anything it wraps (Vitess's errors by
// their Cause too), says that a file does not exist: a reader reached the
// place and found nothing, which is about what is there, not about access.
func Missing(err error) bool {
	for _, e := range chain(err) {
		if e == fs.ErrNotExist || e == syscall.ENOENT {
			return true
		}
	}
	return false
}

// chain is err and everything it wraps, depth first.
func chain(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(out) > 1000 {
			return
		}
		out = append(out, e)
		switch w := e.(type) {
		case interface{ Unwrap() []error }:
			for _, inner := range w.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(w.Unwrap())
		case interface{ Cause() error }:
			walk(w.Cause())
		}
	}
	walk(err)
	return out
}

// Error marks err as being about access.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return marked{err}
}

type marked struct{ err error }

func (m marked) Error() string    { return m.err.Error() }
func (m marked) Unwrap() error    { return m.err }
func (m marked) Unreadable() bool { return true }

// Contradicted is implemented by an error that marks a request the data
// or the host contradicts (flagvalue.Contradiction): its own text says what
// to correct, and NoVerdict adds nothing to it.
type Contradicted interface{ Contradicted() bool }

// NoVerdict says, after err's own text, why err is no proof about a backup:
// this host could not finish (HostFault, with its cause) or something could
// not be read or reached (Is); "" for an error that may be a verdict, and
// for a contradicted request (Contradicted). Every place that reports a
// failure to an operator (the CLI's FAIL line, a tablet's or vtbackup's
// restore, vtbackup's test restore) says it so, and no reader takes this
// host's failure for damage.
func NoVerdict(err error) string {
	for _, e := range chain(err) {
		if c, ok := e.(Contradicted); ok && c.Contradicted() {
			return ""
		}
	}
	if why := HostFault(err); why != "" {
		return "this host could not finish it (" + why + "): nothing says the backup is damaged"
	}
	if Is(err) {
		return "it could not be read or reached: nothing says the backup is damaged"
	}
	return ""
}
