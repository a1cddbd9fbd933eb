package local_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"vitess.io/vitess/go/vt/logutil"
	stats "vitess.io/vitess/go/vt/mysqlctl/backupstats"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/retry"
)

// fileBody is a Put body backed by a file, as a spooled part is.
type fileBody struct {
	*io.SectionReader
	f *os.File
}

func (b fileBody) BodyFile() *os.File { return b.f }

// nameless returns a file without a name in dir holding data, or skips when
// dir's file system has no O_TMPFILE.
func nameless(t *testing.T, dir string, data []byte) *os.File {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		t.Skipf("no O_TMPFILE in %s: %v", dir, err)
	}
	f := os.NewFile(uintptr(fd), "nameless")
	t.Cleanup(func() { f.Close() })
	_, err = f.Write(data)
	require.NoError(t, err)
	return f
}

func stored(t *testing.T, root, key string) (os.FileInfo, []byte) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(root, key))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, key))
	require.NoError(t, err)
	return fi, data
}

// TestPutLinksANamelessFile: a spooled part on the root's file system
// becomes the object itself (same inode, no copy), also through the retry
// wrapper, with the mode of a copied object; a file with a name, a file of
// another size and a wrapper that must see the bytes all get a copy.
func TestPutLinksANamelessFile(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	l, err := local.New(root)
	require.NoError(t, err)
	data := bytes.Repeat([]byte("part"), 1<<16)
	size := int64(len(data))
	pol := retry.Policy{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, RequestTimeout: time.Minute}
	retried := retry.New(l, pol, logutil.NewMemoryLogger(), stats.NoStats(), nil)

	for name, be := range map[string]backend.Backend{"direct": l, "retry": retried} {
		t.Run(name, func(t *testing.T) {
			f := nameless(t, root, data)
			key := "bs/" + name + "/linked"
			require.NoError(t, be.Put(ctx, key, fileBody{io.NewSectionReader(f, 0, size), f}, size, backend.PutOptions{}))
			fi, got := stored(t, root, key)
			require.Equal(t, data, got)
			own, err := f.Stat()
			require.NoError(t, err)
			require.True(t, os.SameFile(own, fi), "the nameless file was copied, not linked")
			require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())

			// With IfNotExists, a second Put of another nameless file fails
			// and leaves the first object.
			g := nameless(t, root, []byte("other"))
			err = be.Put(ctx, key, fileBody{io.NewSectionReader(g, 0, 5), g}, 5, backend.PutOptions{IfNotExists: true})
			require.ErrorIs(t, err, backend.ErrExists)
			_, got = stored(t, root, key)
			require.Equal(t, data, got)
		})
	}

	t.Run("named file is copied", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "named")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		f, err := os.Open(p)
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, l.Put(ctx, "bs/named", fileBody{io.NewSectionReader(f, 0, size), f}, size, backend.PutOptions{}))
		fi, got := stored(t, root, "bs/named")
		require.Equal(t, data, got)
		own, err := f.Stat()
		require.NoError(t, err)
		require.False(t, os.SameFile(own, fi), "a file with a name must never become an object")
	})

	t.Run("a body shorter than the file is copied", func(t *testing.T) {
		f := nameless(t, root, data)
		require.NoError(t, l.Put(ctx, "bs/short", fileBody{io.NewSectionReader(f, 0, 100), f}, 100, backend.PutOptions{}))
		_, got := stored(t, root, "bs/short")
		require.Equal(t, data[:100], got)
	})

	t.Run("another file system is copied", func(t *testing.T) {
		var a, b unix.Stat_t
		if unix.Stat("/dev/shm", &a) != nil || unix.Stat(root, &b) != nil || a.Dev == b.Dev {
			t.Skip("no /dev/shm on another file system than the test's temporary directory")
		}
		f := nameless(t, "/dev/shm", data)
		require.NoError(t, l.Put(ctx, "bs/elsewhere", fileBody{io.NewSectionReader(f, 0, size), f}, size, backend.PutOptions{}))
		_, got := stored(t, root, "bs/elsewhere")
		require.Equal(t, data, got)
	})

	t.Run("a linked file that lost its name again is copied", func(t *testing.T) {
		// What a retry after a failed rename sees: O_TMPFILE links once.
		f := nameless(t, root, data)
		require.NoError(t, l.Put(ctx, "bs/once", fileBody{io.NewSectionReader(f, 0, size), f}, size, backend.PutOptions{}))
		require.NoError(t, l.Delete(ctx, "bs/once"))
		require.NoError(t, l.Put(ctx, "bs/twice", fileBody{io.NewSectionReader(f, 0, size), f}, size, backend.PutOptions{}))
		_, got := stored(t, root, "bs/twice")
		require.Equal(t, data, got)
	})
}
