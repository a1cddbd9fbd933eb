package fifobackupengine

import (
	"fmt"
	"io"

	"github.com/vtfifo/vtfifo/go/internal/errtext"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// A table restore reads some frames of a lane, not the whole lane, so the
// lane's CRC-32C (lanecheck.go) cannot check what it reads: each frame's
// CRC-32C in the lane index does. Without it, a flipped byte of a chunk's
// header that xbstream's CRC32s do not cover (the path of a table's last
// chunk, say) left the table's file short, and the restore succeeded.

// frameSpan is a frame's stream bytes, [raw, end) of its lane, and their
// CRC-32C as the lane index records it ("" where it records none).
type frameSpan struct {
	index    int
	raw, end int64
	crc      string
}

func (f frameSpan) String() string {
	return fmt.Sprintf("frame %d (stream bytes %d to %d)", f.index, f.raw, f.end)
}

// spans are lane i's frames, the last ending at the lane's rawBytes.
func (ix *LaneIndex) spans(i int, rawBytes int64) []frameSpan {
	frames := ix.Lanes[i]
	out := make([]frameSpan, len(frames))
	for j, fr := range frames {
		end := rawBytes
		if j+1 < len(frames) {
			end = frames[j+1].Raw
		}
		out[j] = frameSpan{index: j, raw: fr.Raw, end: end, crc: fr.CRC32C}
	}
	return out
}

// frameWalk checks a run of a lane's frames, their stream bytes given in
// order from the first one's start, against the lengths and CRC-32Cs the
// lane index gives them; err is the first that did not match. A walk of a
// whole lane is also its streamSummer: each frame's sum folds into the
// lane's, so verify sums every byte once for both checks.
type frameWalk struct {
	frames []frameSpan // those not yet ended
	pos    int64       // the stream offset of the next byte
	sums   laneSums    // frames[0]'s so far, and the frames' ended, folded
	err    error
}

var _ streamSummer = (*frameWalk)(nil)

func newFrameWalk(frames []frameSpan) *frameWalk {
	w := &frameWalk{frames: frames}
	if len(frames) > 0 {
		w.pos = frames[0].raw
	}
	return w
}

// add takes the next bytes.
func (w *frameWalk) add(p []byte) {
	for len(p) > 0 {
		if len(w.frames) == 0 {
			w.fail(fmt.Errorf("the frames read hold more than the lane index gives them: bytes past stream byte %d", w.pos))
			return
		}
		fr := w.frames[0]
		k := min(int64(len(p)), fr.end-w.pos)
		w.sums.add(p[:k])
		w.pos, p = w.pos+k, p[k:]
		if w.pos < fr.end {
			continue
		}
		if sum := w.sums.endFrame(); fr.crc != "" && sum.String() != fr.crc {
			w.fail(fmt.Errorf("%s: its CRC-32C is %s, the lane index says %s: some of its bytes are not those the backup wrote", fr, sum, fr.crc))
		}
		w.frames = w.frames[1:]
	}
}

func (w *frameWalk) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// total is the CRC-32C of the bytes given within the frames, from the
// first one's start.
func (w *frameWalk) total() streamSum { return w.sums.total() }

// end is the first mismatch, or a shortfall: nil once every frame was
// given whole and as written.
func (w *frameWalk) end() error {
	if w.err == nil && len(w.frames) > 0 {
		w.err = fmt.Errorf("%s: the frames read end at stream byte %d", w.frames[0], w.pos)
	}
	return w.err
}

// checkedFrames is a stretch of a lane's frames, decompressed, checked as
// it is read (frameWalk): its reader gets the first mismatch, or at the
// stretch's end a shortfall, in place of io.EOF.
type checkedFrames struct {
	io.ReadCloser
	walk   *frameWalk
	backup string
	index  int
	file   string
}

func (c *checkedFrames) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.walk.add(p[:n])
	bad := c.walk.err
	if err == io.EOF {
		bad = c.walk.end()
	}
	if bad != nil {
		return n, errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: lane %d (%s): %v", c.backup, c.index, c.file, bad)
	}
	return n, err
}
