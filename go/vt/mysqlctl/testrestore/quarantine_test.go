package testrestore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// TestQuarantineTakesTheDamagedBase: a failed test restore whose record
// names a damaged base quarantines the base, which takes every backup that
// needs it (the tested one among them) out of the list, and says which it
// quarantined; a damaged base no longer listed (retired, kept as a base)
// leaves the tested backup quarantined for itself; a record without one
// quarantines the tested backup alone.
func TestQuarantineTakesTheDamagedBase(t *testing.T) {
	ctx := context.Background()
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	s, err := splitstorage.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	const dir = "ks/0"
	backup := func(name, base string) *splitstorage.Handle {
		bh, err := s.StartBackup(ctx, dir, name)
		require.NoError(t, err)
		if base != "" {
			require.NoError(t, bh.(*splitstorage.Handle).SetBase(ctx, base))
		}
		w, err := bh.AddFile(ctx, "f", 3)
		require.NoError(t, err)
		_, err = w.Write([]byte("abc"))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.NoError(t, bh.EndBackup(ctx))
		return bh.(*splitstorage.Handle)
	}
	listed := func() (names []string, quarantined map[string]string) {
		bhs, err := s.ListBackups(ctx, dir)
		require.NoError(t, err)
		for _, bh := range bhs {
			names = append(names, bh.Name())
		}
		inc, err := s.ListIncomplete(ctx, dir)
		require.NoError(t, err)
		quarantined = map[string]string{}
		for _, b := range inc {
			quarantined[b.Name] = b.Quarantined
		}
		return names, quarantined
	}
	started := time.Date(2026, 12, 4, 16, 31, 33, 0, time.UTC)
	failed := func(damagedBase string) Record {
		return Record{Version: 1, Outcome: Failed, Started: started, Error: "checksum mismatch", DamagedBase: damagedBase}
	}

	backup("a-full", "")
	backup("b-delta", "a-full")
	c := backup("c-delta", "b-delta")
	backup("d-delta", "c-delta")
	which, err := Quarantine(ctx, c, failed("b-delta"))
	require.NoError(t, err)
	assert.Equal(t, "b-delta", which)
	names, quarantined := listed()
	assert.Equal(t, []string{"a-full"}, names)
	assert.Equal(t, "found damaged by the test restore of c-delta (2026-12-04T16:31:33Z): checksum mismatch", quarantined["b-delta"])
	assert.Equal(t, "its base b-delta is quarantined: found damaged by the test restore of c-delta (2026-12-04T16:31:33Z): checksum mismatch",
		quarantined["c-delta"])
	assert.Contains(t, quarantined["d-delta"], "its base c-delta is quarantined: its base b-delta is quarantined: ")
	released, err := s.Release(ctx, dir, "b-delta")
	require.NoError(t, err)
	assert.Equal(t, []string{"c-delta", "d-delta"}, released)

	// b-delta retired: out of the list, kept as c-delta's base.
	require.NoError(t, s.RemoveBackup(ctx, dir, "b-delta"))
	names, _ = listed()
	require.Equal(t, []string{"a-full", "c-delta", "d-delta"}, names)
	which, err = Quarantine(ctx, c, failed("b-delta"))
	require.NoError(t, err)
	assert.Equal(t, "c-delta", which)
	names, quarantined = listed()
	assert.Equal(t, []string{"a-full"}, names)
	assert.Equal(t, "test restore failed 2026-12-04T16:31:33Z: checksum mismatch", quarantined["c-delta"])
	assert.Empty(t, quarantined["b-delta"], "the retired base is not quarantined")
	_, err = s.Release(ctx, dir, "c-delta")
	require.NoError(t, err)

	which, err = Quarantine(ctx, c, failed(""))
	require.NoError(t, err)
	assert.Equal(t, "c-delta", which)
	names, _ = listed()
	assert.Equal(t, []string{"a-full"}, names)
}
