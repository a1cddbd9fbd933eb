package xbstream

import (
	"fmt"
	"sort"
)

// interval is a range [off, end) of a file written by the chunks numbered
// firstSeq..lastSeq of the stream (plain lanes: positions in the lane).
type interval struct{ off, end, firstSeq, lastSeq uint64 }

// intervals are the ranges of one file written so far: sorted by offset,
// disjoint, and merged where adjacent ranges were written in stream order.
type intervals []interval

// insert records [off, end) written by chunk number seq (or a piece of it,
// pieces in offset order), merging it with its
// neighbours when they are adjacent and in stream order.
func (ivs *intervals) insert(off, end, seq uint64) error {
	s := *ivs
	i := sort.Search(len(s), func(i int) bool { return s[i].off >= off })
	if i > 0 && s[i-1].end > off {
		l := s[i-1]
		return fmt.Errorf("%w: bytes [%d, %d) written again (already [%d, %d))", ErrOverlap, off, end, l.off, l.end)
	}
	if i < len(s) && s[i].off < end {
		r := s[i]
		return fmt.Errorf("%w: bytes [%d, %d) written again (already [%d, %d))", ErrOverlap, off, end, r.off, r.end)
	}
	// <= on the left: the pieces of one chunk (extractPiece) share its number.
	left := i > 0 && s[i-1].end == off && s[i-1].lastSeq <= seq
	right := i < len(s) && s[i].off == end && seq < s[i].firstSeq
	switch {
	case left && right:
		s[i-1].end = s[i].end
		s[i-1].lastSeq = s[i].lastSeq
		s = append(s[:i], s[i+1:]...)
	case left:
		s[i-1].end = end
		s[i-1].lastSeq = seq
	case right:
		s[i].off = off
		s[i].firstSeq = seq
	default:
		s = append(s, interval{})
		copy(s[i+1:], s[i:])
		s[i] = interval{off: off, end: end, firstSeq: seq, lastSeq: seq}
	}
	*ivs = s
	return nil
}

// check reports what mbstream would not have written the same way: a range
// never written from offset 0 on, or two adjacent ranges written out of
// stream order (mbstream writes at the running offset and fails there).
func (ivs intervals) check() error {
	if len(ivs) == 0 {
		return nil
	}
	if ivs[0].off != 0 {
		return fmt.Errorf("%w: bytes [0, %d) never written", ErrGap, ivs[0].off)
	}
	if len(ivs) == 1 {
		return nil
	}
	// Adjacent ranges written in stream order were merged by insert: the
	// first two left are apart (a gap) or were written out of order.
	a, b := ivs[0], ivs[1]
	if a.end != b.off {
		return fmt.Errorf("%w: bytes [%d, %d) never written", ErrGap, a.end, b.off)
	}
	return fmt.Errorf("%w: the chunk at file offset %d comes before the one at %d in the stream", ErrOutOfOrder, b.off, a.off)
}
