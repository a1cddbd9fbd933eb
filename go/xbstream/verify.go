package xbstream

import (
	"context"
	"errors"
)

// Verify reads the lanes exactly as Extract does and runs every check Extract
// runs (chunk magic and header, CRC32 of every payload, split-lane sequence
// completeness and end records, each file covered from offset 0 without gap,
// overlap or out-of-order chunk, end-of-file chunks of plain lanes, clean
// local paths), but writes nothing: it is Extract with a nil target. It
// shares Extract's code (the same extractor), so a stream Verify accepts is
// one Extract accepts, and the errors are the same (lane, stream offset,
// path, problem). OnWrite is called as Extract would call it (with zero
// durations), so callers can meter payload bytes.
//
// What Verify cannot see is what only the target filesystem would refuse:
// a full disk, or an offset past the filesystem's largest file size.
//
// ExtractStats.Files counts the files the stream would create and Bytes the
// payload bytes Extract would write.
func Verify(ctx context.Context, lanes []Lane, opts ExtractOptions) (ExtractStats, error) {
	if len(lanes) == 0 {
		return ExtractStats{}, errors.New("xbstream.Verify: no lanes")
	}
	return newExtractor(nil, opts, len(lanes)).run(ctx, lanes)
}
