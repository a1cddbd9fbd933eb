package xbstream

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigChunkStream is one file of 8 chunks of 4 MiB, like Percona's chunks
// with a 4 MiB read buffer, then a small file.
func bigChunkStream(t testing.TB) ([]byte, []byte) {
	s := newSB(t)
	big := patterned(32<<20, 3)
	for off := 0; off < len(big); off += 4 << 20 {
		s.p("db/big.ibd", uint64(off), string(big[off:off+4<<20]))
	}
	s.e("db/big.ibd")
	s.file("db/small.ibd", patterned(5000, 7), 5000)
	return s.bytes(), big
}

// readPiece hands a chunk out in pieces with advancing offsets, and the
// other chunks whole.
func TestReadPiece(t *testing.T) {
	stream, big := bigChunkStream(t)
	r := NewReader(bytes.NewReader(stream))
	var buf []byte
	var got []byte
	pieces := 0
	for {
		c, err := r.readPiece(&buf, 1<<20)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if c.Path != "db/big.ibd" || c.Type != ChunkPayload {
			continue
		}
		require.LessOrEqual(t, len(c.Payload), 1<<20)
		require.Equal(t, uint64(len(got)), c.Offset, "piece %d", pieces)
		got = append(got, c.Payload...)
		pieces++
	}
	assert.Equal(t, 32, pieces)
	assert.Equal(t, big, got)
	assert.LessOrEqual(t, cap(buf), 1<<20, "the buffer never held more than a piece")
}

// A chunk whose CRC does not match fails at its last piece, naming the file;
// a stream cut inside a piece fails as truncated.
func TestReadPieceErrors(t *testing.T) {
	stream, _ := bigChunkStream(t)
	readAllPieces := func(b []byte) error {
		r := NewReader(bytes.NewReader(b))
		var buf []byte
		for {
			if _, err := r.readPiece(&buf, 1<<20); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
		}
	}
	require.NoError(t, readAllPieces(stream))

	flipped := bytes.Clone(stream)
	flipped[len(flipped)/3] ^= 0x40 // inside the payload of a 4 MiB chunk
	err := readAllPieces(flipped)
	require.ErrorIs(t, err, ErrChecksum)
	assert.ErrorContains(t, err, "db/big.ibd")

	err = readAllPieces(stream[:5<<20+100])
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.ErrorContains(t, err, "db/big.ibd")
}

// Split with pieces holds pieces, not the tool's chunks: what it allocates
// does not grow with the chunk size. Without pieces, each of its items
// comes to hold a whole 4 MiB chunk.
func TestSplitMemoryIsPiecesNotChunks(t *testing.T) {
	stream, _ := bigChunkStream(t)
	allocated := func(piece int) uint64 {
		ws := []io.Writer{io.Discard, io.Discard, io.Discard, io.Discard}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{PieceSize: piece, ReadBufferSize: 64 << 10})
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		return after.TotalAlloc - before.TotalAlloc
	}
	whole, pieces := allocated(0), allocated(256<<10)
	t.Logf("allocated while splitting: %d KiB with whole 4 MiB chunks, %d KiB with 256 KiB pieces", whole>>10, pieces>>10)
	assert.Less(t, pieces, uint64(4<<20), "pieces: less than one of the tool's chunks in all")
	assert.Greater(t, whole, uint64(4*4<<20), "whole chunks: a chunk per item (the test measures what it claims)")

	// And the lanes carry the same files.
	bufs := make([]bytes.Buffer, 4)
	ws := make([]io.Writer, len(bufs))
	lanes := make([][]byte, len(bufs))
	for i := range bufs {
		ws[i] = &bufs[i]
	}
	_, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{PieceSize: 256 << 10})
	require.NoError(t, err)
	for i := range bufs {
		lanes[i] = bufs[i].Bytes()
	}
	want := t.TempDir()
	_, err = Extract(context.Background(), want, ReaderLanes(bytes.NewReader(stream)), ExtractOptions{})
	require.NoError(t, err)
	got := t.TempDir()
	_, err = Extract(context.Background(), got, readers(lanes), ExtractOptions{})
	require.NoError(t, err)
	assert.Equal(t, readTree(t, want), readTree(t, got))
}

// Reading lanes (restore, verify) holds a piece of a chunk, not the chunk:
// a stream of 4 MiB chunks is checked with less than one chunk allocated,
// and a damaged chunk still fails, naming its file.
func TestExtractHoldsPiecesNotChunks(t *testing.T) {
	stream, _ := bigChunkStream(t)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st, err := Verify(context.Background(), ReaderLanes(bytes.NewReader(stream)), ExtractOptions{})
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Equal(t, int64(32<<20+5000), st.Bytes)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated verifying 32 MiB in 4 MiB chunks: %d KiB", allocated>>10)
	assert.Less(t, allocated, uint64(4<<20))

	flipped := bytes.Clone(stream)
	flipped[len(flipped)/2] ^= 1
	_, err = Extract(context.Background(), t.TempDir(), ReaderLanes(bytes.NewReader(flipped)), ExtractOptions{})
	require.ErrorIs(t, err, ErrChecksum)
	assert.ErrorContains(t, err, "db/big.ibd")
}
