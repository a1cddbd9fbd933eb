package fifobackupengine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// Seekable lanes. A lane is one compressed stream; to reach a file in its
// middle a restore would read and decompress everything before it. So the
// backup restarts its compressor at a chunk boundary once frameSize raw bytes
// have gone into the current frame (xbstream.ChunkObserver), and records,
// per lane, where each frame starts (in the lane file and in its stream) and
// which files have chunks in it. Every codec's reader takes one frame, or
// several one after another, on its own, so a whole-lane restore is
// unchanged, and restoring some files (restore-table) reads and decompresses
// only the frames holding them, with ranged reads where the storage has them.

// frameSize is the raw lane bytes after which the next chunk starts a new
// frame. A table restore reads whole frames, so it is also what a small file
// costs to reach; a frame restart costs the compressor its history. 1 MiB
// keeps both small (BenchmarkFrames measures them; docs/table-restore.md has
// the figures). A variable for the benchmarks only.
var frameSize int64 = 1 << 20

// laneIndexFileName is the index's file in the backup; the MANIFEST names it.
const laneIndexFileName = "lanes.index"

// laneIndexVersion is what this code writes and reads.
const laneIndexVersion = 1

// maxLaneIndexBytes bounds what is read of an index (a TiB backup's is a few
// MiB: one entry per 8 MiB frame, one name per file).
const maxLaneIndexBytes = 1 << 30

// LaneIndex maps a backup's files to the frames of its lanes that hold them.
type LaneIndex struct {
	Version   int
	FrameSize int64
	// Paths is every path of the stream, sorted; frames refer to them by
	// position.
	Paths []string
	Lanes [][]Frame
}

// Frame is one compressed frame of a lane. It ends where the next one
// starts, the last one at the lane's end (LaneInfo.StoredBytes, RawBytes).
type Frame struct {
	Stored int64 `json:"s"` // offset in the lane file
	Raw    int64 `json:"r"` // offset in the lane's stream
	Paths  []int `json:"p"` // the files with chunks in the frame
	// CRC32C is the CRC-32C of the frame's stream bytes (8 hex digits;
	// empty in indexes written before 2026-12-03): a table restore reads
	// frames, not whole lanes, and checks each (framecheck.go).
	CRC32C string `json:"c,omitempty"`
}

// laneFrames is what one lane's writer records, in its own goroutine.
type laneFrames struct {
	frames []Frame
	names  []string       // the lane's own numbering of paths
	ids    map[string]int // name -> position in names
	last   int            // the path of the previous chunk (-1: none yet)
}

func newLaneFrames() *laneFrames { return &laneFrames{ids: map[string]int{}, last: -1} }

// startsFrame reports whether a chunk at raw bytes into the lane starts a
// new frame.
func (f *laneFrames) startsFrame(raw int64) bool {
	return len(f.frames) == 0 || raw-f.frames[len(f.frames)-1].Raw >= frameSize
}

func (f *laneFrames) add(fr Frame) {
	f.frames = append(f.frames, fr)
	f.last = -1
}

// note records that the current frame holds a chunk of path.
func (f *laneFrames) note(path string) {
	id, ok := f.ids[path]
	if !ok {
		id = len(f.names)
		f.ids[path] = id
		f.names = append(f.names, path)
	}
	if id == f.last {
		return
	}
	f.last = id
	fr := &f.frames[len(f.frames)-1]
	if !slices.Contains(fr.Paths, id) {
		fr.Paths = append(fr.Paths, id)
	}
}

// buildLaneIndex merges the lanes' records into one index.
func buildLaneIndex(lanes []*laneFrames) *LaneIndex {
	seen := map[string]int{}
	for _, l := range lanes {
		for _, n := range l.names {
			seen[n] = 0
		}
	}
	ix := &LaneIndex{Version: laneIndexVersion, FrameSize: frameSize, Paths: make([]string, 0, len(seen))}
	for n := range seen {
		ix.Paths = append(ix.Paths, n)
	}
	slices.Sort(ix.Paths)
	for i, n := range ix.Paths {
		seen[n] = i
	}
	for _, l := range lanes {
		frames := make([]Frame, len(l.frames))
		for i, fr := range l.frames {
			frames[i] = Frame{Stored: fr.Stored, Raw: fr.Raw, Paths: make([]int, len(fr.Paths)), CRC32C: fr.CRC32C}
			for j, id := range fr.Paths {
				frames[i].Paths[j] = seen[l.names[id]]
			}
			slices.Sort(frames[i].Paths)
		}
		ix.Lanes = append(ix.Lanes, frames)
	}
	return ix
}

// writeLaneIndex stores ix in the backup.
func writeLaneIndex(ctx context.Context, bh backupstorage.BackupHandle, ix *LaneIndex) error {
	doc, err := json.Marshal(ix)
	if err != nil {
		return err
	}
	w, err := bh.AddFile(ctx, laneIndexFileName, int64(len(doc)))
	if err != nil {
		return errtext.Wrapf(err, "cannot add %s to the backup", laneIndexFileName)
	}
	if _, err := w.Write(doc); err != nil {
		w.Close()
		return errtext.Wrapf(err, "cannot write %s", laneIndexFileName)
	}
	if err := w.Close(); err != nil {
		return errtext.Wrapf(err, "cannot write %s", laneIndexFileName)
	}
	return nil
}

// ReadLaneIndex reads and checks the lane index a MANIFEST names; a backup
// without one (written before lanes were seekable, or with an external
// compressor) returns nil and no error.
func ReadLaneIndex(ctx context.Context, bh backupstorage.BackupHandle, m *Manifest) (*LaneIndex, error) {
	if m.LaneIndex == "" {
		return nil, nil
	}
	fail := func(format string, args ...any) error {
		return errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: %s: %s", m.BackupName, m.LaneIndex, fmt.Sprintf(format, args...))
	}
	r, err := bh.ReadFile(ctx, m.LaneIndex)
	if err != nil {
		return nil, errtext.Wrapf(err, "backup %s: cannot read %s", m.BackupName, m.LaneIndex)
	}
	defer r.Close()
	doc, err := io.ReadAll(io.LimitReader(r, maxLaneIndexBytes+1))
	if err != nil {
		return nil, errtext.Wrapf(err, "backup %s: cannot read %s", m.BackupName, m.LaneIndex)
	}
	if len(doc) > maxLaneIndexBytes {
		return nil, fail("larger than %d bytes", maxLaneIndexBytes)
	}
	var ix LaneIndex
	if err := json.Unmarshal(doc, &ix); err != nil {
		return nil, fail("%v", err)
	}
	if ix.Version != laneIndexVersion {
		return nil, fail("version %d, this build reads version %d", ix.Version, laneIndexVersion)
	}
	if len(ix.Lanes) != len(m.Lanes) {
		return nil, fail("%d lanes, the MANIFEST has %d", len(ix.Lanes), len(m.Lanes))
	}
	for i, frames := range ix.Lanes {
		var prev Frame
		for j, fr := range frames {
			if (j == 0 && (fr.Stored != 0 || fr.Raw != 0)) || (j > 0 && (fr.Stored <= prev.Stored || fr.Raw <= prev.Raw)) ||
				fr.Stored > m.Lanes[i].StoredBytes || fr.Raw > m.Lanes[i].RawBytes {
				return nil, fail("lane %d: frame %d at %d/%d is out of place", i, j, fr.Stored, fr.Raw)
			}
			if fr.CRC32C != "" && !streamSumForm.MatchString(fr.CRC32C) {
				return nil, fail("lane %d: frame %d has CRC-32C %q: not 8 lower-case hex digits", i, j, fr.CRC32C)
			}
			for _, p := range fr.Paths {
				if p < 0 || p >= len(ix.Paths) {
					return nil, fail("lane %d: frame %d names path %d of %d", i, j, p, len(ix.Paths))
				}
			}
			prev = fr
		}
	}
	return &ix, nil
}

// byteRange is a stretch of a lane file.
type byteRange struct{ off, n int64 }

// stretch is whole frames one after another in a lane file, with the
// spans of the lane's stream they hold (checkedFrames checks them).
type stretch struct {
	byteRange
	frames []frameSpan
}

// framesFor returns the stretches of lane i (of storedBytes, rawBytes) that
// hold any selected path, adjacent frames merged, and the raw bytes they
// hold.
func (ix *LaneIndex) framesFor(i int, storedBytes, rawBytes int64, selected []bool) (stretches []stretch, raw int64) {
	frames := ix.Lanes[i]
	for j, span := range ix.spans(i, rawBytes) {
		if !slices.ContainsFunc(frames[j].Paths, func(p int) bool { return selected[p] }) {
			continue
		}
		end := storedBytes
		if j+1 < len(frames) {
			end = frames[j+1].Stored
		}
		raw += span.end - span.raw
		if k := len(stretches) - 1; k >= 0 && stretches[k].off+stretches[k].n == frames[j].Stored {
			stretches[k].n = end - stretches[k].off
			stretches[k].frames = append(stretches[k].frames, span)
			continue
		}
		stretches = append(stretches, stretch{byteRange{frames[j].Stored, end - frames[j].Stored}, []frameSpan{span}})
	}
	return stretches, raw
}
