package xbstream

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// Writer writes chunks to a stream. It is not safe for concurrent use.
type Writer struct {
	w   io.Writer
	n   int64
	hdr []byte
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Written returns the number of bytes written so far.
func (w *Writer) Written() int64 { return w.n }

// WriteChunk writes c, computing its CRC32. The chunk is validated first: the
// path must fit MaxPathLen, and a sparse chunk's map must account for exactly
// the payload's bytes.
func (w *Writer) WriteChunk(c *Chunk) error {
	return w.write(c, false)
}

// WriteVerbatim writes c, a chunk a Reader returned (or a copy of it, its
// Payload and Sparse unchanged), with the CRC32 the Reader verified instead
// of hashing the payload again; a chunk no Reader verified gets its CRC
// computed, as WriteChunk does.
func (w *Writer) WriteVerbatim(c *Chunk) error {
	return w.write(c, true)
}

func (w *Writer) write(c *Chunk, reuseCRC bool) error {
	hdr, err := appendHeader(w.hdr[:0], c, reuseCRC)
	if err != nil {
		return err
	}
	w.hdr = hdr
	n, err := w.w.Write(hdr)
	w.n += int64(n)
	if err != nil {
		return err
	}
	if c.Type != ChunkEOF && len(c.Payload) > 0 {
		n, err = w.w.Write(c.Payload)
		w.n += int64(n)
		if err != nil {
			return err
		}
	}
	return nil
}

// appendHeader appends everything of c but its payload: the fixed header, the
// path, lengths, offset, CRC and sparse map.
func appendHeader(b []byte, c *Chunk, reuseCRC bool) ([]byte, error) {
	if len(c.Path) > MaxPathLen {
		return b, fmt.Errorf("%s: %w: %d bytes (max %d)", c.Path, ErrPathTooLong, len(c.Path), MaxPathLen)
	}
	b = append(b, Magic...)
	b = append(b, c.Flags, byte(c.Type))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.Path)))
	b = append(b, c.Path...)
	if c.Type == ChunkEOF {
		return b, nil
	}
	mapStart := 0
	if c.Type == ChunkSparse {
		var sum uint64
		for _, s := range c.Sparse {
			sum += uint64(s.Len)
		}
		if sum != uint64(len(c.Payload)) {
			return b, fmt.Errorf("%s: %w: map writes %d bytes, payload has %d", c.Path, ErrBadSparseMap, sum, len(c.Payload))
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(len(c.Sparse)))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(c.Payload)))
	b = binary.LittleEndian.AppendUint64(b, c.Offset)
	crcAt := len(b)
	b = append(b, 0, 0, 0, 0)
	if c.Type == ChunkSparse {
		mapStart = len(b)
		for _, s := range c.Sparse {
			b = binary.LittleEndian.AppendUint32(b, s.Skip)
			b = binary.LittleEndian.AppendUint32(b, s.Len)
		}
	}
	var crc uint32
	if reuseCRC && c.hasCRC {
		crc = c.crc
	} else {
		if mapStart > 0 {
			crc = crc32.Update(0, crc32.IEEETable, b[mapStart:])
		}
		crc = crc32.Update(crc, crc32.IEEETable, c.Payload)
	}
	binary.LittleEndian.PutUint32(b[crcAt:], crc)
	return b, nil
}
