package xbstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readAll(t testing.TB, stream []byte, opts ...ReaderOption) ([]Chunk, error) {
	t.Helper()
	r := NewReader(bytes.NewReader(stream), opts...)
	var out []Chunk
	for {
		c, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		cc := *c
		cc.Payload = bytes.Clone(c.Payload)
		cc.Sparse = append([]SparseSegment(nil), c.Sparse...)
		cc.crc, cc.hasCRC = 0, false
		if cc.Type != ChunkSparse {
			cc.Sparse = nil
		}
		out = append(out, cc)
	}
}

func TestReaderChunkTypesRoundTrip(t *testing.T) {
	in := []Chunk{
		{Type: ChunkPayload, Path: "ibdata1", Offset: 0, Payload: []byte("hello")},
		{Type: ChunkPayload, Path: "ibdata1", Offset: 5, Payload: []byte{}},
		{Type: ChunkEOF, Path: "ibdata1"},
		{Type: ChunkSparse, Path: "db/t.ibd", Offset: 16, Sparse: []SparseSegment{{Skip: 4, Len: 2}, {Skip: 0, Len: 3}, {Skip: 100, Len: 0}},
			Payload: []byte("abcde")},
		{Type: ChunkEOF, Path: "db/t.ibd"},
		// The ignorable flag on a known type changes nothing.
		{Flags: FlagIgnorable, Type: ChunkPayload, Path: "x", Payload: []byte("1")},
		// Unknown type with the flag: read with the payload layout and returned.
		{Flags: FlagIgnorable, Type: ChunkType('Z'), Path: "future", Offset: 7, Payload: []byte("opaque")},
		{Flags: FlagIgnorable, Type: ChunkSequence, Offset: 42, Payload: []byte{seqNext}},
	}
	s := newSB(t)
	for _, c := range in {
		s.chunk(c)
	}
	stream := s.bytes()
	out, err := readAll(t, stream)
	require.NoError(t, err)
	for i := range in {
		if in[i].Type != ChunkSparse {
			in[i].Sparse = nil
		}
		if in[i].Type == ChunkEOF {
			in[i].Payload = nil
		}
		if len(in[i].Payload) == 0 && in[i].Type != ChunkEOF {
			in[i].Payload = []byte{}
		}
	}
	require.Equal(t, len(in), len(out))
	for i := range in {
		assert.Equal(t, in[i].Type, out[i].Type, "chunk %d", i)
		assert.Equal(t, in[i].Path, out[i].Path, "chunk %d", i)
		assert.Equal(t, in[i].Offset, out[i].Offset, "chunk %d", i)
		assert.Equal(t, in[i].Flags, out[i].Flags, "chunk %d", i)
		assert.Equal(t, string(in[i].Payload), string(out[i].Payload), "chunk %d", i)
		assert.Equal(t, in[i].Sparse, out[i].Sparse, "chunk %d", i)
	}
	assert.True(t, out[6].Ignorable())
	assert.False(t, out[5].Ignorable())
	assert.Equal(t, uint64(2+3+100+4), out[3].Extent())

	// Offset reports consumed bytes; EncodedSize matches the encoding.
	r := NewReader(bytes.NewReader(stream))
	var sum int64
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		sum += c.EncodedSize()
		assert.Equal(t, sum, r.Offset())
	}
	assert.Equal(t, int64(len(stream)), sum)
}

func TestReaderUnknownTypeWithoutFlag(t *testing.T) {
	stream := newSB(t).p("a", 0, "abc").chunk(Chunk{Type: ChunkType('Q'), Path: "seq", Payload: []byte("1")}).bytes()
	_, err := readAll(t, stream)
	require.ErrorIs(t, err, ErrUnknownType)
	assert.Contains(t, err.Error(), "offset 38:")
}

func TestReaderCRCMismatch(t *testing.T) {
	stream := newSB(t).p("a", 0, "abc").p("db/b.ibd", 0, "payload").bytes()
	stream[len(stream)-1] ^= 0xff
	out, err := readAll(t, stream)
	require.ErrorIs(t, err, ErrChecksum)
	assert.Len(t, out, 1)
	assert.Regexp(t, `^offset 38: db/b.ibd: payload CRC32 mismatch`, err.Error())

	// A sparse chunk's CRC covers its map too.
	s := newSB(t).chunk(Chunk{Type: ChunkSparse, Path: "s", Sparse: []SparseSegment{{Skip: 1, Len: 1}}, Payload: []byte("x")}).bytes()
	mapAt := len(s) - 1 - 8
	s[mapAt] ^= 1
	_, err = readAll(t, s)
	require.ErrorIs(t, err, ErrChecksum)
}

func TestReaderTruncation(t *testing.T) {
	stream := newSB(t).p("some/path", 0, "0123456789").e("some/path").
		chunk(Chunk{Type: ChunkSparse, Path: "s", Sparse: []SparseSegment{{Skip: 1, Len: 2}}, Payload: []byte("xy")}).bytes()
	first := 14 + 9 + 20 + 10
	second := first + 14 + 9
	for cut := 0; cut < len(stream); cut++ {
		out, err := readAll(t, stream[:cut])
		switch cut {
		case 0, first, second:
			require.NoError(t, err, "cut at %d", cut)
			continue
		}
		require.Error(t, err, "cut at %d", cut)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF, "cut at %d: %v", cut, err)
		assert.Contains(t, err.Error(), "truncated", "cut at %d", cut)
		want := 0
		if cut > first {
			want = 1
		}
		if cut > second {
			want = 2
		}
		assert.Len(t, out, want, "cut at %d", cut)
	}
}

func TestReaderLimits(t *testing.T) {
	// A header claiming 60 MiB followed by a few bytes must fail cleanly and
	// must not allocate the claimed size.
	var hdr bytes.Buffer
	hdr.WriteString(Magic)
	hdr.Write([]byte{0, 'P'})
	binary.Write(&hdr, binary.LittleEndian, uint32(1))
	hdr.WriteString("a")
	binary.Write(&hdr, binary.LittleEndian, uint64(60<<20))
	binary.Write(&hdr, binary.LittleEndian, uint64(0))
	binary.Write(&hdr, binary.LittleEndian, uint32(0))
	hdr.WriteString("short")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readAll(t, hdr.Bytes())
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "allocated from the untrusted length")

	// Over the configured limit: refused before reading the payload.
	_, err = readAll(t, hdr.Bytes(), WithMaxChunkSize(1<<20))
	require.ErrorIs(t, err, ErrChunkTooLarge)
	assert.Contains(t, err.Error(), "offset 0: a: chunk of 62914560 payload bytes")

	// Sparse map entries count against the limit too.
	var sp bytes.Buffer
	sp.WriteString(Magic)
	sp.Write([]byte{0, 'S'})
	binary.Write(&sp, binary.LittleEndian, uint32(1))
	sp.WriteString("s")
	binary.Write(&sp, binary.LittleEndian, uint32(0xffffffff))
	sp.Write(make([]byte, 20))
	_, err = readAll(t, sp.Bytes())
	require.ErrorIs(t, err, ErrChunkTooLarge)

	// Path length limit (FN_REFLEN in the stock tools).
	long := newSB(t).p(strings.Repeat("x", MaxPathLen), 0, "a").bytes()
	_, err = readAll(t, long)
	require.NoError(t, err)
	binary.LittleEndian.PutUint32(long[10:], MaxPathLen+1)
	_, err = readAll(t, long)
	require.ErrorIs(t, err, ErrPathTooLong)
	require.ErrorIs(t, NewWriter(io.Discard).WriteChunk(&Chunk{Type: ChunkEOF, Path: strings.Repeat("y", 512)}), ErrPathTooLong)
}

func TestReaderBadMagicAndSparseMap(t *testing.T) {
	stream := newSB(t).p("a", 0, "abc").bytes()
	stream[3] = 'X'
	_, err := readAll(t, stream)
	require.ErrorIs(t, err, ErrBadMagic)

	// Map writing fewer bytes than the payload holds.
	require.ErrorIs(t, NewWriter(io.Discard).WriteChunk(&Chunk{Type: ChunkSparse, Path: "s",
		Sparse: []SparseSegment{{Skip: 1, Len: 1}}, Payload: []byte("ab")}), ErrBadSparseMap)
	s := newSB(t).chunk(Chunk{Type: ChunkSparse, Path: "s", Sparse: []SparseSegment{{Skip: 1, Len: 2}}, Payload: []byte("ab")}).bytes()
	// Patch the map's Len from 2 to 1 and fix the CRC so only the map is wrong.
	mapAt := len(s) - 2 - 8
	binary.LittleEndian.PutUint32(s[mapAt+4:], 1)
	crcAt := mapAt - 4
	binary.LittleEndian.PutUint32(s[crcAt:], crcOf(s[mapAt:]))
	_, err = readAll(t, s)
	require.ErrorIs(t, err, ErrBadSparseMap)

	// Sticky errors.
	r := NewReader(bytes.NewReader(stream))
	_, err1 := r.Next()
	_, err2 := r.Next()
	require.Error(t, err1)
	assert.True(t, errors.Is(err2, ErrBadMagic))
}
