package testrestore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// TestRecordMovedFromAnotherBackupProvesNothing: a passed test restore
// record copied beside another backup is refused there, naming both, and
// so never makes that backup proven.
func TestRecordMovedFromAnotherBackupProvesNothing(t *testing.T) {
	ctx := context.Background()
	s, err := splitstorage.New(splitstoragetest.Local(t).Config)
	require.NoError(t, err)
	defer s.Close()
	a := splitstoragetest.Plant(t, s, "ks/0", "a", "{}")
	b := splitstoragetest.Plant(t, s, "ks/0", "b", "{}")
	doc := []byte(`{"version":1,"backup":"ks/0/a","outcome":"passed","started":"2026-11-27T00:00:00Z","duration":"1s"}`)
	require.NoError(t, a.(*splitstorage.Handle).PutSidecar(ctx, testrestore.RecordName, doc))
	require.NoError(t, b.(*splitstorage.Handle).PutSidecar(ctx, testrestore.RecordName, doc))
	rec, err := testrestore.Load(ctx, a)
	require.NoError(t, err)
	require.Equal(t, testrestore.Passed, rec.Outcome)
	_, err = testrestore.Load(ctx, b)
	require.EqualError(t, err, "the test restore record of backup ks/0/b is backup ks/0/a's (moved from another backup): it proves nothing of this one")
	require.False(t, testrestore.PassedFunc(ctx)(b))
}
