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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	bh, err := src.StartBackup(ctx, dir, name)
	require.NoError(t, err)
	for i, size := range []int64{10 << 20, 1 << 20, 300} {
		require.NoError(t, writeFile(ctx, bh, "f"+string(rune('0'+i)), newGen(uint64(i), size), rand.New(rand.NewPCG(1, uint64(i)))))
	}
	require.NoError(t, bh.EndBackup(ctx))
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
	_, err = src.CopyBackup(stopCtx, dst, dir, name, splitstorage.CopyOptions{Concurrency: 1, OnObject: func(string, int64, bool) {
		if n.Add(1) == 3 {
			stop()
		}
	}})
	require.Error(t, err)
	assert.Equal(t, 0, listed(), "a partial copy is never listed")

	// A part already copied, damaged at the destination.
	var part string
	require.NoError(t, filepath.WalkDir(dstSrv.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && part == "" && strings.Contains(d.Name(), ".part-") {
			part = p
		}
		return err
	}))
	require.NotEmpty(t, part, "some part was copied before the stop")
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
