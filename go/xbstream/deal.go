package xbstream

import (
	"reflect"
	"time"
)

// A Wait is what a split waited for (SplitOptions.Waited).
type Wait int

const (
	// WaitLanes: the dealer had a chunk and no lane it could go to was
	// free; the lanes (compression, storage) are the bound.
	WaitLanes Wait = iota
	// WaitSources: the dealer had nothing to deal; the sources (the tool,
	// or parsing its stream) are the bound.
	WaitSources
	// WaitBuffers: a source had no free buffer to read a chunk into: every
	// buffer was dealt and not yet written by its lane.
	WaitBuffers
)

func (w Wait) String() string {
	switch w {
	case WaitLanes:
		return "Split:WaitLanes"
	case WaitSources:
		return "Split:WaitSources"
	default:
		return "Split:WaitBuffers"
	}
}

// passLeadDivisor bounds how far ahead of the lane with the fewest bytes the
// dealer may send a chunk when that lane is busy: 1/64 of its bytes. A
// restore, which reads the lanes in parallel, waits at most that much longer
// for the largest; a backup rides through a lane's stall as long as the
// other lanes can take the stream meanwhile (16 lanes of 4 GiB, each 1/64
// ahead: 1 GiB).
const passLeadDivisor = 64

// passLead is how far past least bytes a lane may be and still be dealt a
// chunk when the lane with the fewest is busy.
func passLead(least int64, pieceSize int) int64 {
	return max(least/passLeadDivisor, int64(pieceSize))
}

// MaxPassingSpread is the most the largest lane holds beyond the smallest
// (least bytes) after a split with PassBusyLanes and PieceSize pieceSize of a
// stream without sparse chunks: the lead the dealer may give a lane, plus the
// piece dealt to it and its headers. (A sparse chunk is dealt whole: it may
// add its size beyond a piece.)
func MaxPassingSpread(least int64, pieceSize int) int64 {
	return passLead(least, pieceSize) + int64(pieceSize) + maxItemHeaders
}

// maxItemHeaders bounds a dealt piece's headers: a sequence record and a
// chunk header with a path of at most MaxPathLen.
const maxItemHeaders = 64 + MaxPathLen

// laneBytes counts the bytes dealt to each lane.
type laneBytes []int64

// least is the lane with the fewest bytes, ties to the lowest index.
func (b laneBytes) least() int {
	lane := 0
	for i := 1; i < len(b); i++ {
		if b[i] < b[lane] {
			lane = i
		}
	}
	return lane
}

// within appends to dst the lanes holding at most limit bytes, fewest bytes
// first, ties to the lowest index.
func (b laneBytes) within(dst []int, limit int64) []int {
	for i, n := range b {
		if n <= limit {
			dst = append(dst, i)
		}
	}
	// Insertion sort: a few dozen lanes, mostly in order already.
	for i := 1; i < len(dst); i++ {
		for j := i; j > 0 && b[dst[j]] < b[dst[j-1]]; j-- {
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return dst
}

// dealTo sends it (size bytes) to a lane and counts it there: to the lane
// with the fewest bytes, waiting while it writes; with PassBusyLanes, to the
// first free lane of those within 1/64 of it (passLeadDivisor), fewest bytes
// first, or else to whichever of them is free first. On failure (the split
// was cancelled) it has released the item.
func (s *splitter) dealTo(it *splitItem, size int64) bool {
	least := s.bytes.least()
	if !s.opts.PassBusyLanes {
		if !s.sendWaiting(least, it) {
			return false
		}
		s.bytes[least] += size
		return true
	}
	s.passing = s.bytes.within(s.passing[:0], s.bytes[least]+passLead(s.bytes[least], s.opts.PieceSize))
	for _, lane := range s.passing {
		select {
		case s.work[lane] <- it:
			s.bytes[lane] += size
			return true
		default:
		}
	}
	lane, ok := s.sendFirstFree(s.passing, it)
	if ok {
		s.bytes[lane] += size
	}
	return ok
}

// sendWaiting is send, timed as WaitLanes when the lane is busy.
func (s *splitter) sendWaiting(lane int, it *splitItem) bool {
	select {
	case s.work[lane] <- it:
		return true
	default:
	}
	defer s.waited(WaitLanes, time.Now())
	return s.send(lane, it)
}

// sendFirstFree sends it to whichever of lanes takes it first (all busy
// now), timed as WaitLanes.
func (s *splitter) sendFirstFree(lanes []int, it *splitItem) (int, bool) {
	defer s.waited(WaitLanes, time.Now())
	cases := make([]reflect.SelectCase, 0, len(lanes)+1)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.ctx.Done())})
	v := reflect.ValueOf(it)
	for _, lane := range lanes {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectSend, Chan: reflect.ValueOf(s.work[lane]), Send: v})
	}
	chosen, _, _ := reflect.Select(cases)
	if chosen == 0 {
		s.release(it)
		return 0, false
	}
	return lanes[chosen-1], true
}

// next receives the dealer's next parsed chunk (false: every source has
// stopped), timed as WaitSources when none is ready.
func (s *splitter) next(in <-chan parsed) (parsed, bool) {
	select {
	case p, ok := <-in:
		return p, ok
	default:
	}
	defer s.waited(WaitSources, time.Now())
	p, ok := <-in
	return p, ok
}

// freeItem takes a free buffer for a source to read into (false: the split
// is cancelled), timed as WaitBuffers when none is free.
func (s *splitter) freeItem() (*splitItem, bool) {
	select {
	case it := <-s.free:
		return it, true
	default:
	}
	defer s.waited(WaitBuffers, time.Now())
	select {
	case it := <-s.free:
		return it, true
	case <-s.ctx.Done():
		return nil, false
	}
}

// waited reports a wait that began at start.
func (s *splitter) waited(w Wait, start time.Time) {
	if s.opts.Waited != nil {
		s.opts.Waited(w, time.Since(start))
	}
}
