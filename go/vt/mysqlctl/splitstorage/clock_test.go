package splitstorage_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestTheStoresClock: Now is the write time each store gives a probe (the
// servers here run on this host's clock: within a few seconds of it, at
// S3's and Azure's one-second precision), and the probe is gone after; a
// root without its root identity gets no probe. SeenNow, which writes
// nothing, is the time a network store's answer gives; local disk gives
// none.
func TestTheStoresClock(t *testing.T) {
	for _, kind := range []string{splitstorage.BackendFile, splitstorage.BackendS3, splitstorage.BackendGCS, splitstorage.BackendAzure} {
		t.Run(kind, func(t *testing.T) {
			srv := splitstoragetest.Start(t, kind)
			srv.Setenv(t)
			s := newStorage(t, srv.Config)
			ctx := context.Background()
			be, err := s.RawBackendForTest(ctx)
			require.NoError(t, err)
			_, err = s.Now(ctx)
			require.ErrorContains(t, err, "the store's clock is read from a probe written beside the root identity .split-storage, which "+
				be.String()+" does not hold yet (the next backup or copy writes it)")
			left, err := be.List(ctx, "", false)
			require.NoError(t, err)
			require.Empty(t, left, "a root without its identity gets no probe")

			// Read without writing: the time the store's answer gives,
			// even in a root without its identity; none on local disk.
			before := time.Now()
			seen, err := s.SeenNow(ctx)
			if kind == splitstorage.BackendFile {
				require.ErrorIs(t, err, splitstorage.ErrNoClockSeen)
			} else {
				require.NoError(t, err)
				require.WithinRange(t, seen, before.Add(-2*time.Second), time.Now().Add(2*time.Second))
			}
			left, err = be.List(ctx, "", false)
			require.NoError(t, err)
			require.Empty(t, left, "reading the clock wrote nothing")

			sealedBackup(t, s, "ks/0", "b")
			before = time.Now()
			now, err := s.Now(ctx)
			require.NoError(t, err)
			require.WithinRange(t, now, before.Add(-2*time.Second), time.Now().Add(2*time.Second))
			left, err = be.List(ctx, ".fleet/clock/", false)
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}
