package splitstorage_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestCopyBackup: a copy stopped halfway leaves nothing listed at the
// destination; a part damaged there (same size, other bytes) fails the
// verification before the completion marker is written and is removed; the
// next run copies only what is missing or was removed, and the copy reads
// back the same bytes, with its sidecar; a destination that holds the
// backup refuses another copy.
func TestCopyBackup(t *testing.T) {
	ctx := context.Background()
	srcSrv, dstSrv := splitstoragetest.Local(t), splitstoragetest.Local(t)
	src, dst := newStorage(t, srcSrv.Config), newStorage(t, dstSrv.Config)
	dir, name := "ks/0", "2026-11-23.120000.zone1-0000000100"
	writeBackup(ctx, t, src, dir, name, 10<<20, 1<<20, 300)
	sh := findBackup(t, src, dir, name).(*splitstorage.Handle)
	require.NoError(t, sh.PutSidecar(ctx, "verification", []byte(`{"outcome":"passed"}`)))
	listed := func() int {
		bhs, err := dst.ListBackups(ctx, dir)
		require.NoError(t, err)
		return len(bhs)
	}

	// Stopped after three objects.
	stopCtx, stop := context.WithCancel(ctx)
	var n atomic.Int32
	_, err := src.CopyBackup(stopCtx, dst, dir, name, splitstorage.CopyOptions{Concurrency: 1, OnObject: func(string, int64, bool) {
		if n.Add(1) == 3 {
			stop()
		}
	}})
	require.Error(t, err)
	assert.Equal(t, 0, listed(), "a partial copy is never listed")

	// A part already copied, damaged at the destination.
	copied := partFiles(t, dstSrv.Dir)
	require.NotEmpty(t, copied, "some part was copied before the stop")
	part := copied[0]
	b, err := os.ReadFile(part)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(part, b, 0o644))
	_, err = src.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "failed its verification at the destination")
	assert.Contains(t, err.Error(), filepath.Base(part))
	assert.Equal(t, 0, listed())
	assert.NoFileExists(t, part, "the damaged part was removed at the destination")

	rep, err := src.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{})
	require.NoError(t, err)
	assert.Less(t, rep.Copied, rep.Objects, "the re-run copies only what is missing or was removed: %+v", rep)
	assert.Zero(t, rep.ServerSide, "a copy that stays is never hard-linked")
	assert.GreaterOrEqual(t, rep.Copied, 1, "%+v", rep)
	require.Equal(t, 1, listed())
	dh := findBackup(t, dst, dir, name).(*splitstorage.Handle)
	_, err = dh.VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err)
	for i := range 3 {
		want, err := readAll(ctx, sh, "f"+string(rune('0'+i)))
		require.NoError(t, err)
		got, err := readAll(ctx, dh, "f"+string(rune('0'+i)))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "file f%d", i)
	}
	doc, err := dh.ReadSidecar(ctx, "verification")
	require.NoError(t, err)
	assert.Equal(t, `{"outcome":"passed"}`, string(doc))

	_, err = src.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{})
	require.ErrorIs(t, err, splitstorage.ErrExists)
	_, err = src.CopyBackup(ctx, dst, dir, "2026-01-01.000000.zone1-0000000100", splitstorage.CopyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not complete at the source")
}

// writeBackup stores a complete backup dir/name in s with one file of each
// size, f0, f1, ...: bytes of newGen, written in random-sized writes.
func writeBackup(ctx context.Context, t *testing.T, s *splitstorage.Storage, dir, name string, sizes ...int64) {
	bh, err := s.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	for i, size := range sizes {
		require.NoError(t, writeFile(ctx, bh, "f"+string(rune('0'+i)), newGen(uint64(i), size), rand.New(rand.NewPCG(1, uint64(i)))))
	}
	require.NoError(t, bh.EndBackup(ctx))
}

// TestCopyBackupServerSide: between two prefixes of one S3 endpoint
// (CopyObject) or of GCS (rewrite) every object is copied by the server:
// counted at the server, no part of the source is downloaded; the copy
// verifies and reads back equal.
func TestCopyBackupServerSide(t *testing.T) {
	for _, kind := range splitstoragetest.Remote() {
		t.Run(kind, func(t *testing.T) { copyServerSide(t, kind) })
	}
}

func copyServerSide(t *testing.T, kind string) {
	ctx := context.Background()
	base := splitstoragetest.Start(t, kind)
	p := splitstoragetest.NewFaultProxy(t, base.Addr)
	srv := base.WithProxy(p)
	srv.Setenv(t)
	srcCfg, dstCfg := srv.Config, srv.Config
	srcPrefix := srcCfg.S3.Prefix + srcCfg.GCS.Prefix + srcCfg.Azure.Prefix
	dstCfg.S3.Prefix, dstCfg.GCS.Prefix, dstCfg.Azure.Prefix = "dr", "dr", "dr"
	src, dst := newStorage(t, srcCfg), newStorage(t, dstCfg)
	dir, name := "ks/0", "2026-11-23.130000.zone1-0000000100"
	bh, err := src.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	require.NoError(t, writeFile(ctx, bh, "f", newGen(7, 9<<20), rand.New(rand.NewPCG(1, 7))))
	require.NoError(t, bh.EndBackup(ctx))

	before := len(p.Seen())
	rep, err := src.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{})
	require.NoError(t, err)
	assert.Equal(t, rep.Objects, rep.Copied)
	assert.Equal(t, rep.Copied, rep.ServerSide)
	var copies, sourcePartGets int
	for _, r := range p.Seen()[before:] {
		if !strings.HasPrefix(r, "GET ") && strings.Contains(r, "dr/") && strings.Contains(r, ".part-") {
			copies++
		}
		if strings.HasPrefix(r, "GET ") && strings.Contains(r, srcPrefix+"/") && strings.Contains(r, ".part-") {
			sourcePartGets++
		}
	}
	assert.Equal(t, 0, sourcePartGets, "no part of the source is downloaded")
	assert.GreaterOrEqual(t, copies, 3, "each part copied by the server (9 MiB in 4 MiB parts): %v", p.Seen()[before:])
	want, err := readAll(ctx, findBackup(t, src, dir, name), "f")
	require.NoError(t, err)
	got, err := readAll(ctx, findBackup(t, dst, dir, name), "f")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got))
}

// TestCopyFromADamagedSource: a part damaged at the source fails the copy
// naming the source and its part, not the destination; nothing copied stays
// at the destination, and once the source is repaired the copy works.
func TestCopyFromADamagedSource(t *testing.T) {
	ctx := context.Background()
	srcSrv, dstSrv := splitstoragetest.Local(t), splitstoragetest.Local(t)
	src, dst := newStorage(t, srcSrv.Config), newStorage(t, dstSrv.Config)
	dir, name := "ks/0", "2026-11-23.120000.zone1-0000000100"
	bh, err := src.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	require.NoError(t, writeFile(ctx, bh, "f0", newGen(7, 3<<20), rand.New(rand.NewPCG(1, 7))))
	require.NoError(t, bh.EndBackup(ctx))
	part := firstPart(t, srcSrv.Dir)
	good, err := os.ReadFile(part)
	require.NoError(t, err)
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0xff
	require.NoError(t, os.WriteFile(part, bad, 0o644))

	_, err = src.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "backup ks/0/"+name+" is damaged at the source")
	assert.Contains(t, err.Error(), "the objects copied there were removed")
	assert.Contains(t, err.Error(), filepath.Base(part))
	assert.NotContains(t, err.Error(), "run the copy again")
	var left []string
	require.NoError(t, filepath.WalkDir(dstSrv.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.Contains(p, "/.fleet/changes/ks/0/") {
			left = append(left, p)
		}
		return err
	}))
	assert.Equal(t, []string{filepath.Join(dstSrv.Dir, ".split-storage")}, left, "nothing stays at the destination but its root identity "+
		"(and the marks of the changes made and undone, which the next fleet view covers)")

	require.NoError(t, os.WriteFile(part, good, 0o644))
	_, err = src.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{})
	require.NoError(t, err, "a copy after the source's repair works")
	_, err = findBackup(t, dst, dir, name).(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err)
}

// TestACopyThatCannotReadBackJudgesNothing: a copy whose destination does
// not give its parts back for the verification (5xx at every retry) has
// proven nothing wrong there: it fails as unread, removes nothing it
// copied (it removed each part it could not read, calling them damaged),
// and the next run, the destination answering, completes it without
// copying them again.
func TestACopyThatCannotReadBackJudgesNothing(t *testing.T) {
	ctx := context.Background()
	src := newStorage(t, splitstoragetest.Local(t).Config)
	dst, p, _ := proxied(t, "s3", func(c *splitstorage.Config) {
		c.RetryMaxAttempts, c.RetryInitialBackoff, c.RetryMaxBackoff = 2, 10*time.Millisecond, 20*time.Millisecond
	})
	bh := storedFile(t, src, 9<<20)
	dir, name := "ks/0", bh.Name()
	be, err := dst.RawBackendForTest(ctx)
	require.NoError(t, err)

	p.FailMatching("GET", ".part-", splitstoragetest.InternalError, 1000)
	_, err = src.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{})
	require.ErrorContains(t, err, "split storage: copy of backup ks/0/"+name+" could not be verified at the destination ")
	require.ErrorContains(t, err, "objects copied there could not be read back (nothing says they are damaged; nothing was removed): run the "+
		"copy again once it answers")
	assert.True(t, unreadable.Is(err), "%v", err)
	assert.NotErrorIs(t, err, splitstorage.ErrDamaged)
	p.ClearMatching()
	parts, err := be.List(ctx, "ks/0/"+name+"/f.part-", false)
	require.NoError(t, err)
	assert.Len(t, parts, 3, "every part copied is still there")

	var copiedParts []string
	_, err = src.CopyBackup(ctx, dst, dir, name, splitstorage.CopyOptions{OnObject: func(key string, _ int64, copied bool) {
		if copied && strings.Contains(key, ".part-") {
			copiedParts = append(copiedParts, key)
		}
	}})
	require.NoError(t, err)
	assert.Empty(t, copiedParts, "the parts already there are not copied again")
	_, err = findBackup(t, dst, dir, name).(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	require.NoError(t, err)
}

// TestACopyRefusesWhatTheDestinationsSealsWouldRefuse: a destination with a
// signing key checks every backup's seal as its readers will. A backup
// without a seal (there, not accepting unsealed backups), or sealed with a
// key its key file lacks, is refused before anything is copied, as a
// request its flags contradict (it copied every part, then failed the
// verification as damaged, and would again at every run); with
// --split-storage-accept-unsealed, or the key added, it copies.
func TestACopyRefusesWhatTheDestinationsSealsWouldRefuse(t *testing.T) {
	ctx := context.Background()
	srcSrv := splitstoragetest.Local(t)
	plain := newStorage(t, srcSrv.Config)
	sealedCfg := srcSrv.Config
	sealedCfg.SigningKeyFile = splitstoragetest.KeyFile(t, "sign-1")
	sealed := newStorage(t, sealedCfg)
	dir := "ks/0"
	sealedBackup(t, plain, dir, "unsealed")
	sealedBackup(t, sealed, dir, "sealed")

	dstSrv := splitstoragetest.Local(t)
	dstCfg := dstSrv.Config
	dstCfg.SigningKeyFile = splitstoragetest.KeyFile(t, "sign-2")
	for name, want := range map[string]string{
		"unsealed": "it carries no seal, and the destination file:" + dstCfg.File.Root + " has a signing key (--split-storage-signing-key-file) " +
			"and does not accept unsealed backups: every reader there would refuse it, so nothing was copied",
		"sealed": "it is sealed with key sign-1, which the destination's signing key file " + dstCfg.SigningKeyFile + " does not hold: no reader " +
			"there could check it, so nothing was copied",
	} {
		_, err := plain.CopyBackup(ctx, newStorage(t, dstCfg), dir, name, splitstorage.CopyOptions{})
		require.ErrorContains(t, err, "split storage: copying backup ks/0/"+name+": "+want, name)
		assert.True(t, flagvalue.IsContradiction(err), "%s: %v", name, err)
		assert.NotErrorIs(t, err, splitstorage.ErrDamaged)
		entries, err := os.ReadDir(dstCfg.File.Root)
		require.NoError(t, err)
		assert.Empty(t, entries, "%s: something was written at the destination", name)
	}

	accepting := dstCfg
	accepting.AcceptUnsealed = true
	_, err := plain.CopyBackup(ctx, newStorage(t, accepting), dir, "unsealed", splitstorage.CopyOptions{})
	require.NoError(t, err)
	both := dstCfg
	both.SigningKeyFile = filepath.Join(t.TempDir(), "keys")
	k2, err := os.ReadFile(dstCfg.SigningKeyFile)
	require.NoError(t, err)
	k1, err := os.ReadFile(sealedCfg.SigningKeyFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(both.SigningKeyFile, append(k2, k1...), 0o400))
	_, err = plain.CopyBackup(ctx, newStorage(t, both), dir, "sealed", splitstorage.CopyOptions{})
	require.NoError(t, err)
	require.NoError(t, readBackup(newStorage(t, both), dir, "sealed"))
}
