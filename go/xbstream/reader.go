package xbstream

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Reader parses chunks from a stream. It is not safe for concurrent use.
type Reader struct {
	br       *bufio.Reader
	off      int64
	maxChunk int64
	// maxPieced bounds a payload chunk readPiece hands out in pieces.
	maxPieced int64
	piecing   bool // header is called by readPiece
	bufSize   int

	hdr      [24]byte
	pathBuf  [MaxPathLen]byte
	lastPath string
	buf      []byte // payload buffer, reused
	sparse   []SparseSegment
	rawMap   []byte
	chunk    Chunk
	err      error // sticky
	piece    pieceState
	cont     bool // the last readPiece returned a piece after the first of its chunk
}

// pieceState is the payload chunk readPiece is handing out in pieces.
type pieceState struct {
	active   bool
	start    int64  // stream offset of the chunk's header, for errors
	length   uint64 // the whole payload
	left     uint64 // payload bytes not read yet
	crc      uint32 // of the pieces read so far
	stored   uint32
	nextFrom uint64 // file offset of the next piece
}

// ReaderOption configures a Reader.
type ReaderOption func(*Reader)

// WithMaxChunkSize sets the largest payload (plus sparse map) a chunk may
// declare; larger chunks are an error before anything is allocated for them.
// n <= 0 means DefaultMaxChunkSize.
func WithMaxChunkSize(n int64) ReaderOption {
	return func(r *Reader) {
		if n > 0 {
			r.maxChunk = n
		}
	}
}

// WithMaxPiecedChunkSize sets the largest payload a chunk read in pieces may
// declare (it is never held whole); n <= 0 means the WithMaxChunkSize limit.
func WithMaxPiecedChunkSize(n int64) ReaderOption {
	return func(r *Reader) {
		if n > 0 {
			r.maxPieced = n
		}
	}
}

// WithReadBufferSize sets the size of the reader's bufio buffer (default 256 KiB).
func WithReadBufferSize(n int) ReaderOption {
	return func(r *Reader) {
		if n > 0 {
			r.bufSize = n
		}
	}
}

// NewReader returns a Reader reading chunks from rd.
func NewReader(rd io.Reader, opts ...ReaderOption) *Reader {
	r := &Reader{maxChunk: DefaultMaxChunkSize, bufSize: 256 << 10}
	for _, o := range opts {
		o(r)
	}
	r.br = bufio.NewReaderSize(rd, r.bufSize)
	return r
}

// Offset returns the number of stream bytes consumed so far.
func (r *Reader) Offset() int64 { return r.off }

// Next returns the next chunk. It returns io.EOF at a clean end of stream (at a
// chunk boundary), and an error wrapping io.ErrUnexpectedEOF when the stream
// ends inside a chunk. Every payload's CRC32 is verified. Chunks of an unknown
// type with FlagIgnorable are returned too (Chunk.Ignorable reports them);
// unknown types without the flag are an error, as in the stock tools. The
// returned chunk and its Payload are valid until the next call. After an error
// every further call returns the same error.
func (r *Reader) Next() (*Chunk, error) {
	if r.err != nil {
		return nil, r.err
	}
	c, err := r.read(&r.buf)
	if err != nil {
		r.err = err
		return nil, err
	}
	return c, nil
}

func (r *Reader) fail(start int64, path, msg string, err error) error {
	return &FormatError{Offset: start, Path: path, Msg: msg, Err: err}
}

// failIO reports a read of the stream that failed: a stream that ended is
// truncated; any other error is the source's (it could not be read), and
// says nothing about the stream.
func (r *Reader) failIO(start int64, path, what string, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return r.fail(start, path, fmt.Sprintf("truncated %s at stream offset %d: %v", what, r.off, err), err)
	}
	return r.fail(start, path, fmt.Sprintf("reading the %s at stream offset %d: %v", what, r.off, err), err)
}

// read parses one chunk, reading its payload into *buf (grown as needed, never
// beyond the declared and checked length).
func (r *Reader) read(buf *[]byte) (*Chunk, error) {
	start := r.off
	c, length, crc, stored, err := r.header()
	if err != nil || c.Type == ChunkEOF {
		return c, err
	}
	return r.payload(buf, start, c, length, crc, stored)
}

// readPiece is read for a caller that wants at most max payload bytes at a
// time: a payload chunk longer than that comes as consecutive pieces, each
// a chunk of its own (the offset advanced, no stored CRC), read into *buf.
// The chunk's CRC32 is checked when its last piece is read, so an error may
// come after earlier pieces were handed out: the caller must treat the whole
// stream as failed then, as Split does. Other chunks come whole, as read.
func (r *Reader) readPiece(buf *[]byte, max int) (*Chunk, error) {
	r.cont = r.piece.active
	if !r.piece.active {
		start := r.off
		r.piecing = true
		c, length, crc, stored, err := r.header()
		r.piecing = false
		if err != nil || c.Type == ChunkEOF {
			return c, err
		}
		if c.Type != ChunkPayload || length <= uint64(max) {
			return r.payload(buf, start, c, length, crc, stored)
		}
		r.piece = pieceState{active: true, start: start, length: length, left: length, crc: crc, stored: stored, nextFrom: c.Offset}
	}
	ps, c := &r.piece, &r.chunk
	n := int(min(ps.left, uint64(max)))
	var k int
	var err error
	*buf, k, err = readFullGrow(r.br, *buf, n)
	r.off += int64(k)
	if err != nil {
		ps.active = false
		return nil, r.failIO(ps.start, c.Path, "payload", err)
	}
	c.Offset, c.Payload, c.crc, c.hasCRC = ps.nextFrom, *buf, 0, false
	ps.crc = crc32.Update(ps.crc, crc32.IEEETable, c.Payload)
	ps.left -= uint64(n)
	ps.nextFrom += uint64(n)
	if ps.left == 0 {
		ps.active = false
		if ps.crc != ps.stored {
			return nil, r.fail(ps.start, c.Path, fmt.Sprintf("payload CRC32 mismatch (stored 0x%08x, computed 0x%08x, %d bytes at file offset %d)",
				ps.stored, ps.crc, ps.length, ps.nextFrom-ps.length), ErrChecksum)
		}
	}
	return c, nil
}

// header parses a chunk up to its payload: the header, the path and, for a
// payload or sparse chunk, the payload's length, offset and stored CRC32, and
// the sparse map (crc is the CRC32 of the map so far).
func (r *Reader) header() (c *Chunk, length uint64, crc, stored uint32, err error) {
	start := r.off
	hdr := r.hdr[:14]
	n, err := io.ReadFull(r.br, hdr)
	r.off += int64(n)
	if err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, 0, 0, 0, io.EOF
		}
		return nil, 0, 0, 0, r.failIO(start, "", "chunk header", err)
	}
	if string(hdr[:8]) != Magic {
		return nil, 0, 0, 0, r.fail(start, "", fmt.Sprintf("wrong chunk magic %q", hdr[:8]), ErrBadMagic)
	}
	c = &r.chunk
	*c = Chunk{Flags: hdr[8], Type: ChunkType(hdr[9])}
	if !c.Type.Known() && c.Flags&FlagIgnorable == 0 {
		return nil, 0, 0, 0, r.fail(start, "", fmt.Sprintf("unknown chunk type %v (flags 0x%02x)", c.Type, c.Flags), ErrUnknownType)
	}
	pathLen := binary.LittleEndian.Uint32(hdr[10:14])
	if pathLen > MaxPathLen {
		return nil, 0, 0, 0, r.fail(start, "", fmt.Sprintf("path length %d exceeds %d", pathLen, MaxPathLen), ErrPathTooLong)
	}
	p := r.pathBuf[:pathLen]
	n, err = io.ReadFull(r.br, p)
	r.off += int64(n)
	if err != nil {
		return nil, 0, 0, 0, r.failIO(start, "", "path", err)
	}
	// Consecutive chunks usually share a path: reuse the string.
	if string(p) != r.lastPath {
		r.lastPath = string(p)
	}
	c.Path = r.lastPath
	if c.Type == ChunkEOF {
		return c, 0, 0, 0, nil
	}

	var mapCount uint32
	if c.Type == ChunkSparse {
		n, err = io.ReadFull(r.br, r.hdr[:4])
		r.off += int64(n)
		if err != nil {
			return nil, 0, 0, 0, r.failIO(start, c.Path, "sparse map count", err)
		}
		mapCount = binary.LittleEndian.Uint32(r.hdr[:4])
	}
	h := r.hdr[:20]
	n, err = io.ReadFull(r.br, h)
	r.off += int64(n)
	if err != nil {
		return nil, 0, 0, 0, r.failIO(start, c.Path, "payload header", err)
	}
	length = binary.LittleEndian.Uint64(h[0:8])
	c.Offset = binary.LittleEndian.Uint64(h[8:16])
	stored = binary.LittleEndian.Uint32(h[16:20])
	mapBytes := uint64(mapCount) * 8
	limit := uint64(r.maxChunk)
	if r.piecing && c.Type == ChunkPayload {
		limit = max(limit, uint64(r.maxPieced))
	}
	if length > limit || mapBytes > limit || length+mapBytes > limit {
		return nil, 0, 0, 0, r.fail(start, c.Path, fmt.Sprintf("chunk of %d payload bytes and %d sparse map entries exceeds the %d byte limit",
			length, mapCount, limit), ErrChunkTooLarge)
	}
	if c.Offset > 1<<62 {
		return nil, 0, 0, 0, r.fail(start, c.Path, fmt.Sprintf("payload offset %d out of range", c.Offset), ErrChunkTooLarge)
	}

	if crc, err = r.sparseMap(start, c, mapCount, length, crc); err != nil {
		return nil, 0, 0, 0, err
	}
	return c, length, crc, stored, nil
}

// sparseMap reads a sparse chunk's map of mapCount entries, which must
// write length payload bytes, into c.Sparse, and returns crc updated with it.
func (r *Reader) sparseMap(start int64, c *Chunk, mapCount uint32, length uint64, crc uint32) (uint32, error) {
	if mapCount == 0 {
		if c.Type != ChunkSparse {
			return crc, nil
		}
		if length != 0 {
			return 0, r.fail(start, c.Path, fmt.Sprintf("sparse chunk without a map carries %d payload bytes", length), ErrBadSparseMap)
		}
		c.Sparse = r.sparse[:0]
		return crc, nil
	}
	var n int
	var err error
	r.rawMap, n, err = readFullGrow(r.br, r.rawMap, int(mapCount)*8)
	r.off += int64(n)
	if err != nil {
		return 0, r.failIO(start, c.Path, "sparse map", err)
	}
	crc = crc32.Update(crc, crc32.IEEETable, r.rawMap)
	if cap(r.sparse) < int(mapCount) {
		r.sparse = make([]SparseSegment, 0, growCap(cap(r.sparse), int(mapCount)))
	}
	r.sparse = r.sparse[:mapCount]
	var sum uint64
	for i := range r.sparse {
		s := SparseSegment{
			Skip: binary.LittleEndian.Uint32(r.rawMap[8*i:]),
			Len:  binary.LittleEndian.Uint32(r.rawMap[8*i+4:]),
		}
		r.sparse[i] = s
		sum += uint64(s.Len)
	}
	if sum != length {
		return 0, r.fail(start, c.Path, fmt.Sprintf("sparse map writes %d bytes but the payload has %d", sum, length), ErrBadSparseMap)
	}
	c.Sparse = r.sparse
	return crc, nil
}

// payload reads the payload of the chunk header parsed (started at stream
// offset start) into *buf and checks its CRC32.
func (r *Reader) payload(buf *[]byte, start int64, c *Chunk, length uint64, crc, stored uint32) (*Chunk, error) {
	var n int
	var err error
	*buf, n, err = readFullGrow(r.br, *buf, int(length))
	r.off += int64(n)
	if err != nil {
		return nil, r.failIO(start, c.Path, "payload", err)
	}
	c.Payload = *buf
	crc = crc32.Update(crc, crc32.IEEETable, c.Payload)
	if crc != stored {
		return nil, r.fail(start, c.Path, fmt.Sprintf("payload CRC32 mismatch (stored 0x%08x, computed 0x%08x, %d bytes at file offset %d)",
			stored, crc, length, c.Offset), ErrChecksum)
	}
	c.crc, c.hasCRC = crc, true
	return c, nil
}

// growCap returns the next capacity on the way to need: 1 MiB, then x4.
func growCap(have, need int) int {
	return min(max(4*have, 1<<20), need)
}

// readFullGrow reads exactly n bytes into buf (reusing its capacity). When buf
// is too small it grows in steps as data actually arrives, so a hostile length
// that passed the limit check costs memory only for bytes really present.
func readFullGrow(r io.Reader, buf []byte, n int) ([]byte, int, error) {
	if cap(buf) >= n {
		buf = buf[:n]
		k, err := io.ReadFull(r, buf)
		return buf[:k], k, err
	}
	buf = buf[:0]
	for len(buf) < n {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), growCap(cap(buf), n))
			copy(nb, buf)
			buf = nb
		}
		m := min(cap(buf), n)
		k, err := io.ReadFull(r, buf[len(buf):m])
		buf = buf[:len(buf)+k]
		if err != nil {
			return buf, len(buf), err
		}
	}
	return buf, n, nil
}
