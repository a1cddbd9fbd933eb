package xbstream

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evenStream is one file of n pieces of piece bytes each.
func evenStream(t testing.TB, n, piece int) []byte {
	s := newSB(t)
	data := patterned(piece, 7)
	for i := range n {
		s.p("db/even.ibd", uint64(i*piece), string(data))
	}
	return s.e("db/even.ibd").bytes()
}

// lockedBuffer is a lane that counts what was written to it, readable while
// the split runs; gate, when set, holds its first Write until closed.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	gate   chan struct{}
	delay  time.Duration
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	if b.gate != nil {
		<-b.gate
	}
	time.Sleep(b.delay)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *lockedBuffer) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// A lane that stalls (its first write held) does not stop the others with
// PassBusyLanes: each gets a second piece while it waits, then the dealer
// waits for it (no lane may run further ahead of it), and the lanes merge
// back into the stream.
func TestSplitPassesABusyLane(t *testing.T) {
	const piece = 16 << 10
	stream := evenStream(t, 32, piece)
	lanes := make([]*lockedBuffer, 4)
	ws := make([]io.Writer, len(lanes))
	for i := range lanes {
		lanes[i] = &lockedBuffer{}
		ws[i] = lanes[i]
	}
	lanes[0].gate = make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{PieceSize: piece, PassBusyLanes: true})
		done <- err
	}()
	require.Eventually(t, func() bool {
		for _, l := range lanes[1:] {
			if l.len() < 2*piece {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "the other lanes got no second piece while lane 0 was busy")
	for _, l := range lanes[1:] {
		assert.Less(t, l.len(), 3*piece, "a lane ran more than a piece ahead of the busy one")
	}
	close(lanes[0].gate)
	require.NoError(t, <-done)
	merged := mergeLanes(t, lanes)
	assert.Equal(t, stream, merged)
}

// mergeLanes merges what lanes hold back into one stream.
func mergeLanes(t *testing.T, lanes []*lockedBuffer) []byte {
	rs := make([]io.Reader, len(lanes))
	for i, l := range lanes {
		rs[i] = bytes.NewReader(l.buf.Bytes())
	}
	var out bytes.Buffer
	require.NoError(t, Merge(&out, rs))
	return out.Bytes()
}

// Passing busy lanes keeps them within 1/64 of the fewest bytes or a piece,
// plus the piece dealt, whatever the lanes' stalls; the stream merges back
// the same (its chunks are no larger than a piece, so none is cut).
func TestSplitPassingStaysBalanced(t *testing.T) {
	const piece = 64 << 10
	stream := skewedStream(t)
	lanes := make([]*lockedBuffer, 8)
	ws := make([]io.Writer, len(lanes))
	for i := range lanes {
		lanes[i] = &lockedBuffer{delay: time.Duration(i%3) * 100 * time.Microsecond}
		ws[i] = lanes[i]
	}
	stats, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{PieceSize: piece, PassBusyLanes: true})
	require.NoError(t, err)
	least, most := stats[0].Bytes, int64(0)
	for i, st := range stats {
		assert.Equal(t, int64(lanes[i].len()), st.Bytes)
		least, most = min(least, st.Bytes), max(most, st.Bytes)
	}
	t.Logf("lanes from %d to %d bytes", least, most)
	assert.LessOrEqual(t, most-least, MaxPassingSpread(least, piece))
	assert.Equal(t, stream, mergeLanes(t, lanes))
}

// slowReader is a source that sleeps before each read.
type slowReader struct {
	io.Reader
	delay time.Duration
}

func (r slowReader) Read(p []byte) (int, error) {
	time.Sleep(r.delay)
	return r.Reader.Read(p)
}

// Waited says what bounds the split: with lanes slower than the source, the
// dealer waits for lanes and the source for free buffers; with a source
// slower than the lanes, the dealer waits for it. (Each holds unless the
// scheduler keeps the faster side from running for all 48 pieces.)
func TestSplitSaysWhatItWaitedFor(t *testing.T) {
	const piece = 4 << 10
	stream := evenStream(t, 48, piece)
	for _, tc := range []struct {
		name              string
		laneDelay, srcDel time.Duration
		want              []Wait
	}{
		{"slow lanes", 2 * time.Millisecond, 0, []Wait{WaitLanes, WaitBuffers}},
		{"slow source", 0, 2 * time.Millisecond, []Wait{WaitSources}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			waits := map[Wait]int{}
			lanes := make([]io.Writer, 2)
			for i := range lanes {
				lanes[i] = &lockedBuffer{delay: tc.laneDelay}
			}
			src := slowReader{bytes.NewReader(stream), tc.srcDel}
			_, err := Split(context.Background(), src, lanes, SplitOptions{PieceSize: piece, ReadBufferSize: piece,
				Waited: func(w Wait, d time.Duration) { mu.Lock(); waits[w]++; mu.Unlock() }})
			require.NoError(t, err)
			for _, w := range tc.want {
				assert.Positive(t, waits[w], "%v: waits %v", w, waits)
			}
		})
	}
}
