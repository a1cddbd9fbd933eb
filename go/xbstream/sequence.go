package xbstream

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Sequence records.
//
// Split deals the chunks of one stream to N lanes; chunks of one file may land
// in different lanes. To let Extract and Merge reproduce the original order
// where it matters, Split writes a sequence record into a lane before every
// chunk it deals there. A record is a standard chunk with FlagIgnorable, type
// ChunkSequence ('v'), an empty path, Offset holding a number, and a one-byte
// payload naming the kind:
//
//	'n' (next): the next chunk of this lane is chunk number Offset (0-based) of
//	    the original stream.
//	'c' (cut):  written to every lane before chunk number Offset, the first
//	    chunk of a path that had already seen its 'E' chunk. `mbstream -x`
//	    stops extracting at such a chunk (see Extract), so Extract writes
//	    nothing from any lane after this record.
//	'z' (end):  the last chunk of every lane; the original stream had Offset
//	    chunks in all. A lane without it is truncated.
//
// A lane therefore stays a well-formed xbstream. Lanes without records (Percona
// XtraBackup's --fifo-streams, where each file goes wholly through one FIFO in
// order) are accepted by Extract and Merge too.
const (
	seqNext byte = 'n'
	seqCut  byte = 'c'
	seqEnd  byte = 'z'
)

// seqRecordSize is the encoded size of a sequence record.
const seqRecordSize = len(Magic) + 1 + 1 + 4 + 8 + 8 + 4 + 1

// appendSeqRecord appends a complete sequence record chunk to b.
func appendSeqRecord(b []byte, kind byte, n uint64) []byte {
	b = append(b, Magic...)
	b = append(b, FlagIgnorable, byte(ChunkSequence))
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint64(b, 1)
	b = binary.LittleEndian.AppendUint64(b, n)
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE([]byte{kind}))
	return append(b, kind)
}

// parseSeqRecord validates a ChunkSequence chunk and returns its kind and number.
func parseSeqRecord(c *Chunk) (byte, uint64, error) {
	if c.Path != "" || len(c.Payload) != 1 {
		return 0, 0, fmt.Errorf("%w: malformed sequence record (path %q, %d payload bytes)", ErrSequence, c.Path, len(c.Payload))
	}
	switch k := c.Payload[0]; k {
	case seqNext, seqCut, seqEnd:
		return k, c.Offset, nil
	default:
		return 0, 0, fmt.Errorf("%w: unknown sequence record kind %q", ErrSequence, k)
	}
}

// seqCheck accumulates the sequence numbers seen across lanes and verifies at
// the end that they are exactly 0..total-1, each once: count, sum and sum of
// squares (mod 2^64) of the numbers must match those of 0..total-1. That
// catches a missing, repeated or truncated lane without keeping the numbers.
type seqCheck struct {
	count, sum, sumSq uint64
}

func (s *seqCheck) add(n uint64) {
	s.count++
	s.sum += n
	s.sumSq += n * n
}

func (s *seqCheck) merge(o seqCheck) {
	s.count += o.count
	s.sum += o.sum
	s.sumSq += o.sumSq
}

func (s *seqCheck) verify(total uint64) error {
	var want seqCheck
	// Closed forms mod 2^64 would need division of overflowing products; the
	// loop is cheap next to reading the chunks it counts.
	for i := uint64(0); i < total && i <= s.count; i++ {
		want.add(i)
	}
	if s.count != total || s.sum != want.sum || s.sumSq != want.sumSq {
		return fmt.Errorf("%w: lanes hold %d numbered chunks, the stream had %d, or some are missing or repeated (is a lane missing, repeated or from "+
			"another backup?)",
			ErrSequence, s.count, total)
	}
	return nil
}
