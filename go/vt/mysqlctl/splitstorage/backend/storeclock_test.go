package backend_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// TestClockWatch: a ClockWatch is the store's time as the Date of its
// newest answer gives it, plus the time since (a store three years ahead
// of this host stays so); an answer without a Date gives none, and a
// request sent without a watch is answered as ever.
func TestClockWatch(t *testing.T) {
	storeTime := time.Now().UTC().AddDate(3, 0, 0).Truncate(time.Second)
	date := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if date {
			w.Header().Set("Date", storeTime.Format(http.TimeFormat))
		} else {
			w.Header()["Date"] = nil // net/http's server leaves it out
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer srv.Close()
	client := backend.NewHTTPClient(nil)
	get := func(ctx context.Context) {
		req, err := http.NewRequestWithContext(ctx, http.MethodHead, srv.URL+"/k", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
	}

	get(context.Background())
	ctx, w := backend.WatchClock(context.Background())
	_, ok := w.Now()
	require.False(t, ok, "no answer yet")
	before := time.Now()
	get(ctx)
	time.Sleep(50 * time.Millisecond)
	now, ok := w.Now()
	require.True(t, ok)
	require.WithinRange(t, now, storeTime.Add(50*time.Millisecond), storeTime.Add(time.Since(before)))

	date = false
	ctx, w = backend.WatchClock(context.Background())
	get(ctx)
	_, ok = w.Now()
	require.False(t, ok, "an answer without a Date")
}
