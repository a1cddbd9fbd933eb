package xbstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// LaneStats counts what went through one lane.
type LaneStats struct {
	// Bytes is the number of stream bytes written to (Split) or read from
	// (Extract) the lane, sequence records included.
	Bytes int64
	// Chunks is the number of chunks of the original stream in the lane
	// (sequence records not counted).
	Chunks int64
}

// SplitOptions configures Split.
type SplitOptions struct {
	// MaxChunkSize bounds a chunk of the source (default DefaultMaxChunkSize).
	MaxChunkSize int64
	// ReadBufferSize is the source's bufio size (default 1 MiB).
	ReadBufferSize int
}

// splitItem is what the dealer hands a lane: the encoded sequence record and
// chunk header, and the payload, in a buffer owned by the item until the lane
// has written it.
type splitItem struct {
	hdr     []byte
	payload []byte
	data    []byte // payload storage, reused
	pooled  bool
}

// Split reads one xbstream from src (the stdout of xtrabackup/mariabackup) and
// deals its chunks, each whole, to the lanes: every chunk goes to the lane with
// the fewest bytes so far (ties to the lowest index), so lanes stay balanced
// even when one file is most of the data. Each dealt chunk is preceded by a
// sequence record (see sequence.go); after the last chunk every lane gets an
// end record. Every payload's CRC32 is verified on the way.
//
// Each lane is written by its own goroutine, one chunk at a time, so per-lane
// compressors run in parallel while memory stays bounded by len(lanes)+1
// chunks. Split does not close the lane writers. On a source error, a lane
// write error (named by its lane) or ctx cancellation it stops dealing, waits
// for the lane goroutines to finish their current write and returns the error
// with the stats so far. Lane writers must not block forever once ctx is done.
func Split(ctx context.Context, src io.Reader, lanes []io.Writer, opts SplitOptions) ([]LaneStats, error) {
	n := len(lanes)
	if n == 0 {
		return nil, errors.New("xbstream.Split: no lanes")
	}
	if opts.ReadBufferSize <= 0 {
		opts.ReadBufferSize = 1 << 20
	}
	r := NewReader(src, WithMaxChunkSize(opts.MaxChunkSize), WithReadBufferSize(opts.ReadBufferSize))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	stats := make([]LaneStats, n)
	free := make(chan *splitItem, n+1)
	for i := 0; i < n+1; i++ {
		free <- &splitItem{pooled: true}
	}
	work := make([]chan *splitItem, n)
	var wg sync.WaitGroup
	for i := range lanes {
		work[i] = make(chan *splitItem)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			failed := false
			for it := range work[i] {
				if !failed {
					if err := writeItem(lanes[i], it, &stats[i]); err != nil {
						failed = true
						cancel(&LaneError{Lane: i, Err: fmt.Errorf("write: %w", err)})
					}
				}
				if it.pooled {
					free <- it
				}
			}
		}(i)
	}

	assigned := make([]int64, n)
	send := func(lane int, it *splitItem) bool {
		select {
		case work[lane] <- it:
			return true
		case <-ctx.Done():
			if it.pooled {
				free <- it
			}
			return false
		}
	}
	broadcast := func(kind byte, num uint64) bool {
		for i := range work {
			it := &splitItem{hdr: appendSeqRecord(nil, kind, num)}
			assigned[i] += int64(len(it.hdr))
			if !send(i, it) {
				return false
			}
		}
		return true
	}

	// closed holds the paths whose 'E' chunk went by: the first chunk for such a
	// path is where mbstream -x stops (it refuses to re-create the file).
	closed := map[string]struct{}{}
	cut := false
	var seq uint64
	var readErr error
	for ctx.Err() == nil {
		var it *splitItem
		select {
		case it = <-free:
		case <-ctx.Done():
		}
		if it == nil {
			break
		}
		c, err := r.read(&it.data)
		if err != nil {
			free <- it
			if err != io.EOF {
				readErr = err
			}
			break
		}
		if c.Type == ChunkPayload || c.Type == ChunkEOF || c.Type == ChunkSparse {
			if _, ok := closed[c.Path]; ok && !cut {
				cut = true
				if !broadcast(seqCut, seq) {
					break
				}
			}
			if c.Type == ChunkEOF {
				closed[c.Path] = struct{}{}
			}
		}
		it.hdr = appendSeqRecord(it.hdr[:0], seqNext, seq)
		it.hdr, err = appendHeader(it.hdr, c, true)
		if err != nil { // cannot happen for a chunk the reader accepted
			free <- it
			readErr = err
			break
		}
		it.payload = nil
		if c.Type != ChunkEOF {
			it.payload = c.Payload
		}
		lane := 0
		for i := 1; i < n; i++ {
			if assigned[i] < assigned[lane] {
				lane = i
			}
		}
		assigned[lane] += int64(len(it.hdr) + len(it.payload))
		if !send(lane, it) {
			break
		}
		seq++
	}
	if readErr != nil {
		cancel(fmt.Errorf("source: %w", readErr))
	}
	if ctx.Err() == nil {
		broadcast(seqEnd, seq)
	}
	for i := range work {
		close(work[i])
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return stats, err
	}
	return stats, nil
}

func writeItem(w io.Writer, it *splitItem, st *LaneStats) error {
	n, err := w.Write(it.hdr)
	st.Bytes += int64(n)
	if err != nil {
		return err
	}
	if len(it.payload) > 0 {
		n, err = w.Write(it.payload)
		st.Bytes += int64(n)
		if err != nil {
			return err
		}
	}
	if it.pooled {
		st.Chunks++
	}
	return nil
}
