package splitstorage_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestCostsAreWhatTheStoreSees: the requests a backup, a copy, a
// verification and a promotion record are those the server received,
// counted at a proxy in front of it; a backup's writes are one per part
// and per file, and a few markers.
func TestCostsAreWhatTheStoreSees(t *testing.T) {
	ctx := context.Background()
	work := splitstoragetest.StartS3(t)
	wp := splitstoragetest.NewFaultProxy(t, work.Addr)
	wcfg := work.WithProxy(wp).Config
	wcfg.PartSize = splitstorage.MinPartSize
	work.WithProxy(wp).Setenv(t)
	src := newStorage(t, wcfg)
	seen := func(p *splitstoragetest.FaultProxy) func() int64 {
		n := p.Requests()
		return func() int64 { return p.Requests() - n }
	}

	// A backup: 3 files of 5, 1 and 1 parts.
	since := seen(wp)
	bh, err := src.StartBackup(ctx, "ks/0", "a")
	require.NoError(t, err)
	for i, size := range []int64{5*splitstorage.MinPartSize - 7, 100, 1} {
		require.NoError(t, writeFile(ctx, bh, string(rune('f'+i)), newGen(uint64(i), size), rand.New(rand.NewPCG(1, uint64(i)))))
	}
	require.NoError(t, bh.EndBackup(ctx))
	backupRequests := since()
	be, err := src.RawBackendForTest(ctx)
	require.NoError(t, err)
	c, err := splitstorage.ParseComplete(splitstoragetest.Get(t, be, "ks/0/a/.complete"), "ks/0", "a")
	require.NoError(t, err)
	require.NotNil(t, c.Cost)
	require.Equal(t, backupRequests-5, c.Cost.Total(), "the marker with its two change marks and the check after it (a listing and the "+
		"start marker) are not in the cost")
	require.LessOrEqual(t, c.Cost.Write, int64(c.Parts+2*len(c.Files)+6), "%+v: a write per part, per index, and a few markers", *c.Cost)
	require.GreaterOrEqual(t, c.Cost.BytesUp, c.Bytes)

	// A verification, and a copy under another prefix of the same server.
	since = seen(wp)
	vr, err := bh.(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err)
	require.Equal(t, since(), vr.Requests.Total())
	require.Equal(t, int64(c.Parts), vr.Requests.Read-int64(len(c.Files))-1, "%+v: a GET per part and per index, and the marker", vr.Requests)
	dcfg := wcfg
	dcfg.S3.Prefix = "copies"
	dst := newStorage(t, dcfg)
	since = seen(wp)
	cr, err := src.CopyBackup(ctx, dst, "ks/0", "a", splitstorage.CopyOptions{})
	require.NoError(t, err)
	require.Equal(t, since(), cr.Requests.Total())
	require.Equal(t, c.Parts, cr.ServerSide-len(c.Files)-1, "server-side copies: every part, index and the start marker")

	// A promotion to a store with Object Lock: both stores' requests.
	protected := splitstoragetest.StartS3ObjectLock(t)
	pp := splitstoragetest.NewFaultProxy(t, protected.Addr)
	pcfg := protected.WithProxy(pp).Config
	pst := newStorage(t, pcfg)
	since, sinceP := seen(wp), seen(pp)
	pr, err := src.Promote(ctx, pst, "ks/0", "a", backend.Lock{Until: time.Now().Add(48 * time.Hour), Mode: backend.LockGovernance}, splitstorage.CopyOptions{})
	require.NoError(t, err)
	require.Equal(t, since()+sinceP(), pr.Requests.Total())
}
