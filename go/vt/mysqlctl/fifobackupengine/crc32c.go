package fifobackupengine

import (
	"fmt"
	"hash/crc32"
	"regexp"
)

// CRC-32C (Castagnoli) of lane streams and of their frames: what a lane
// writer was given, recorded as it writes (LaneInfo.StreamCRC32C,
// Frame.CRC32C) and checked by every read (lanecheck.go, framecheck.go).

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// streamSum is a running CRC-32C.
type streamSum uint32

func (s *streamSum) add(p []byte) { *s = streamSum(crc32.Update(uint32(*s), castagnoli, p)) }

func (s *streamSum) total() streamSum { return *s }

// streamSummer takes a lane's CRC-32C as it is read whole: in one sum, or
// frame by frame as its lane index cuts it (frameWalk, verify's).
type streamSummer interface {
	add(p []byte)
	total() streamSum
}

var _ streamSummer = (*streamSum)(nil)

// String is the form the MANIFEST and the lane index record: 8 lower-case
// hex digits.
func (s streamSum) String() string { return fmt.Sprintf("%08x", uint32(s)) }

var streamSumForm = regexp.MustCompile(`^[0-9a-f]{8}$`)

// then is the CRC-32C of s's bytes followed by n bytes whose CRC-32C is
// next, without those bytes (zlib's crc32_combine: s times x^(8n) modulo
// the polynomial). A lane writer sums each frame once and folds it into its
// stream's sum as the frame ends, so the bytes are summed once, not twice.
func (s streamSum) then(next streamSum, n int64) streamSum {
	// x^(8n) = the product of x^(2^k) for each bit k of 8n.
	xn := uint32(1) << 31 // x^0
	for k := 3; n > 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			xn = multModP(x2n[k], xn)
		}
	}
	return streamSum(multModP(xn, uint32(s))) ^ next
}

// castagnoliReversed is the CRC-32C polynomial, bit-reversed (x^0 is the
// top bit).
const castagnoliReversed = 0x82f63b78

// multModP is a*b modulo the polynomial, both reversed as the CRC is.
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ castagnoliReversed
		} else {
			b >>= 1
		}
	}
	return p
}

// x2n[k] is x^(2^k) modulo the polynomial, for every bit of 8n (n < 2^63).
var x2n = func() (t [3 + 63]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// laneSums is a lane writer's CRC-32Cs, in one pass over its bytes: its
// open frame's, folded into its stream's as the frame ends.
type laneSums struct {
	stream, frame streamSum
	frameBytes    int64
}

func (s *laneSums) add(p []byte) {
	s.frame.add(p)
	s.frameBytes += int64(len(p))
}

// endFrame returns the CRC-32C of the bytes since the last endFrame, now
// part of the stream's.
func (s *laneSums) endFrame() streamSum {
	f := s.frame
	s.stream = s.stream.then(f, s.frameBytes)
	s.frame, s.frameBytes = 0, 0
	return f
}

// total is the CRC-32C of every byte added, the open frame's included.
func (s *laneSums) total() streamSum { return s.stream.then(s.frame, s.frameBytes) }
