package azure_test

import (
	"bytes"
	"context"
	"hash/crc32"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestLockRequestsSentOnlyAsRequests: Azurite neither stores nor enforces
// immutability policies or legal holds (it answers 501 to setting them),
// so Azure locks are proven by the requests sent, recorded at a proxy that
// answers those two itself: a locked Put carries the policy (Locked for
// compliance), its date and the legal hold in its headers; Lock reads the
// blob, then sets the policy and the hold.
func TestLockRequestsSentOnlyAsRequests(t *testing.T) {
	be, p := splitstoragetest.ProxiedBackend(t, splitstorage.BackendAzure, func(p *splitstoragetest.FaultProxy) {
		p.Answer(http.MethodPut, "comp=immutabilityPolicies", http.StatusOK, nil, "")
		p.Answer(http.MethodPut, "comp=legalhold", http.StatusOK, http.Header{"X-Ms-Legal-Hold": {"true"}}, "")
	})
	ctx := context.Background()
	lk, ok := backend.LockerOf(be)
	require.True(t, ok)
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	body := []byte("x")
	crc := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))

	p.RecordRequests()
	require.NoError(t, be.Put(ctx, "a", bytes.NewReader(body), 1, backend.PutOptions{CRC32C: crc,
		Lock: backend.Lock{Until: until, Mode: backend.LockCompliance, LegalHold: true}}))
	require.NoError(t, be.Put(ctx, "b", bytes.NewReader(body), 1, backend.PutOptions{CRC32C: crc}))
	require.NoError(t, lk.Lock(ctx, "b", backend.Lock{Until: until, Mode: backend.LockGovernance, LegalHold: true}))

	rec := p.Recorded()
	var sent []string
	for _, r := range rec {
		sent = append(sent, r.Method+" "+r.URI)
	}
	require.Equal(t, []string{
		"PUT /devstoreaccount1/split-test/backups%2Fa",
		"PUT /devstoreaccount1/split-test/backups%2Fb",
		"HEAD /devstoreaccount1/split-test/backups%2Fb",
		"PUT /devstoreaccount1/split-test/backups%2Fb?comp=immutabilityPolicies",
		"PUT /devstoreaccount1/split-test/backups%2Fb?comp=legalhold",
	}, sent)
	date := until.Format(http.TimeFormat)
	h := rec[0].Header
	require.Equal(t, "Locked", h.Get("X-Ms-Immutability-Policy-Mode"))
	require.Equal(t, date, h.Get("X-Ms-Immutability-Policy-Until-Date"))
	require.Equal(t, "true", h.Get("X-Ms-Legal-Hold"))
	for k := range rec[1].Header {
		require.False(t, strings.HasPrefix(k, "X-Ms-Immutability") || k == "X-Ms-Legal-Hold", "an unlocked put sends %s", k)
	}
	require.Equal(t, "Unlocked", rec[3].Header.Get("X-Ms-Immutability-Policy-Mode"))
	require.Equal(t, date, rec[3].Header.Get("X-Ms-Immutability-Policy-Until-Date"))
	require.Equal(t, "true", rec[4].Header.Get("X-Ms-Legal-Hold"))
}
