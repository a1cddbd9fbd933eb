package local_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/backendtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
)

func TestLockerConformance(t *testing.T) {
	b, err := local.New(t.TempDir())
	require.NoError(t, err)
	backendtest.RunLocker(t, b)
}

// TestLockedFilesAreKept: on local disk our code is the enforcement: a
// locked file is read-only, and neither deleted nor replaced until its date;
// once the date has passed it goes like any other.
func TestLockedFilesAreKept(t *testing.T) {
	root := t.TempDir()
	b, err := local.New(root)
	require.NoError(t, err)
	ctx := context.Background()
	put := func(key string, l backend.Lock) error {
		return b.Put(ctx, key, bytes.NewReader([]byte(key)), int64(len(key)), backend.PutOptions{Lock: l})
	}
	require.NoError(t, put("d/kept", backend.Lock{Until: time.Now().Add(time.Hour), Mode: backend.LockCompliance}))
	require.NoError(t, put("d/held", backend.Lock{LegalHold: true}))
	require.NoError(t, put("d/past", backend.Lock{Until: time.Now().Add(-time.Second), Mode: backend.LockCompliance}))

	st, err := os.Stat(filepath.Join(root, "d", "kept"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o440), st.Mode().Perm(), "a locked file is read-only")
	for _, key := range []string{"d/kept", "d/held"} {
		err := b.Delete(ctx, key)
		require.True(t, errors.Is(err, backend.ErrLocked), "deleting %s: %v", key, err)
		require.ErrorContains(t, err, "deleting "+key)
		err = put(key, backend.Lock{})
		require.True(t, errors.Is(err, backend.ErrLocked), "replacing %s: %v", key, err)
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(key)))
		require.NoError(t, err)
		require.Equal(t, key, string(got), "a locked file was replaced")
	}
	require.NoError(t, b.Delete(ctx, "d/past"), "a lock whose date has passed keeps nothing")
	_, err = os.Stat(filepath.Join(root, "d", "past"))
	require.True(t, os.IsNotExist(err))
}
