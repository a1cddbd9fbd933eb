package fifobackupengine

import (
	"fmt"
	"io"

	"github.com/vtfifo/vtfifo/go/internal/errtext"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

// A lane's stream is checked end to end. The backup records the length and
// the CRC-32C of what each lane writer was given (LaneInfo.RawBytes,
// StreamCRC32C); every whole read of a lane (restore, verify, export) checks
// both at the lane's end, after the decompressor, whatever the storage.
// xbstream's own CRC32s cover payloads only: nothing else covers a chunk's
// header (a flipped byte of an 'E' chunk's path extracts an extra empty file
// of another name and no error), and a storage checks its own checksums only
// where it has them (Vitess's file storage has none).

// streamMismatch says how a whole read of the lane (n bytes, sum) differs
// from what the backup wrote; "" when it does not. A backup that recorded no
// length (0) or no CRC-32C (before 2026-12-03) is checked on what it has.
func (l LaneInfo) streamMismatch(n int64, sum streamSum) string {
	switch {
	case l.RawBytes > 0 && n != l.RawBytes:
		return fmt.Sprintf("read %d bytes, the MANIFEST says %d", n, l.RawBytes)
	case l.StreamCRC32C != "" && sum.String() != l.StreamCRC32C:
		return fmt.Sprintf("its stream's CRC-32C is %s, the MANIFEST says %s: of the %d bytes it has, as recorded, some are not those the "+
			"backup wrote", sum, l.StreamCRC32C, n)
	}
	return ""
}

// checkedLane is a whole lane's decompressed stream, checked at its end
// (streamMismatch): the reader of the lane gets the mismatch in place of
// io.EOF, so no read of a lane ends well unless the lane is as written.
type checkedLane struct {
	io.ReadCloser
	backup string
	index  int
	lane   LaneInfo
	read   int64
	sum    streamSummer
}

func (c *checkedLane) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.read += int64(n)
	c.sum.add(p[:n])
	if err == io.EOF {
		if bad := c.lane.streamMismatch(c.read, c.sum.total()); bad != "" {
			return n, errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: lane %d (%s): %s", c.backup, c.index, c.lane.File, bad)
		}
	}
	return n, err
}
