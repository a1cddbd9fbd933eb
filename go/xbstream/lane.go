package xbstream

import (
	"context"
	"io"
)

// Lane opens the stream of one lane for Extract and Verify. It is called once,
// in the lane's own goroutine, with a context that is cancelled as soon as any
// lane fails or the caller's context is done: the reader it returns must then
// return from Read promptly (a storage read bound to that context does; a file
// or a buffer returns anyway). Extract closes the reader when the lane is
// done, never while a Read is in progress, so a reader that must not be closed
// under a Read (a zstd decoder) needs no guard.
type Lane func(ctx context.Context) (io.ReadCloser, error)

// ReaderLanes makes lanes of readers that need no context (files, buffers);
// Extract does not close them.
func ReaderLanes(rs ...io.Reader) []Lane {
	lanes := make([]Lane, len(rs))
	for i, r := range rs {
		lanes[i] = func(context.Context) (io.ReadCloser, error) { return io.NopCloser(r), nil }
	}
	return lanes
}
