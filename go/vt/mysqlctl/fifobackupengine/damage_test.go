package fifobackupengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// TestAnExtractionFailureIsTheBackupsWhereItIsInItsLanes: an extraction's
// failure names the backup it proves damaged only where it is in the lanes'
// bytes (a read of a lane, what xbstream found in them), never where it is
// the restore's own disk or something that could not be read, and keeps its
// message whatever wraps it.
func TestAnExtractionFailureIsTheBackupsWhereItIsInItsLanes(t *testing.T) {
	failing := func(err error) xbstream.Lane {
		return markLaneFaults(func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(io.MultiReader(strings.NewReader("x"), errReader{err})), nil
		})
	}
	readErr := func(lane xbstream.Lane) error {
		rc, err := lane(context.Background())
		require.NoError(t, err)
		_, err = io.ReadAll(rc)
		return err
	}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"a part's checksum", readErr(failing(errors.New("split storage: part 1: checksum mismatch"))), "b1"},
		{"a decompressor", readErr(failing(fmt.Errorf("zstd: %w", io.ErrUnexpectedEOF))), "b1"},
		{"a chunk's CRC", fmt.Errorf("lane 0: %w", xbstream.ErrChecksum), "b1"},
		{"a truncated lane", fmt.Errorf("db/t.ibd: %w: no end-of-file chunk", io.ErrUnexpectedEOF), "b1"},
		{"a chunk that does not parse", fmt.Errorf("lane 1: %w", &xbstream.FormatError{Offset: 7, Msg: "bad header"}), "b1"},
		{"a chunk whose lane could not be read", fmt.Errorf("lane 1: %w", &xbstream.FormatError{Offset: 7, Msg: "reading the payload",
			Err: unreadable.Error(errors.New("timeout"))}), ""},
		{"a part that could not be read", readErr(failing(unreadable.Error(errors.New("403 Forbidden")))), ""},
		{"the restore's disk full", &fs.PathError{Op: "write", Path: "/staging/db/t.ibd", Err: syscall.ENOSPC}, ""},
		{"the restore's disk failing", &fs.PathError{Op: "write", Path: "/staging/db/t.ibd", Err: syscall.EIO}, ""},
		{"a cancelled read", readErr(failing(context.Canceled)), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := errtext.Wrapf(laneDamage("b1", c.err), "incremental backup b1 (1 of 2)")
			assert.Equal(t, c.want, DamagedBackup(err))
			assert.Equal(t, "incremental backup b1 (1 of 2): "+errtext.Text(c.err), errtext.Text(err))
		})
	}
	t.Run("opening a lane", func(t *testing.T) {
		_, err := markLaneFaults(func(context.Context) (io.ReadCloser, error) {
			return nil, errors.New("lane-000.xbstream.zst: cannot open: no such part")
		})(context.Background())
		assert.Equal(t, "b1", DamagedBackup(laneDamage("b1", err)))
	})
	t.Run("judged unreadable after", func(t *testing.T) {
		err := damageOf("b1", errors.New("checksum mismatch"))
		assert.Equal(t, "b1", DamagedBackup(err))
		assert.Empty(t, DamagedBackup(unreadable.Host(err, "this host failed")), "a verdict taken back by what wraps it")
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
