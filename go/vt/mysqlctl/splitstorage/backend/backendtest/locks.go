package backendtest

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// RunLocker checks that b keeps the contract of backend.Locker, asking
// through our code only (whether the store itself enforces the lock is each
// store's own test): a Put with a lock stores it, Lock extends and never
// shortens, a stricter mode and a legal hold are kept. Its objects stay
// locked for an hour: b must be a throwaway store.
func RunLocker(t *testing.T, b backend.Backend) {
	ctx := context.Background()
	lk, ok := backend.LockerOf(b)
	require.True(t, ok, "%s does not lock objects", b)
	root := "locktest-" + randomHex(4) + "/"
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	put := func(key string, l backend.Lock) {
		body := []byte("kept " + key)
		require.NoError(t, b.Put(ctx, root+key, bytes.NewReader(body), int64(len(body)),
			backend.PutOptions{Lock: l, CRC32C: crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))}))
	}
	lockOf := func(key string) backend.Lock {
		t.Helper()
		l, err := lk.LockOf(ctx, root+key)
		require.NoError(t, err, key)
		l.Until = l.Until.UTC()
		return l
	}

	put("free", backend.Lock{})
	require.True(t, lockOf("free").IsZero(), "an object put without a lock has one: %v", lockOf("free"))
	gov := backend.Lock{Until: until, Mode: backend.LockGovernance}
	put("gov", gov)
	require.Equal(t, gov, lockOf("gov"))

	// An earlier date keeps the later one; a later one extends it; a
	// stricter mode is taken, a looser one ignored.
	require.NoError(t, lk.Lock(ctx, root+"gov", backend.Lock{Until: until.Add(-time.Minute), Mode: backend.LockGovernance}))
	require.Equal(t, gov, lockOf("gov"))
	later := backend.Lock{Until: until.Add(time.Minute), Mode: backend.LockCompliance}
	require.NoError(t, lk.Lock(ctx, root+"gov", later))
	require.Equal(t, later, lockOf("gov"))
	require.NoError(t, lk.Lock(ctx, root+"gov", backend.Lock{Until: until.Add(2 * time.Minute), Mode: backend.LockGovernance}))
	require.Equal(t, backend.Lock{Until: until.Add(2 * time.Minute), Mode: backend.LockCompliance}, lockOf("gov"))

	// A legal hold alone, then a date beside it.
	require.NoError(t, lk.Lock(ctx, root+"free", backend.Lock{LegalHold: true}))
	require.Equal(t, backend.Lock{LegalHold: true}, lockOf("free"))
	require.NoError(t, lk.Lock(ctx, root+"free", gov))
	require.Equal(t, backend.Lock{Until: until, Mode: backend.LockGovernance, LegalHold: true}, lockOf("free"))

	_, err := lk.LockOf(ctx, root+"missing")
	require.True(t, errors.Is(err, backend.ErrNotExist), "the lock of a missing object: %v", err)
}
