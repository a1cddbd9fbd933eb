package gcs_test

import (
	"bytes"
	"context"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestLockRequestsSentOnlyAsRequests: fake-gcs-server stores object
// retention but does not enforce it, so GCS locks are proven by the
// requests sent, recorded at a proxy: a locked Put carries the retention
// (Locked for compliance) and the temporary hold in its metadata; Lock reads
// the object, then patches only what extends it; an object already locked
// as long is not patched.
func TestLockRequestsSentOnlyAsRequests(t *testing.T) {
	be, p := splitstoragetest.ProxiedBackend(t, splitstorage.BackendGCS, nil)
	ctx := context.Background()
	lk, ok := backend.LockerOf(be)
	require.True(t, ok)
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	stamp := until.Format(time.RFC3339)
	body := []byte("x")
	crc := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))
	put := func(key string, l backend.Lock) {
		require.NoError(t, be.Put(ctx, key, bytes.NewReader(body), 1, backend.PutOptions{CRC32C: crc, Lock: l}))
	}

	p.RecordRequests()
	put("a", backend.Lock{Until: until, Mode: backend.LockCompliance, LegalHold: true})
	put("b", backend.Lock{})
	require.NoError(t, lk.Lock(ctx, "b", backend.Lock{Until: until, Mode: backend.LockGovernance}))
	require.NoError(t, lk.Lock(ctx, "b", backend.Lock{Until: until.Add(-time.Minute), Mode: backend.LockGovernance}))

	var sent []string
	for _, r := range p.Recorded() {
		sent = append(sent, r.Method+" "+strings.SplitN(r.URI, "?", 2)[0]+" "+string(r.Body))
	}
	all := strings.Join(sent, "\n")
	require.Len(t, sent, 5, "put a, put b, read b, patch b, read b (nothing to extend)\n%s", all)
	require.Contains(t, sent[0], `"name":"backups/a","retention":{"mode":"Locked","retainUntilTime":"`+stamp+`"},"temporaryHold":true}`)
	require.NotContains(t, sent[1], "retention", "an unlocked put asks for no retention")
	require.True(t, strings.HasPrefix(sent[2], "GET /storage/v1/b/split-test/o/backups%2Fb"), all)
	require.Equal(t, `PATCH /storage/v1/b/split-test/o/backups%2Fb {"bucket":"split-test","retention":{"mode":"Unlocked","retainUntilTime":"`+stamp+`"}}`,
		strings.TrimSpace(sent[3]))
	require.True(t, strings.HasPrefix(sent[4], "GET "), "an earlier date is read, not sent\n%s", all)
}
