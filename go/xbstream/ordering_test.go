package xbstream

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtractFIFOLanes(t *testing.T) {
	// Percona --fifo-streams: each file wholly in one lane, no sequence records.
	l0 := newSB(t).p("db/a", 0, "aa").p("db/a", 2, "AA").e("db/a").p("c", 0, "c").e("c").bytes()
	l1 := newSB(t).p("db/b", 0, "bb").e("db/b").bytes()
	dir, st, err := extractLanes(t, [][]byte{l0, l1, nil}, ExtractOptions{})
	require.NoError(t, err)
	assert.Equal(t, 3, st.Files)
	assert.Equal(t, map[string]string{"db/a": "aaAA", "db/b": "bb", "c": "c"}, readTree(t, dir))

	// The same file in two FIFO lanes is not Percona's protocol.
	l2 := newSB(t).p("db/a", 4, "x").e("db/a").bytes()
	_, _, err = extractLanes(t, [][]byte{l0, l2}, ExtractOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "db/a")

	// A path again after its 'E' in one of several FIFO lanes has no
	// mbstream equivalent (no global order): an error.
	l3 := newSB(t).p("x", 0, "1").e("x").p("x", 0, "1").e("x").bytes()
	_, _, err = extractLanes(t, [][]byte{l3, l1}, ExtractOptions{})
	require.ErrorIs(t, err, ErrReappears)

	// Mixed split and plain lanes.
	split := splitBytes(t, l1, 1)
	_, _, err = extractLanes(t, [][]byte{l0, split[0]}, ExtractOptions{})
	require.ErrorIs(t, err, ErrSequence)
}

func TestExtractLaneErrors(t *testing.T) {
	data := patterned(200_000, 3)
	stream := newSB(t).file("db/t.ibd", data, 10_000).file("ibdata1", data[:50_000], 10_000).bytes()
	lanes := splitBytes(t, stream, 3)

	t.Run("missing-lane", func(t *testing.T) {
		_, _, err := extractLanes(t, lanes[:2], ExtractOptions{})
		require.ErrorIs(t, err, ErrSequence)
	})
	t.Run("repeated-lane", func(t *testing.T) {
		_, _, err := extractLanes(t, [][]byte{lanes[0], lanes[1], lanes[1]}, ExtractOptions{})
		require.Error(t, err)
	})
	t.Run("truncated-at-chunk-boundary", func(t *testing.T) {
		cut := bytes.Clone(lanes[2][:len(lanes[2])-seqRecordSize])
		_, _, err := extractLanes(t, [][]byte{lanes[0], lanes[1], cut}, ExtractOptions{})
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Contains(t, err.Error(), "lane 2:")
	})
	t.Run("truncated-inside-chunk", func(t *testing.T) {
		cut := bytes.Clone(lanes[1][:len(lanes[1])/2])
		_, _, err := extractLanes(t, [][]byte{lanes[0], cut, lanes[2]}, ExtractOptions{})
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Contains(t, err.Error(), "lane 1: offset ")
	})
	t.Run("crc", func(t *testing.T) {
		bad := bytes.Clone(lanes[2])
		bad[len(bad)-seqRecordSize-100] ^= 0x55
		_, _, err := extractLanes(t, [][]byte{lanes[0], lanes[1], bad}, ExtractOptions{})
		require.ErrorIs(t, err, ErrChecksum)
		assert.Regexp(t, `^lane 2: offset \d+: (db/t\.ibd|ibdata1): payload CRC32 mismatch`, err.Error())
	})
	t.Run("lanes-of-two-backups", func(t *testing.T) {
		other := splitBytes(t, newSB(t).file("db/t.ibd", data, 10_000).bytes(), 3)
		_, _, err := extractLanes(t, [][]byte{lanes[0], lanes[1], other[2]}, ExtractOptions{})
		require.Error(t, err)
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Extract(ctx, t.TempDir(), readers(lanes), ExtractOptions{})
		require.ErrorIs(t, err, context.Canceled)
	})
	t.Run("stops-every-lane-before-returning", func(t *testing.T) {
		// Lane 0 fails its CRC; lane 1 blocks in Read until the context it
		// was opened with is cancelled. Extract returns the CRC error only
		// after lane 1's Read has returned and its reader was closed.
		bad := bytes.Clone(lanes[0])
		bad[len(bad)-seqRecordSize-10] ^= 1
		blocked := &ctxBlockedReader{entered: make(chan struct{})}
		_, err := Extract(context.Background(), t.TempDir(), []Lane{
			ReaderLanes(bytes.NewReader(bad))[0],
			func(ctx context.Context) (io.ReadCloser, error) { blocked.ctx = ctx; return blocked, nil },
		}, ExtractOptions{})
		require.ErrorIs(t, err, ErrChecksum)
		select {
		case <-blocked.entered:
			assert.True(t, blocked.returned.Load(), "Extract returned while a lane was still in Read")
		default: // lane 1 saw the cancellation before its first Read
		}
		assert.True(t, blocked.closed.Load(), "Extract returned before closing the lane")
	})
	t.Run("a lane whose close waits for the cancellation", func(t *testing.T) {
		// Like an external decompressor: after a failed Read, Close returns
		// only once the context the lane was opened with is done.
		bad := bytes.Clone(lanes[0])
		bad[len(bad)-seqRecordSize-10] ^= 1
		done := make(chan error, 1)
		go func() {
			_, err := Extract(context.Background(), t.TempDir(), []Lane{
				func(ctx context.Context) (io.ReadCloser, error) {
					return &closeWaitsForCtx{Reader: bytes.NewReader(bad), ctx: ctx}, nil
				},
				ReaderLanes(bytes.NewReader(lanes[1]))[0],
			}, ExtractOptions{})
			done <- err
		}()
		select {
		case err := <-done:
			require.ErrorIs(t, err, ErrChecksum)
		case <-time.After(30 * time.Second):
			t.Fatal("Extract closed a failed lane before cancelling its context, and hangs")
		}
	})
}

type closeWaitsForCtx struct {
	io.Reader
	ctx context.Context
}

func (c *closeWaitsForCtx) Close() error { <-c.ctx.Done(); return nil }

// ctxBlockedReader blocks in Read until the context its lane was opened with
// is done.
type ctxBlockedReader struct {
	ctx              context.Context
	entered          chan struct{}
	returned, closed atomic.Bool
}

func (r *ctxBlockedReader) Read([]byte) (int, error) {
	close(r.entered)
	<-r.ctx.Done()
	r.returned.Store(true)
	return 0, r.ctx.Err()
}

func (r *ctxBlockedReader) Close() error {
	r.closed.Store(true)
	return nil
}
