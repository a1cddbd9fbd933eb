package fifobackupengine

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/vterrors"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// TestCheckedLaneEndsOnlyOnTheStreamWritten: a whole read of a lane ends in
// io.EOF only when its length and CRC-32C are those the backup recorded;
// otherwise in a data-loss error naming backup, lane and file. A backup that
// recorded no CRC-32C (before it was kept) is checked on its length.
func TestCheckedLaneEndsOnlyOnTheStreamWritten(t *testing.T) {
	stream := bytes.Repeat([]byte("XBSTCK01 a lane's stream "), 4000)
	var sum streamSum
	sum.add(stream)
	recorded := LaneInfo{File: "lane-002.xbstream", RawBytes: int64(len(stream)), StreamCRC32C: sum.String()}
	read := func(lane LaneInfo, data []byte) error {
		_, err := io.ReadAll(&checkedLane{ReadCloser: io.NopCloser(bytes.NewReader(data)), backup: "b1", index: 2, lane: lane, sum: new(streamSum)})
		return err
	}
	flipped := bytes.Clone(stream)
	flipped[len(flipped)/3] ^= 0x01

	require.NoError(t, read(recorded, stream))
	err := read(recorded, flipped)
	require.Error(t, err)
	var again streamSum
	again.add(flipped)
	assert.EqualError(t, err, "backup b1: lane 2 (lane-002.xbstream): its stream's CRC-32C is "+again.String()+", the MANIFEST says "+sum.String()+
		": of the 100000 bytes it has, as recorded, some are not those the backup wrote")
	assert.Equal(t, vtrpcpb.Code_DATA_LOSS, vterrors.Code(err))
	assert.EqualError(t, read(recorded, stream[:len(stream)-1]), "backup b1: lane 2 (lane-002.xbstream): read 99999 bytes, the MANIFEST says 100000")

	older := recorded
	older.StreamCRC32C = ""
	assert.NoError(t, read(older, flipped), "no CRC-32C recorded: the length is all there is to check")
	assert.Error(t, read(older, append(bytes.Clone(stream), 'x')))

	empty := LaneInfo{File: "lane-003.xbstream", StreamCRC32C: "00000000"}
	assert.NoError(t, read(empty, nil), "an empty lane's CRC-32C is 0")
	assert.Error(t, read(empty, []byte("x")))
}
