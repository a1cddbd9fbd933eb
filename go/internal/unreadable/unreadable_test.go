package unreadable

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"vitess.io/vitess/go/vt/vterrors"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// TestAccessOrNot: what could not be read, reached or accessed, however it
// is wrapped (fmt's %w, errors.Join, a Vitess error's Cause), against what
// says the data is wrong.
func TestAccessOrNot(t *testing.T) {
	denied := &fs.PathError{Op: "open", Path: "/r/ks/0/b/lane-001.part-00000001", Err: syscall.EACCES}
	access := map[string]error{
		"permission":               denied,
		"wrapped by vterrors":      vterrors.Wrapf(fmt.Errorf("lane 1: %w", denied), "backup b"),
		"joined":                   errors.Join(errors.New("checksum mismatch"), fmt.Errorf("part 2: %w", denied)),
		"deadline":                 fmt.Errorf("reading: %w", context.DeadlineExceeded),
		"interrupt":                vterrors.Wrap(context.Canceled, "restore"),
		"i/o timeout":              &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded},
		"connection refused":       fmt.Errorf("dial: %w", syscall.ECONNREFUSED),
		"a store's 403":            fmt.Errorf("download: %w", Error(errors.New("api error AccessDenied"))),
		"a Vitess code":            vterrors.Errorf(vtrpcpb.Code_UNAVAILABLE, "storage unavailable"),
		"a marker deep in a chain": vterrors.Wrap(fmt.Errorf("x: %w", marker{}), "y"),
		// The file systems a root is read through, failing on the way.
		"NFS, stale":             &fs.PathError{Op: "read", Path: "/nfs/ks/0/b/MANIFEST.part-00000001", Err: syscall.ESTALE},
		"a disk or a FUSE mount": &fs.PathError{Op: "read", Path: "/mnt/bucket/ks/0/b/lane-000.part-00000001", Err: syscall.EIO},
		"FUSE gone":              &fs.PathError{Op: "open", Path: "/mnt/bucket/ks/0/b/MANIFEST.part-00000001", Err: syscall.ENOTCONN},
		"a link loop":            &fs.PathError{Op: "open", Path: "/r/ks/0/b/MANIFEST.part-00000001", Err: syscall.ELOOP},
	}
	for name, err := range access {
		assert.True(t, Is(err), name)
	}
	damage := map[string]error{
		"nil":            nil,
		"checksum":       errors.New("checksum mismatch: expected crc32c 1, found 2"),
		"truncated":      fmt.Errorf("lane 1: %w", io.ErrUnexpectedEOF),
		"a missing part": fmt.Errorf("part missing: %w", fs.ErrNotExist),
		// A file not there, as the OS says it: an errno satisfies
		// net.Error, but says nothing of access.
		"a file not there":   &fs.PathError{Op: "open", Path: "/r/ks/0/b/MANIFEST", Err: syscall.ENOENT},
		"a data-loss code":   vterrors.Errorf(vtrpcpb.Code_DATA_LOSS, "lane 0: read 5 bytes, the MANIFEST says 6"),
		"a text that quotes": errors.New("permission denied"), // only a message: nothing says so
	}
	for name, err := range damage {
		assert.False(t, Is(err), name)
	}
}

type marker struct{}

func (marker) Error() string    { return "this host's keys" }
func (marker) Unreadable() bool { return true }

// TestMissing: a file not there, however wrapped (Vitess's errors by their
// Cause), and nothing else.
func TestMissing(t *testing.T) {
	notThere := &fs.PathError{Op: "open", Path: "/r/ks/0/b/backup.xbstream.gz-001", Err: syscall.ENOENT}
	assert.True(t, Missing(notThere))
	assert.True(t, Missing(vterrors.Wrap(fmt.Errorf("copying: %w", notThere), "backup b")))
	assert.True(t, Missing(fmt.Errorf("x: %w", fs.ErrNotExist)))
	assert.False(t, Missing(&fs.PathError{Op: "open", Path: "/r/x", Err: syscall.EACCES}))
	assert.False(t, Missing(nil))
}

// TestNoVerdictSaysWhyOrNothing: the words every report adds after an
// error that is no proof about a backup, and none after one that may be.
func TestNoVerdictSaysWhyOrNothing(t *testing.T) {
	damaged := errors.New("lane 1 part 3: checksum mismatch")
	full := Host(fmt.Errorf("writing ibdata1: %w", damaged), "its disk is full")
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{damaged, ""},
		{fmt.Errorf("restore: %w", full), "this host could not finish it (its disk is full): nothing says the backup is damaged"},
		{fmt.Errorf("reading: %w", context.DeadlineExceeded), "it could not be read or reached: nothing says the backup is damaged"},
		// Its own text says what to correct, though it holds this host's failure.
		{fmt.Errorf("prepare: %w", contradicted{full}), ""},
	} {
		assert.Equal(t, c.want, NoVerdict(c.err), "%v", c.err)
	}
}

type contradicted struct{ error }

func (c contradicted) Unwrap() error      { return c.error }
func (c contradicted) Contradicted() bool { return true }
