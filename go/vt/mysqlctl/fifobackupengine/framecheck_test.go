package fifobackupengine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/vterrors"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// TestCheckedFramesEndOnlyOnTheFramesWritten: a table restore's stretch of
// frames ends in io.EOF only when each frame's bytes have the length and
// the CRC-32C the lane index gives them; otherwise in a data-loss error
// naming backup, lane, file and frame. An index without CRC-32Cs (before
// they were kept) is checked on the frames' lengths.
func TestCheckedFramesEndOnlyOnTheFramesWritten(t *testing.T) {
	stream := bytes.Repeat([]byte("XBSTCK01 a lane's stream "), 4000) // 100000 bytes
	frames := []Frame{{Raw: 0}, {Raw: 30000}, {Raw: 65000}, {Raw: 90000}}
	for j := range frames {
		end := int64(len(stream))
		if j+1 < len(frames) {
			end = frames[j+1].Raw
		}
		var sum streamSum
		sum.add(stream[frames[j].Raw:end])
		frames[j].CRC32C = sum.String()
	}
	ix := &LaneIndex{Lanes: [][]Frame{nil, frames}}
	spans := ix.spans(1, int64(len(stream)))
	require.Equal(t, frameSpan{index: 3, raw: 90000, end: 100000, crc: frames[3].CRC32C}, spans[3])
	read := func(spans []frameSpan, data []byte) error {
		c := &checkedFrames{ReadCloser: io.NopCloser(bytes.NewReader(data)), walk: newFrameWalk(spans), backup: "b1", index: 1, file: "lane-001.xbstream"}
		_, err := io.ReadAll(c)
		return err
	}

	require.NoError(t, read(spans, stream))
	require.NoError(t, read(spans[1:3], stream[30000:90000]), "a stretch of frames in the lane's middle")
	flipped := bytes.Clone(stream[30000:90000])
	flipped[40000] ^= 0x01 // in frame 2
	err := read(spans[1:3], flipped)
	require.Error(t, err)
	var got streamSum
	got.add(flipped[35000:])
	assert.EqualError(t, err, "backup b1: lane 1 (lane-001.xbstream): frame 2 (stream bytes 65000 to 90000): its CRC-32C is "+got.String()+
		", the lane index says "+frames[2].CRC32C+": some of its bytes are not those the backup wrote")
	assert.Equal(t, vtrpcpb.Code_DATA_LOSS, vterrors.Code(err))
	assert.EqualError(t, read(spans[1:3], stream[30000:89999]),
		"backup b1: lane 1 (lane-001.xbstream): frame 2 (stream bytes 65000 to 90000): the frames read end at stream byte 89999")
	assert.EqualError(t, read(spans[1:3], stream[30000:90001]),
		"backup b1: lane 1 (lane-001.xbstream): the frames read hold more than the lane index gives them: bytes past stream byte 90000")

	// A whole lane's walk (verify's) is its streamSummer: the lane's CRC-32C
	// folded from its frames', whether or not they match the index.
	var whole streamSum
	whole.add(stream)
	w := newFrameWalk(spans)
	for p := stream; len(p) > 0; p = p[min(len(p), 7777):] {
		w.add(p[:min(len(p), 7777)])
	}
	assert.Equal(t, whole, w.total())
	assert.NoError(t, w.end())
	lane := bytes.Clone(stream)
	lane[70000] ^= 0x01 // in frame 2
	var flippedWhole streamSum
	flippedWhole.add(lane)
	w = newFrameWalk(spans)
	w.add(lane[:50000])
	assert.NoError(t, w.err)
	w.add(lane[50000:])
	assert.Equal(t, flippedWhole, w.total())
	assert.ErrorContains(t, w.end(), "frame 2 (stream bytes 65000 to 90000): its CRC-32C is ")
	w = newFrameWalk(spans)
	w.add(stream[:80000])
	var part streamSum
	part.add(stream[:80000])
	assert.Equal(t, part, w.total(), "a lane cut short: the sum of what came")

	older := slices.Clone(spans)
	for i := range older {
		older[i].crc = ""
	}
	assert.NoError(t, read(older[1:3], flipped), "no CRC-32C recorded: the lengths are all there is to check")
	assert.Error(t, read(older[1:3], stream[30000:89999]))
}

// TestFramesForCarriesEachFramesSpan: the stretches a table restore reads
// hold the spans of their frames, adjacent frames merged into one stretch.
func TestFramesForCarriesEachFramesSpan(t *testing.T) {
	ix := &LaneIndex{Paths: []string{"a.ibd", "b.ibd"}, Lanes: [][]Frame{{
		{Stored: 0, Raw: 0, Paths: []int{0}, CRC32C: "00000001"},
		{Stored: 10, Raw: 100, Paths: []int{1}, CRC32C: "00000002"},
		{Stored: 20, Raw: 200, Paths: []int{1}, CRC32C: "00000003"},
		{Stored: 30, Raw: 300, Paths: []int{0}, CRC32C: "00000004"},
	}}}
	stretches, raw := ix.framesFor(0, 35, 333, []bool{false, true})
	assert.Equal(t, int64(200), raw)
	assert.Equal(t, []stretch{{byteRange{10, 20}, []frameSpan{{1, 100, 200, "00000002"}, {2, 200, 300, "00000003"}}}}, stretches)
	stretches, raw = ix.framesFor(0, 35, 333, []bool{true, false})
	assert.Equal(t, int64(133), raw)
	assert.Equal(t, []stretch{{byteRange{0, 10}, []frameSpan{{0, 0, 100, "00000001"}}}, {byteRange{30, 5}, []frameSpan{{3, 300, 333, "00000004"}}}},
		stretches)
}

// TestReadLaneIndexRefusesAMalformedFrameSum: a frame's CRC-32C is 8
// lower-case hex digits or absent (an index from before they were kept);
// anything else fails the index naming backup, lane and frame.
func TestReadLaneIndexRefusesAMalformedFrameSum(t *testing.T) {
	m := &Manifest{LaneIndex: laneIndexFileName, Lanes: []LaneInfo{{File: "lane-000.xbstream", RawBytes: 200, StoredBytes: 20}}}
	m.BackupName = "b1"
	read := func(crc string) error {
		ix := LaneIndex{Version: laneIndexVersion, FrameSize: frameSize, Paths: []string{"a.ibd"}, Lanes: [][]Frame{{
			{Stored: 0, Raw: 0, Paths: []int{0}, CRC32C: "0a1b2c3d"},
			{Stored: 10, Raw: 100, Paths: []int{0}, CRC32C: crc},
		}}}
		h := &filesHandle{name: "b1", files: map[string][]byte{laneIndexFileName: must(json.Marshal(ix))}}
		_, err := ReadLaneIndex(context.Background(), h, m)
		return err
	}
	require.NoError(t, read("ffffffff"))
	require.NoError(t, read(""), "an index from before frames had sums")
	for _, bad := range []string{"FFFFFFFF", "fffffff", "fffffffff", "xyz"} {
		err := read(bad)
		assert.EqualError(t, err, `backup b1: lanes.index: lane 0: frame 1 has CRC-32C "`+bad+`": not 8 lower-case hex digits`)
		assert.Equal(t, vtrpcpb.Code_DATA_LOSS, vterrors.Code(err))
	}
}
