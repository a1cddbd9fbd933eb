package splitstorage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// chainBackup writes a one-file backup named name on base ("" for none).
func chainBackup(t *testing.T, s *splitstorage.Storage, dir, name, base string) {
	t.Helper()
	ctx := context.Background()
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	if base != "" {
		require.NoError(t, bh.(*splitstorage.Handle).SetBase(ctx, base))
	}
	require.NoError(t, writeFile(ctx, bh, "f", newGen(1, 1000), rand.New(rand.NewPCG(1, 1))))
	require.NoError(t, bh.EndBackup(ctx))
}

func listed(t *testing.T, s *splitstorage.Storage, dir string) []string {
	t.Helper()
	bhs, err := s.ListBackups(context.Background(), dir)
	require.NoError(t, err)
	var names []string
	for _, bh := range bhs {
		names = append(names, bh.Name())
	}
	return names
}

// TestChainRetention: no way of removing a backup leaves a listed backup
// whose base is gone. A base with dependents is retired (out of the list,
// still readable through Sibling, still verifiable and copyable) and goes
// with its last dependent, up the chain.
func TestChainRetention(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	s := newStorage(t, srv.Config)
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	dir := "ks/0"
	chainBackup(t, s, dir, "a-full", "")
	chainBackup(t, s, dir, "b-delta", "a-full")
	chainBackup(t, s, dir, "c-delta", "b-delta")
	chainBackup(t, s, dir, "d-full", "")

	deps, err := s.Dependents(ctx, dir, "a-full")
	require.NoError(t, err)
	assert.Equal(t, []string{"b-delta"}, deps)

	// Removing the full retires it: the chain still restores.
	require.NoError(t, s.RemoveBackup(ctx, dir, "a-full"))
	assert.Equal(t, []string{"b-delta", "c-delta", "d-full"}, listed(t, s, dir))
	c := findBackup(t, s, dir, "c-delta").(*splitstorage.Handle)
	a, err := c.Sibling(ctx, "a-full")
	require.NoError(t, err, "a retired base opens by name")
	_, err = readAll(ctx, a, "f")
	require.NoError(t, err)
	_, err = a.(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err, "a retired base verifies")
	inc, err := s.ListIncomplete(ctx, dir)
	require.NoError(t, err)
	require.Len(t, inc, 1)
	assert.Equal(t, "a-full", inc[0].Name)
	assert.Equal(t, []string{"b-delta"}, inc[0].RetiredFor)
	// Removing it again changes nothing.
	require.NoError(t, s.RemoveBackup(ctx, dir, "a-full"))
	_, err = c.Sibling(ctx, "a-full")
	require.NoError(t, err)

	// A new delta cannot name a missing or incomplete base.
	bh, err := s.StartBackup(ctx, dir, "e-delta")
	require.NoError(t, err)
	err = bh.(*splitstorage.Handle).SetBase(ctx, "nope")
	require.ErrorIs(t, err, splitstorage.ErrNotExist)
	assert.Contains(t, err.Error(), "its base nope")
	require.NoError(t, bh.AbortBackup(ctx))

	// Removing the middle delta retires it too; removing the last one takes
	// the whole retired chain with it.
	require.NoError(t, s.RemoveBackup(ctx, dir, "b-delta"))
	assert.Equal(t, []string{"c-delta", "d-full"}, listed(t, s, dir))
	_, err = c.Sibling(ctx, "b-delta")
	require.NoError(t, err)
	require.NoError(t, s.RemoveBackup(ctx, dir, "c-delta"))
	assert.Equal(t, []string{"d-full"}, listed(t, s, dir))
	objs, err := be.List(ctx, dir+"/", true)
	require.NoError(t, err)
	require.Len(t, objs, 1, "only d-full is left: %v", objs)
	assert.Equal(t, dir+"/d-full/", objs[0].Key)
}

// TestChainBaseRemovedWhileRunning: a delta whose base went away before it
// recorded it fails at SetBase; one recorded keeps the base (retired) and
// completes; a failed delta's abort removes a base only kept for it.
func TestChainBaseRemovedWhileRunning(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	s := newStorage(t, srv.Config)
	dir := "ks/0"
	chainBackup(t, s, dir, "a-full", "")

	bh, err := s.StartBackup(ctx, dir, "b-delta")
	require.NoError(t, err)
	require.NoError(t, bh.(*splitstorage.Handle).SetBase(ctx, "a-full"))
	// Retention runs while the delta is written: the base is retired, not removed.
	require.NoError(t, s.RemoveBackup(ctx, dir, "a-full"))
	require.NoError(t, writeFile(ctx, bh, "f", newGen(1, 1000), rand.New(rand.NewPCG(1, 1))))
	require.NoError(t, bh.EndBackup(ctx))
	assert.Equal(t, []string{"b-delta"}, listed(t, s, dir))

	// A delta that fails: its abort takes the retired base it alone kept.
	chainBackup(t, s, dir, "c-full", "")
	bh, err = s.StartBackup(ctx, dir, "d-delta")
	require.NoError(t, err)
	require.NoError(t, bh.(*splitstorage.Handle).SetBase(ctx, "c-full"))
	require.NoError(t, s.RemoveBackup(ctx, dir, "c-full"))
	_, err = s.OpenBackup(ctx, dir, "c-full")
	require.NoError(t, err, "kept for the running delta")
	require.NoError(t, bh.AbortBackup(ctx))
	_, err = s.OpenBackup(ctx, dir, "c-full")
	require.ErrorIs(t, err, splitstorage.ErrNotExist)
}

// TestCopyChain: an incremental backup copies only where its base is; a
// retired base copies as a complete one.
func TestCopyChain(t *testing.T) {
	ctx := context.Background()
	src := newStorage(t, splitstoragetest.Local(t).Config)
	dst := newStorage(t, splitstoragetest.Local(t).Config)
	dir := "ks/0"
	chainBackup(t, src, dir, "a-full", "")
	chainBackup(t, src, dir, "b-delta", "a-full")
	require.NoError(t, src.RemoveBackup(ctx, dir, "a-full"))

	_, err := src.CopyBackup(ctx, dst, dir, "b-delta", splitstorage.CopyOptions{})
	require.ErrorIs(t, err, splitstorage.ErrNotExist)
	assert.Contains(t, err.Error(), "copy the base first")
	assert.Empty(t, listed(t, dst, dir))

	_, err = src.CopyBackup(ctx, dst, dir, "a-full", splitstorage.CopyOptions{})
	require.NoError(t, err)
	_, err = src.CopyBackup(ctx, dst, dir, "b-delta", splitstorage.CopyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"a-full", "b-delta"}, listed(t, dst, dir))
	deps, err := dst.Dependents(ctx, dir, "a-full")
	require.NoError(t, err)
	assert.Equal(t, []string{"b-delta"}, deps, "the copy keeps the chain")
}

// TestQuarantineTakesDependents: a quarantined base takes the backups that
// depend on it out of the list too: none of them would restore.
func TestQuarantineTakesDependents(t *testing.T) {
	ctx := context.Background()
	s := newStorage(t, splitstoragetest.Local(t).Config)
	dir := "ks/0"
	chainBackup(t, s, dir, "a-full", "")
	chainBackup(t, s, dir, "b-delta", "a-full")
	chainBackup(t, s, dir, "c-delta", "b-delta")
	chainBackup(t, s, dir, "d-full", "")
	require.NoError(t, findBackup(t, s, dir, "b-delta").(*splitstorage.Handle).Quarantine(ctx, "test restore failed"))
	assert.Equal(t, []string{"a-full", "d-full"}, listed(t, s, dir))
	inc, err := s.ListIncomplete(ctx, dir)
	require.NoError(t, err)
	require.Len(t, inc, 2)
	assert.Equal(t, "its base b-delta is quarantined: test restore failed", inc[1].Quarantined)
}

// TestReleaseBringsBackWhatTheQuarantineTook: releasing a quarantined
// base puts back the dependents its quarantine took out with it, theirs
// too, each verified, and never one quarantined for a test of its own
// (they stayed quarantined, named nowhere). A marker written before the
// base was recorded in it is told by its reason.
func TestReleaseBringsBackWhatTheQuarantineTook(t *testing.T) {
	ctx := context.Background()
	s := newStorage(t, splitstoragetest.Local(t).Config)
	dir := "ks/0"
	chainBackup(t, s, dir, "a-full", "")
	chainBackup(t, s, dir, "b-delta", "a-full")
	chainBackup(t, s, dir, "c-delta", "b-delta")
	chainBackup(t, s, dir, "d-delta", "c-delta")
	chainBackup(t, s, dir, "e-delta", "b-delta")
	require.NoError(t, findBackup(t, s, dir, "e-delta").(*splitstorage.Handle).Quarantine(ctx, "test restore failed: its own"))
	require.NoError(t, findBackup(t, s, dir, "b-delta").(*splitstorage.Handle).Quarantine(ctx, "test restore failed: mysqld did not start"))
	assert.Equal(t, []string{"a-full"}, listed(t, s, dir))

	released, err := s.Release(ctx, dir, "b-delta")
	require.NoError(t, err)
	assert.Equal(t, []string{"c-delta", "d-delta"}, released)
	assert.Equal(t, []string{"a-full", "b-delta", "c-delta", "d-delta"}, listed(t, s, dir))
	inc, err := s.ListIncomplete(ctx, dir)
	require.NoError(t, err)
	require.Len(t, inc, 1)
	assert.Equal(t, "e-delta", inc[0].Name)
	assert.Equal(t, "test restore failed: its own", inc[0].Quarantined, "quarantined for itself: it stays")

	// A marker of an earlier version: no base recorded, the cascade's reason.
	require.NoError(t, findBackup(t, s, dir, "b-delta").(*splitstorage.Handle).Quarantine(ctx, "test restore failed"))
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	key := dir + "/c-delta/.quarantined"
	r, err := be.Get(ctx, key, 0, -1)
	require.NoError(t, err)
	b, err := io.ReadAll(r)
	r.Close()
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Equal(t, "b-delta", doc["base"])
	delete(doc, "base")
	b, err = json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, be.Put(ctx, key, bytes.NewReader(b), int64(len(b)), backend.PutOptions{CRC32C: crc32c(b)}))
	released, err = s.Release(ctx, dir, "b-delta")
	require.NoError(t, err)
	assert.Equal(t, []string{"c-delta", "d-delta"}, released)
	assert.Equal(t, []string{"a-full", "b-delta", "c-delta", "d-delta"}, listed(t, s, dir))

	// A release cut short after the base (a kill; or an earlier version's,
	// which released the base alone): b-delta complete again by its own
	// marker, c-delta and d-delta still out. Releasing b-delta again says it
	// is not quarantined and brings them back.
	require.NoError(t, findBackup(t, s, dir, "b-delta").(*splitstorage.Handle).Quarantine(ctx, "test restore failed"))
	r, err = be.Get(ctx, dir+"/b-delta/.quarantined", 0, -1)
	require.NoError(t, err)
	b, err = io.ReadAll(r)
	r.Close()
	require.NoError(t, err)
	var q struct{ Complete json.RawMessage }
	require.NoError(t, json.Unmarshal(b, &q))
	require.NoError(t, be.Put(ctx, dir+"/b-delta/.complete", bytes.NewReader(q.Complete), int64(len(q.Complete)), backend.PutOptions{CRC32C: crc32c(q.Complete)}))
	require.NoError(t, be.Delete(ctx, dir+"/b-delta/.quarantined"))
	assert.Equal(t, []string{"a-full", "b-delta"}, listed(t, s, dir))
	released, err = s.Release(ctx, dir, "b-delta")
	require.ErrorIs(t, err, splitstorage.ErrNotExist, "b-delta itself was not quarantined")
	assert.Equal(t, []string{"c-delta", "d-delta"}, released)
	assert.Equal(t, []string{"a-full", "b-delta", "c-delta", "d-delta"}, listed(t, s, dir))
	released, err = s.Release(ctx, dir, "b-delta")
	require.ErrorIs(t, err, splitstorage.ErrNotExist)
	assert.Empty(t, released, "nothing left to release")
}
