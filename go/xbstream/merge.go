package xbstream

import (
	"bufio"
	"fmt"
	"io"
)

// Merge turns lanes back into one standard xbstream on dst that stock
// `mbstream -x` / `xbstream -x` can extract. Split lanes are merged by their
// sequence records (a streaming k-way merge holding one chunk per lane),
// which restores the original stream's chunk order, and the records are
// dropped; Merge fails if a numbered chunk is missing or repeated. Plain lanes
// (Percona's --fifo-streams: each file wholly in one lane, in order) are
// concatenated in lane order. Every chunk is parsed and its CRC32 verified.
func Merge(dst io.Writer, lanes []io.Reader) error {
	if len(lanes) == 0 {
		return fmt.Errorf("xbstream.Merge: no lanes")
	}
	bw := bufio.NewWriterSize(dst, 1<<20)
	w := NewWriter(bw)
	readers := make([]*Reader, len(lanes))
	for i, l := range lanes {
		readers[i] = NewReader(l)
	}
	// The first chunk of each lane tells whether the lanes are split lanes.
	heads := make([]*Chunk, len(lanes))
	sequenced := 0
	for i, r := range readers {
		c, err := r.Next()
		if err == io.EOF {
			continue
		}
		if err != nil {
			return &LaneError{Lane: i, Err: err}
		}
		heads[i] = c
		if c.Type == ChunkSequence {
			sequenced++
		}
	}
	var err error
	switch {
	case sequenced == 0:
		err = mergeConcat(w, readers, heads)
	case sequenced == len(lanes):
		err = mergeSequenced(w, readers, heads)
	default:
		err = fmt.Errorf("%w: %d of %d lanes are split lanes (sequence records), the others are not", ErrSequence, sequenced, len(lanes))
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

func mergeConcat(w *Writer, readers []*Reader, heads []*Chunk) error {
	for i, r := range readers {
		c := heads[i]
		for c != nil {
			if c.Type == ChunkSequence {
				return &LaneError{Lane: i, Err: fmt.Errorf("offset %d: %w: sequence record in a plain lane", r.Offset(), ErrSequence)}
			}
			if err := w.WriteVerbatim(c); err != nil {
				return err
			}
			var err error
			c, err = r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return &LaneError{Lane: i, Err: err}
			}
		}
	}
	return nil
}

// seqLane is the merge state of one split lane.
type seqLane struct {
	r     *Reader
	head  *Chunk // next chunk to emit, numbered num
	num   uint64
	done  bool // end record seen
	total uint64
	cut   uint64
	cuts  int
	seen  bool // num holds a number already emitted or pending
}

// advance reads sequence records until the lane's next numbered chunk (or its
// end record) and leaves it in head.
func (l *seqLane) advance(first *Chunk) error {
	l.head = nil
	c := first
	for {
		if c == nil {
			var err error
			c, err = l.r.Next()
			if err == io.EOF {
				return fmt.Errorf("offset %d: %w: split lane ends without its end record (truncated?)", l.r.Offset(), io.ErrUnexpectedEOF)
			}
			if err != nil {
				return err
			}
		}
		if c.Type != ChunkSequence {
			return fmt.Errorf("offset %d: %w: chunk without a sequence record", l.r.Offset(), ErrSequence)
		}
		kind, num, err := parseSeqRecord(c)
		if err != nil {
			return err
		}
		switch kind {
		case seqCut:
			l.cut, l.cuts = num, l.cuts+1
			c = nil
			continue
		case seqEnd:
			l.done, l.total = true, num
			if c, err := l.r.Next(); err != io.EOF {
				if err == nil {
					err = fmt.Errorf("offset %d: %w: chunk of type %v after the end record", l.r.Offset(), ErrSequence, c.Type)
				}
				return err
			}
			return nil
		}
		if l.seen && num <= l.num {
			return fmt.Errorf("%w: chunk number %d after %d", ErrSequence, num, l.num)
		}
		data, err := l.r.Next()
		if err != nil {
			if err == io.EOF {
				err = fmt.Errorf("offset %d: %w: lane ends after a sequence record", l.r.Offset(), io.ErrUnexpectedEOF)
			}
			return err
		}
		if data.Type == ChunkSequence {
			return fmt.Errorf("offset %d: %w: two sequence records in a row", l.r.Offset(), ErrSequence)
		}
		l.head, l.num, l.seen = data, num, true
		return nil
	}
}

func mergeSequenced(w *Writer, readers []*Reader, heads []*Chunk) error {
	lanes := make([]*seqLane, len(readers))
	for i, r := range readers {
		lanes[i] = &seqLane{r: r}
		if err := lanes[i].advance(heads[i]); err != nil {
			return &LaneError{Lane: i, Err: err}
		}
	}
	var next uint64
	for {
		// Numbers are consecutive across lanes: the lane whose head is the
		// next number is the only candidate; a scan over N lanes is cheap.
		found := -1
		active := false
		for i, l := range lanes {
			if l.head != nil {
				active = true
				if l.num == next {
					found = i
					break
				}
			}
		}
		if found < 0 {
			if active {
				return fmt.Errorf("%w: chunk number %d is in no lane (a lane is missing, repeated or from another backup)", ErrSequence, next)
			}
			break
		}
		l := lanes[found]
		if err := w.WriteVerbatim(l.head); err != nil {
			return err
		}
		next++
		if err := l.advance(nil); err != nil {
			return &LaneError{Lane: found, Err: err}
		}
	}
	for i, l := range lanes {
		if l.total != next {
			return &LaneError{Lane: i, Err: fmt.Errorf("%w: end record says %d chunks, the lanes hold %d", ErrSequence, l.total, next)}
		}
	}
	return nil
}
