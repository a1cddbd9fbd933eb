package fifobackupengine

import (
	"fmt"
	"slices"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// indexCheck checks a lane index against the lanes as verify reads them
// (xbstream.ExtractOptions.OnRecord): every frame starts where a record of
// its lane starts, and lists the file of every chunk in it; and (summer)
// the frame's bytes have the CRC-32C it gives them. A table restore
// reads the frames the index names for its files, so a frame that does not
// list a file it holds, or starts inside a record, would fail it (or leave a
// file out); a whole restore does not read the index. The frames' stored
// offsets are checked by reading the lanes frame by frame (framedLane).
type indexCheck struct {
	paths []string       // ix.Paths
	ids   map[string]int // path -> position in paths
	lanes []laneIndexCheck
}

// laneIndexCheck is one lane's walk through its frames, in its goroutine.
type laneIndexCheck struct {
	frames []Frame
	next   int // the frame that starts next
	err    error
	// walk checks the frames' CRC-32Cs as the lane is read (summer).
	walk *frameWalk
}

// newIndexCheck checks ix against the lanes of m; nil without an index.
func newIndexCheck(ix *LaneIndex, m *Manifest) *indexCheck {
	if ix == nil || len(ix.Lanes) != len(m.Lanes) {
		return nil
	}
	c := &indexCheck{paths: ix.Paths, ids: make(map[string]int, len(ix.Paths)), lanes: make([]laneIndexCheck, len(ix.Lanes))}
	for i, p := range ix.Paths {
		c.ids[p] = i
	}
	for i, frames := range ix.Lanes {
		c.lanes[i].frames = frames
		c.lanes[i].walk = newFrameWalk(ix.spans(i, m.Lanes[i].RawBytes))
	}
	return c
}

// summer is storedLanes.sums: a lane with frames has its CRC-32C taken
// frame by frame, each frame's checked against the index on the way. A
// mismatch is the index's, not the lane's: the lane's CRC-32C, folded from
// the frames' sums, fails the read of a lane that is not as written.
func (c *indexCheck) summer(lane int) streamSummer {
	if len(c.lanes[lane].frames) == 0 {
		return new(streamSum)
	}
	return c.lanes[lane].walk
}

// record is xbstream.ExtractOptions.OnRecord.
func (c *indexCheck) record(lane int, off int64, path string) {
	l := &c.lanes[lane]
	if l.err != nil || len(l.frames) == 0 {
		return // a lane without frames is one stream: nothing to check
	}
	for l.next < len(l.frames) && l.frames[l.next].Raw <= off {
		if l.frames[l.next].Raw < off {
			l.err = fmt.Errorf("frame %d starts at stream offset %d, inside a record (the next starts at %d)", l.next, l.frames[l.next].Raw, off)
			return
		}
		l.next++
	}
	if path == "" {
		return // a sequence record: no file
	}
	if l.next == 0 {
		l.err = fmt.Errorf("a chunk of %s at stream offset %d is before the first frame (at %d)", path, off, l.frames[0].Raw)
		return
	}
	if id, ok := c.ids[path]; !ok || !slices.Contains(l.frames[l.next-1].Paths, id) {
		l.err = fmt.Errorf("frame %d does not list %s, which has a chunk at stream offset %d", l.next-1, path, off)
	}
}

// result is the first lane whose frames do not match it, once every lane
// was read to its end, or else a file the index lists that none of its
// frames holds: a table restore would take it for a file of the backup and
// read nothing for it.
func (c *indexCheck) result(m *Manifest) error {
	held := make([]bool, len(c.paths))
	for i := range c.lanes {
		for _, fr := range c.lanes[i].frames {
			for _, id := range fr.Paths {
				held[id] = true // in range: LaneIndex's parse checked
			}
		}
	}
	for id, p := range c.paths {
		if !held[id] {
			return errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: the lane index lists %s, which none of its frames holds", m.BackupName, p)
		}
	}
	for i := range c.lanes {
		l := &c.lanes[i]
		if l.err == nil && l.next < len(l.frames) {
			l.err = fmt.Errorf("frame %d starts at stream offset %d, past the lane's last record", l.next, l.frames[l.next].Raw)
		}
		if l.err == nil && len(l.frames) > 0 {
			l.err = l.walk.end()
		}
		if l.err != nil {
			return errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: %s does not match the lane index: %v", m.BackupName, m.Lanes[i].File, l.err)
		}
	}
	return nil
}
