package xbstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"
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
	// MaxPiecedChunkSize bounds a payload chunk dealt in pieces (with
	// PieceSize; default DefaultMaxPiecedChunkSize): the splitter never
	// holds more than a piece of it.
	MaxPiecedChunkSize int64
	// FileEnded, when set, is called from the dealer with the path of every
	// file whose end record it deals, in stream order; an error stops the
	// split and is returned. A caller learns what the stream holds as it
	// goes, and can stop a stream it must refuse at its first wrong file.
	FileEnded func(path string) error
	// ReadBufferSize is the source's bufio size (default 256 KiB). A payload
	// read at least this large, once the buffer is drained, goes straight
	// from the source into the piece's buffer; a buffer as large as a piece
	// copied nearly every byte once more (BenchmarkSplitFromPipe: 1 MiB took
	// 18 % more CPU than 256 KiB or 64 KiB from a pipe; 64 KiB only adds
	// reads where files are small).
	ReadBufferSize int
	// PieceSize, when > 0, bounds what is dealt to a lane at a time: a larger
	// payload chunk is read and dealt as consecutive pieces, each a chunk of
	// its own with its own CRC, so neither the lanes' balance nor the
	// splitter's memory depends on the tool's chunk size (10 MiB by default,
	// up to the read buffer with Percona). The source chunk's CRC is checked
	// at its last piece; a mismatch fails the split (its earlier pieces are
	// already in the lanes). Extract writes the same files; Merge then gives
	// a stream with the same content in smaller chunks instead of the
	// original bytes. 0 deals whole chunks.
	PieceSize int
	// PassBusyLanes lets the dealer pass over a lane that is still writing
	// (dealTo): lanes then stay within 1/64 of each other plus a chunk,
	// instead of within a chunk, and a lane that stalls (a part waiting
	// for an upload slot) no longer stops the others.
	PassBusyLanes bool
	// Waited, when set, is told of every time the split waited and how
	// long: for a lane to take a chunk, for the sources to parse one, or a
	// source for a free buffer. It says which side bounds the split.
	Waited func(w Wait, d time.Duration)
}

// A ChunkObserver lane writer is told of every chunk of the stream dealt to
// it, before the chunk's bytes (its sequence record first) are written, from
// the goroutine that writes them. A lane whose reader can start at any chunk
// boundary (a compressor restarting its frame there) can record which files
// each stretch of it holds, so that a restore of some files reads only those
// stretches (ExtractOptions.Select). Sequence records that are not followed
// by a chunk (cut and end records) are not announced.
type ChunkObserver interface {
	BeginChunk(path string) error
}

// A ChunkEndObserver lane writer is also told when each chunk dealt to it
// has been written, from the same goroutine. It may then let go of what it
// needs only while writing (a compressor whose frame ends there): it may
// wait long for its next chunk.
type ChunkEndObserver interface {
	EndChunk() error
}

// minChunksInFlight is the fewest chunks the lanes may be writing at once
// (beyond the one each source is parsing), however few the cores.
const minChunksInFlight = 8

// defaultSplitReadBuffer is SplitOptions.ReadBufferSize's default.
const defaultSplitReadBuffer = 256 << 10

// chunksInFlight is how many lanes may be writing a chunk at once: one per
// core the process may use (at least minChunksInFlight), never more than
// there are lanes. A lane's writer compresses in its own goroutine, so this
// is the backup's compression parallelism: a fixed 8 left half of a 16-core
// host idle while the tool waited on its pipe.
func chunksInFlight(lanes int) int {
	return min(lanes, max(minChunksInFlight, runtime.GOMAXPROCS(0)))
}

// splitItem is what the dealer hands a lane: the encoded sequence record and
// chunk header, and the payload, in a buffer owned by the item until the lane
// has written it. Pooled items go back to the pool then.
type splitItem struct {
	path    string // the chunk's path (a chunk, not a sequence record)
	hdr     []byte
	payload []byte
	data    []byte // payload storage, reused
	pooled  bool
}

// Split reads one xbstream from src (the stdout of xtrabackup/mariabackup) and
// deals its chunks, each whole, to the lanes: every chunk goes to the lane with
// the fewest bytes so far (ties to the lowest index; with PassBusyLanes, past
// it to a free lane when it is busy: dealTo), so lanes stay balanced even
// when one file is most of the data. Each dealt chunk is preceded by a
// sequence record (see sequence.go); after the last chunk every lane gets an
// end record. Every payload's CRC32 is verified on the way.
//
// Each lane is written by its own goroutine, one chunk at a time, so per-lane
// compressors run in parallel, as many at once as the process has cores (at
// least 8), while memory stays bounded by that many chunks plus one. Split
// does not close the lane writers. On a source error, a lane write error
// (named by its lane) or ctx cancellation it stops dealing, waits for its
// goroutines to finish and returns the error with the stats so far.
// Lane writers must not block forever once ctx is done.
func Split(ctx context.Context, src io.Reader, lanes []io.Writer, opts SplitOptions) ([]LaneStats, error) {
	return SplitStreams(ctx, []io.Reader{src}, lanes, opts)
}

// SplitStreams is Split over several xbstreams read concurrently, such as
// Percona XtraBackup's FIFO streams, where the tool deals whole files to its
// streams at file open and the streams end up as unbalanced as the files are.
// The chunks of all sources are dealt to the lanes by bytes, in the order they
// arrive; each source's chunks keep their order, which is all the format asks
// (a file's chunks are in one source, in offset order). The sequence records
// number the chunks in that merged order, so a restore sees one stream, as if
// the tool had written it to stdout. Memory is bounded by
// chunksInFlight(len(lanes))+len(srcs) chunks.
//
// Every source goroutine has stopped when SplitStreams returns. A source
// blocked in Read when dealing stops is interrupted through
// SetReadDeadline(time.Now()) if it has that method (os.File on a pipe or
// FIFO, net.Conn); other sources must end on their own.
func SplitStreams(ctx context.Context, srcs []io.Reader, lanes []io.Writer, opts SplitOptions) ([]LaneStats, error) {
	if len(lanes) == 0 {
		return nil, errors.New("xbstream.Split: no lanes")
	}
	if len(srcs) == 0 {
		return nil, errors.New("xbstream.Split: no sources")
	}
	if opts.ReadBufferSize <= 0 {
		opts.ReadBufferSize = defaultSplitReadBuffer
	}
	if opts.MaxPiecedChunkSize <= 0 {
		opts.MaxPiecedChunkSize = DefaultMaxPiecedChunkSize
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := newSplitter(ctx, cancel, len(lanes), len(srcs), opts)
	s.startLanes(lanes)
	in, stopDeadlines := s.startSources(srcs)
	defer stopDeadlines()
	for {
		p, ok := s.next(in)
		if !ok {
			break
		}
		if ctx.Err() != nil {
			s.free <- p.it // drained: the sources see ctx and stop
			continue
		}
		s.deal(p.it, p.c) // on failure it has released the item and ctx is done
	}
	// Every source has stopped (in is closed). The end records go out only
	// when all of them ended cleanly.
	if ctx.Err() == nil {
		s.broadcast(seqEnd, s.seq)
	}
	for i := range s.work {
		close(s.work[i])
	}
	s.lanesWG.Wait()
	if err := context.Cause(ctx); err != nil {
		return s.stats, err
	}
	return s.stats, nil
}

// splitter is the state of one SplitStreams: a pool of items, one goroutine
// per lane writing what it is dealt, one per source parsing chunks into
// items, and the dealer (the caller's goroutine) between them.
type splitter struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	opts    SplitOptions
	stats   []LaneStats
	free    chan *splitItem
	work    []chan *splitItem
	lanesWG sync.WaitGroup
	bytes   laneBytes // dealt to each lane
	passing []int     // the lanes a chunk may go to (PassBusyLanes), reused

	// closed holds the paths whose 'E' chunk went by: the first chunk for
	// such a path is where mbstream -x stops (it refuses to re-create the
	// file), so a cut record goes out before it.
	closed map[string]struct{}
	cut    bool
	seq    uint64
}

// parsed is a chunk a source read into an item of the pool.
type parsed struct {
	it *splitItem
	c  *Chunk
}

func newSplitter(ctx context.Context, cancel context.CancelCauseFunc, lanes, srcs int, opts SplitOptions) *splitter {
	s := &splitter{ctx: ctx, cancel: cancel, opts: opts, stats: make([]LaneStats, lanes), work: make([]chan *splitItem, lanes),
		bytes: make(laneBytes, lanes), closed: map[string]struct{}{}}
	// Each pooled item comes to hold a piece (or, without PieceSize, a whole
	// chunk of the tool): the pool, not the lane count, bounds that memory.
	// Lanes past chunksInFlight wait for an item; they could only compete
	// for the same cores anyway.
	items := chunksInFlight(lanes) + srcs
	s.free = make(chan *splitItem, items)
	for range items {
		s.free <- &splitItem{pooled: true}
	}
	return s
}

func (s *splitter) release(it *splitItem) {
	if it.pooled {
		s.free <- it
	}
}

// startLanes starts a goroutine per lane writing the items dealt to it; the
// first write error cancels the split, naming the lane.
func (s *splitter) startLanes(lanes []io.Writer) {
	for i := range lanes {
		s.work[i] = make(chan *splitItem)
		s.lanesWG.Go(func() {
			failed := false
			for it := range s.work[i] {
				if !failed {
					if err := writeItem(lanes[i], it, &s.stats[i]); err != nil {
						failed = true
						s.cancel(&LaneError{Lane: i, Err: fmt.Errorf("write: %w", err)})
					}
				}
				s.release(it)
			}
		})
	}
}

// startSources starts a goroutine per source that parses its chunks into
// free items and hands them over in the source's order; the channel closes
// when every source has stopped. stop undoes the read-deadline hooks.
func (s *splitter) startSources(srcs []io.Reader) (in <-chan parsed, stop func()) {
	out := make(chan parsed)
	var stops []func() bool
	var wg sync.WaitGroup
	for i, src := range srcs {
		if d, ok := src.(interface{ SetReadDeadline(time.Time) error }); ok {
			stops = append(stops, context.AfterFunc(s.ctx, func() { _ = d.SetReadDeadline(time.Now()) }))
		}
		name := "source"
		if len(srcs) > 1 {
			name = fmt.Sprintf("source %d", i)
		}
		wg.Go(func() { s.readSource(name, src, out) })
	}
	go func() { wg.Wait(); close(out) }()
	return out, func() {
		for _, f := range stops {
			f()
		}
	}
}

func (s *splitter) readSource(name string, src io.Reader, out chan<- parsed) {
	r := NewReader(src, WithMaxChunkSize(s.opts.MaxChunkSize), WithMaxPiecedChunkSize(s.opts.MaxPiecedChunkSize), WithReadBufferSize(s.opts.ReadBufferSize))
	for {
		it, ok := s.freeItem()
		if !ok {
			return
		}
		var c *Chunk
		var err error
		if s.opts.PieceSize > 0 {
			c, err = r.readPiece(&it.data, s.opts.PieceSize)
		} else {
			c, err = r.read(&it.data)
		}
		if err != nil {
			s.free <- it
			if err != io.EOF {
				s.cancel(fmt.Errorf("%s: %w", name, err))
			}
			return
		}
		// The reader reuses its Chunk and sparse map for the next read,
		// which may run before the dealer is done with this one.
		own := *c
		if c.Sparse != nil {
			own.Sparse = append([]SparseSegment(nil), c.Sparse...)
		}
		select {
		case out <- parsed{it, &own}:
		case <-s.ctx.Done():
			s.free <- it
			return
		}
	}
}

func (s *splitter) send(lane int, it *splitItem) bool {
	select {
	case s.work[lane] <- it:
		return true
	case <-s.ctx.Done():
		s.release(it)
		return false
	}
}

// broadcast sends a sequence record to every lane.
func (s *splitter) broadcast(kind byte, num uint64) bool {
	for i := range s.work {
		it := &splitItem{hdr: appendSeqRecord(nil, kind, num)}
		s.bytes[i] += int64(len(it.hdr))
		if !s.send(i, it) {
			return false
		}
	}
	return true
}

// deal numbers chunk c (read into it) and sends it to a lane (dealTo), after a cut record if its file was closed before. On failure it has
// released the item and the split is cancelled.
func (s *splitter) deal(it *splitItem, c *Chunk) bool {
	if err := s.noteFile(c); err != nil {
		if err != errCancelled {
			s.cancel(err)
		}
		s.free <- it
		return false
	}
	var err error
	it.hdr = appendSeqRecord(it.hdr[:0], seqNext, s.seq)
	if it.hdr, err = appendHeader(it.hdr, c, true); err != nil { // cannot happen for a chunk the reader accepted
		s.cancel(err)
		s.release(it)
		return false
	}
	it.path = c.Path
	it.payload = nil
	if c.Type != ChunkEOF {
		it.payload = c.Payload
	}
	if !s.dealTo(it, int64(len(it.hdr)+len(it.payload))) {
		return false
	}
	s.seq++
	return true
}

// errCancelled: the split was already cancelled (a send failed).
var errCancelled = errors.New("xbstream: split cancelled")

// noteFile tracks the files whose end went by: a cut record goes to every
// lane before a file is written again, and FileEnded hears of each end.
func (s *splitter) noteFile(c *Chunk) error {
	if c.Type != ChunkPayload && c.Type != ChunkEOF && c.Type != ChunkSparse {
		return nil
	}
	if _, ok := s.closed[c.Path]; ok && !s.cut {
		s.cut = true
		if !s.broadcast(seqCut, s.seq) {
			return errCancelled
		}
	}
	if c.Type != ChunkEOF {
		return nil
	}
	s.closed[c.Path] = struct{}{}
	if s.opts.FileEnded != nil {
		return s.opts.FileEnded(c.Path)
	}
	return nil
}

func writeItem(w io.Writer, it *splitItem, st *LaneStats) error {
	if o, ok := w.(ChunkObserver); ok && it.pooled {
		if err := o.BeginChunk(it.path); err != nil {
			return err
		}
	}
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
	if it.pooled { // a chunk, not a sequence record
		st.Chunks++
		if o, ok := w.(ChunkEndObserver); ok {
			return o.EndChunk()
		}
	}
	return nil
}
