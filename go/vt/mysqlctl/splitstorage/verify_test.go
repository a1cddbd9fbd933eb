package splitstorage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestVerifyParts: a stored backup checked without restoring it; each kind
// of damage is reported naming the backup, file, part and key, all of them
// at once; sampling downloads only the parts picked.
func TestVerifyParts(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	s := newStorage(t, srv.Config)
	be, err := s.RawBackendForTest(ctx)
	require.NoError(t, err)
	dir, name := "ks/-80", "2026-02-01.verify"
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	size := int64(3*srv.Config.PartSize + 100) // 4 parts
	files := []string{"a", "b", "c", "d", "e"}
	for _, f := range files {
		require.NoError(t, writeFile(ctx, bh, f, newGen(7, size), rand.New(rand.NewPCG(3, 4))))
	}
	require.NoError(t, bh.EndBackup(ctx))
	rbh := findBackup(t, s, dir, name).(splitstorage.PartVerifier)

	var onPart atomic.Int64
	rep, err := rbh.VerifyParts(ctx, splitstorage.VerifyPartsOptions{OnPart: func(_ string, _ int, n int64) { onPart.Add(n) }})
	require.NoError(t, err)
	assert.Equal(t, files, rep.Files)
	assert.Equal(t, 20, rep.Parts)
	assert.Equal(t, 20, rep.PartsChecked)
	assert.Equal(t, 5*size, rep.Bytes)
	assert.Equal(t, 5*size, rep.BytesChecked)
	assert.Equal(t, 5*size, onPart.Load())

	// Sampling: only the parts picked are downloaded.
	rep, err = rbh.VerifyParts(ctx, splitstorage.VerifyPartsOptions{Sample: func(f string, n int) bool { return n == 1 }})
	require.NoError(t, err)
	assert.Equal(t, 5, rep.PartsChecked)

	get := func(key string) []byte {
		r, err := be.Get(ctx, key, 0, -1)
		require.NoError(t, err)
		defer r.Close()
		b, err := io.ReadAll(r)
		require.NoError(t, err)
		return b
	}
	put := func(key string, b []byte) {
		require.NoError(t, be.Put(ctx, key, bytes.NewReader(b), int64(len(b)), backend.PutOptions{}))
	}
	// a: flipped byte in part 2; b: part 3 truncated; c: part 4 missing;
	// d: index edited by hand (size); e: untouched; plus a stray object.
	p := get(splitstorage.PartKey(dir, name, "a", 2))
	p[777] ^= 0x01
	put(splitstorage.PartKey(dir, name, "a", 2), p)
	p = get(splitstorage.PartKey(dir, name, "b", 3))
	put(splitstorage.PartKey(dir, name, "b", 3), p[:len(p)-1])
	require.NoError(t, be.Delete(ctx, splitstorage.PartKey(dir, name, "c", 4)))
	var idx splitstorage.Index
	require.NoError(t, json.Unmarshal(get(splitstorage.IndexKey(dir, name, "d")), &idx))
	idx.Size++
	doc, _ := json.Marshal(idx)
	put(splitstorage.IndexKey(dir, name, "d"), doc)
	put(dir+"/"+name+"/stray.part-00000001", []byte("x"))

	rep, err = rbh.VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.Error(t, err)
	assert.Equal(t, []string{"ks/-80/2026-02-01.verify/stray.part-00000001"}, rep.Unlisted, "noted, never a problem")
	msg := err.Error()
	t.Logf("problems:\n%s", msg)
	for _, want := range []string{
		"backup ks/-80/2026-02-01.verify, file a, part 2 (ks/-80/2026-02-01.verify/a.part-00000002): checksum mismatch: expected crc32c",
		"file b, part 3 (ks/-80/2026-02-01.verify/b.part-00000003): size mismatch: expected 4194304 bytes, found 4194303",
		"file c, part 4 (ks/-80/2026-02-01.verify/c.part-00000004): part missing: expected 100 bytes, found no object",
		"file d (ks/-80/2026-02-01.verify/d.index): corrupt index: size " + itoa(size+1) + " but its parts add up to " + itoa(size),
	} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, "d.part-", "the parts of a file whose index is bad are not reported one by one")
	assert.NotContains(t, msg, "file e")
	assert.NotContains(t, msg, "stray")

	// With a sample that skips part 2, the flip goes unseen but the listing
	// still finds the truncated and missing parts.
	_, err = rbh.VerifyParts(ctx, splitstorage.VerifyPartsOptions{Sample: func(string, int) bool { return false }})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "checksum mismatch")
	assert.Contains(t, err.Error(), "part missing")
	assert.Contains(t, err.Error(), "size mismatch")

	// Restore reads fail on the edited index before fetching a part.
	_, err = readAll(ctx, findBackup(t, s, dir, name), "d")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "corrupt index")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestListIncomplete: a backup started and never ended is not listed, is
// found by ListIncomplete with its start time, and RemoveBackup removes it.
func TestListIncomplete(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	s := newStorage(t, srv.Config)
	dir := "ks/0"
	bh, err := s.StartBackup(ctx, dir, "done")
	require.NoError(t, err)
	require.NoError(t, writeFile(ctx, bh, "f", newGen(1, 1000), rand.New(rand.NewPCG(1, 1))))
	require.NoError(t, bh.EndBackup(ctx))
	bh, err = s.StartBackup(ctx, dir, "crashed")
	require.NoError(t, err)
	require.NoError(t, writeFile(ctx, bh, "f", newGen(1, 5<<20), rand.New(rand.NewPCG(1, 1))))
	// No EndBackup, no AbortBackup: the process died here.

	inc, err := s.ListIncomplete(ctx, dir)
	require.NoError(t, err)
	require.Len(t, inc, 1)
	assert.Equal(t, "crashed", inc[0].Name)
	assert.WithinDuration(t, time.Now(), inc[0].Started, time.Minute)
	assert.Greater(t, inc[0].Objects, 2)
	assert.Greater(t, inc[0].Bytes, int64(5<<20))

	require.NoError(t, s.RemoveBackup(ctx, dir, "crashed"))
	inc, err = s.ListIncomplete(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, inc)
	bhs, err := s.ListBackups(ctx, dir)
	require.NoError(t, err)
	require.Len(t, bhs, 1)
	assert.Equal(t, "done", bhs[0].Name())
}

// TestRemoveCrashedLocalBackup: removing a backup that a crash cut short
// removes every object of it. A file in its directory whose name only looks
// like the file backend's temporary one (its unchecked form before
// 2026-11-29) is not the storage's: it stays, with its directory, and what
// is left is no backup, complete or not (the backend's own temporary files
// are removed: local's TestAWriteCutByKillLeavesOnlyWhatDeleteCanProve).
func TestRemoveCrashedLocalBackup(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	s := newStorage(t, srv.Config)
	_, err := s.StartBackup(ctx, "ks/0", "crashed")
	require.NoError(t, err)
	dir := filepath.Join(srv.Config.File.Root, "ks", "0", "crashed")
	lookAlike := filepath.Join(dir, "lane-000.xbstream.part-00000001.tmp-0123456789abcdef")
	require.NoError(t, os.WriteFile(lookAlike, []byte("cut"), 0o640))
	require.NoError(t, s.RemoveBackup(ctx, "ks/0", "crashed"))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, filepath.Base(lookAlike), entries[0].Name())
	inc, err := s.ListIncomplete(ctx, "ks/0")
	require.NoError(t, err)
	assert.Empty(t, inc)
	bhs, err := s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	assert.Empty(t, bhs)
}
