package xbstream

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
)

// The order of chunks: each lane's goroutine reads its chunks in order and
// checks the sequence records of split lanes (see sequence.go) as they come
// (runLane); once every lane is read, checkSequences checks that the lanes
// together hold every chunk of the original stream exactly once.

// laneState is what one lane's goroutine knows of its lane.
type laneState struct {
	bytes, chunks atomic.Int64
	sequenced     int8 // 0 unknown, 1 yes, -1 no
	total         uint64
	hasEnd        bool
	cut           uint64
	hasCut        bool
	seqs          seqCheck
}

// extractPiece is the most of a chunk a lane holds in memory: a longer chunk
// (the tool's own, up to 64 MiB with Percona's read buffer) is read and
// written in pieces, its CRC32 checked at its last piece. A mismatch fails
// the extraction after the earlier pieces were written, which is the fate of
// everything a failed extraction wrote.
const extractPiece = 256 << 10

// runLane reads one lane's chunks in order, checks its sequence records and
// applies every chunk.
func (e *extractor) runLane(ctx context.Context, lane int, lr io.Reader) error {
	ls := &e.lanes[lane]
	r := NewReader(lr, WithMaxChunkSize(e.opts.MaxChunkSize))
	w := &laneWalk{e: e, lane: lane, ls: ls}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := r.Offset()
		c, err := r.readPiece(&r.buf, extractPiece)
		ls.bytes.Store(r.Offset())
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if e.opts.OnRecord != nil && !r.cont {
			e.opts.OnRecord(lane, start, c.Path)
		}
		if err := w.chunk(c, r.cont); err != nil {
			return &FormatError{Offset: start, Path: c.Path, Msg: err.Error(), Err: err}
		}
	}
	if w.pending {
		return &FormatError{Offset: r.Offset(), Msg: "lane ends after a sequence record", Err: ErrSequence}
	}
	if ls.sequenced == 1 && !ls.hasEnd && e.opts.Select == nil {
		return &FormatError{Offset: r.Offset(), Msg: "split lane has no end record (truncated?)", Err: fmt.Errorf("%w: %w", ErrSequence, io.ErrUnexpectedEOF)}
	}
	return nil
}

// laneWalk is what runLane knows of its lane between chunks.
type laneWalk struct {
	e    *extractor
	lane int
	ls   *laneState

	pending    bool   // a 'n' record announced the next chunk
	pendingSeq uint64 // its number
	lastSeq    uint64
	haveLast   bool
	localSeq   uint64              // plain lanes: position in the lane
	closed     map[string]struct{} // plain lanes: paths whose 'E' went by
	stopped    bool                // after a cut: read on, write nothing
	seq        uint64              // number of the chunk being applied
	skipped    bool                // the chunk being read is not selected
}

// chunk takes the lane's next chunk (or, cont, the next piece of the chunk
// being applied).
func (w *laneWalk) chunk(c *Chunk, cont bool) error {
	if cont { // the rest of the chunk being applied, checked with its first piece
		if w.stopped || w.skipped {
			return nil
		}
		return w.e.apply(w.lane, w.seq, c)
	}
	if err := w.checkMode(c); err != nil {
		return err
	}
	if w.ls.hasEnd {
		return fmt.Errorf("%w: chunk after the lane's end record", ErrSequence)
	}
	if c.Type == ChunkSequence {
		return w.sequenceRecord(c)
	}
	if c.Ignorable() {
		// Unknown type with the ignorable flag: skip it (see the notes on
		// mbstream above); in split lanes it still used a number.
		if w.pending {
			w.ls.seqs.add(w.pendingSeq)
			w.lastSeq, w.haveLast, w.pending = w.pendingSeq, true, false
		}
		return nil
	}
	w.ls.chunks.Add(1)
	if err := w.number(c); err != nil {
		return err
	}
	w.skipped = w.e.opts.Select != nil && !w.e.opts.Select(c.Path)
	if w.stopped || w.skipped {
		return nil
	}
	if err := checkPath(c.Path); err != nil {
		return err
	}
	return w.e.apply(w.lane, w.seq, c)
}

// checkMode: at a lane's first chunk, every lane carries sequence records
// (split lanes) or none does (FIFO lanes, one plain stream).
func (w *laneWalk) checkMode(c *Chunk) error {
	ls := w.ls
	if ls.sequenced != 0 {
		return nil
	}
	ls.sequenced = -1
	if c.Type == ChunkSequence {
		ls.sequenced = 1
	}
	if !w.e.mode.CompareAndSwap(0, int32(ls.sequenced)) && w.e.mode.Load() != int32(ls.sequenced) {
		return fmt.Errorf("%w: some lanes carry sequence records (split lanes) and some do not", ErrSequence)
	}
	return nil
}

// sequenceRecord takes a split lane's record: the next chunk's number, a
// cut, or the lane's end.
func (w *laneWalk) sequenceRecord(c *Chunk) error {
	ls := w.ls
	if ls.sequenced != 1 {
		return fmt.Errorf("%w: sequence record in a lane that did not start with one", ErrSequence)
	}
	kind, num, err := parseSeqRecord(c)
	if err != nil {
		return err
	}
	if w.pending {
		return fmt.Errorf("%w: two sequence records in a row", ErrSequence)
	}
	switch kind {
	case seqNext:
		if w.haveLast && num <= w.lastSeq {
			return fmt.Errorf("%w: chunk number %d after %d", ErrSequence, num, w.lastSeq)
		}
		if ls.hasCut && num < ls.cut {
			return fmt.Errorf("%w: chunk number %d after the cut at %d", ErrSequence, num, ls.cut)
		}
		w.pending, w.pendingSeq = true, num
	case seqCut:
		if ls.hasCut || (w.haveLast && w.lastSeq >= num) {
			return fmt.Errorf("%w: misplaced cut record at %d", ErrSequence, num)
		}
		ls.hasCut, ls.cut, w.stopped = true, num, true
		w.e.cutSeen.Store(true)
	case seqEnd:
		if w.haveLast && w.lastSeq >= num {
			return fmt.Errorf("%w: end record says %d chunks, lane holds chunk %d", ErrSequence, num, w.lastSeq)
		}
		ls.hasEnd, ls.total = true, num
	}
	return nil
}

// number gives chunk c its number in the stream: the one its sequence
// record announced (split lanes), or its place in the lane (plain lanes,
// where a file that reappears after its end is where mbstream stops).
func (w *laneWalk) number(c *Chunk) error {
	ls := w.ls
	if ls.sequenced == 1 {
		if !w.pending {
			return fmt.Errorf("%w: chunk without a sequence record in a split lane", ErrSequence)
		}
		w.seq, w.lastSeq, w.haveLast, w.pending = w.pendingSeq, w.pendingSeq, true, false
		ls.seqs.add(w.seq)
		return nil
	}
	w.seq = w.localSeq
	w.localSeq++
	if w.closed == nil {
		w.closed = map[string]struct{}{}
	}
	if _, ok := w.closed[c.Path]; ok && !w.stopped {
		if w.e.n > 1 {
			return fmt.Errorf("%w (not valid in FIFO lanes)", ErrReappears)
		}
		// One plain stream: exactly mbstream's stop.
		w.stopped = true
		ls.hasCut, ls.cut = true, w.seq
		w.e.cutSeen.Store(true)
	}
	if c.Type == ChunkEOF {
		w.closed[c.Path] = struct{}{}
	}
	return nil
}

// checkSequences checks, once every lane is read, that split lanes hold every
// chunk of the stream exactly once and agree on its end and on a cut; it
// reports whether the stream was cut.
func (e *extractor) checkSequences(sequenced bool) (cut bool, err error) {
	var totals []uint64
	var cuts []uint64
	var seqs seqCheck
	if e.opts.Select != nil {
		// Partial lanes: only their order was checked (runLane).
		for i := range e.lanes {
			if e.lanes[i].hasCut {
				return false, &LaneError{Lane: i, Err: fmt.Errorf("%w: the stream was cut (a path appears again after its end): extract it whole", ErrSequence)}
			}
		}
		return false, nil
	}
	for i := range e.lanes {
		ls := &e.lanes[i]
		if sequenced {
			if ls.sequenced != 1 {
				return false, &LaneError{Lane: i, Err: fmt.Errorf("%w: lane is empty or has no sequence records while other lanes are split lanes", ErrSequence)}
			}
			totals = append(totals, ls.total)
			seqs.merge(ls.seqs)
		}
		if ls.hasCut {
			cuts = append(cuts, ls.cut)
		}
	}
	if sequenced {
		for i, t := range totals {
			if t != totals[0] {
				return false, &LaneError{Lane: i, Err: fmt.Errorf("%w: end record says %d chunks, lane 0 says %d (lanes of different backups?)", ErrSequence, t, totals[0])}
			}
		}
		if err := seqs.verify(totals[0]); err != nil {
			return false, err
		}
		if len(cuts) != 0 && len(cuts) != len(e.lanes) {
			return false, fmt.Errorf("%w: only %d of %d lanes carry the cut record", ErrSequence, len(cuts), len(e.lanes))
		}
		for _, c := range cuts {
			if c != cuts[0] {
				return false, fmt.Errorf("%w: lanes disagree on the cut (%d vs %d)", ErrSequence, c, cuts[0])
			}
		}
	}
	return len(cuts) > 0, nil
}
