package xbstream

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// What `mbstream -x` (MariaDB 10.11.19) does, found by feeding it hand-made
// streams (extract_test.go TestMbstreamSemantics re-checks each point):
//
//   - It creates a file at the first chunk of a path (O_CREAT|O_EXCL|
//     O_NOFOLLOW, mode 0640), writes each payload at the file's running offset
//     and fails ("out-of-order chunk", exit 1) when a chunk's offset differs.
//   - An 'E' chunk for a path never seen creates an empty file.
//   - A path seen again after its 'E' chunk (a 'P' or another 'E') is created
//     again, which fails with EEXIST; mbstream then stops extracting silently:
//     nothing after that chunk is written and it exits 0. Extract reproduces
//     this tree (see ErrStreamCut and ExtractOptions.AllowCut).
//   - Unknown chunk types without FlagIgnorable are an error (exit 1). With the
//     flag, MariaDB's mbstream does not skip the chunk but writes its payload
//     to its path like a 'P' chunk (Percona's xbstream skips it). No tool
//     writes such chunks; Extract skips them, as the flag intends.
//   - It refuses absolute paths and paths starting with "./", ".." or holding
//     "/../" (message "invalid filename", then it stops with exit 0); it creates
//     only one level of parent directory. Extract refuses every path that is
//     not clean and local, and creates all parents.
//   - It has no notion of a gap: a file is as long as what was written.

// ExtractOptions configures Extract.
type ExtractOptions struct {
	// MaxChunkSize bounds a chunk (default DefaultMaxChunkSize).
	MaxChunkSize int64
	// OnWrite, if set, is called after every write to a file with the lane,
	// the bytes written and the time the write took (metering hook). It is
	// called from the lanes' goroutines concurrently.
	OnWrite func(lane int, n int, d time.Duration)
	// MaxOpenFiles bounds the file handles kept open across lanes (default 256).
	MaxOpenFiles int
	// AllowCut makes a stream cut (a path appearing again after its 'E' chunk)
	// succeed as `mbstream -x` does, instead of returning ErrStreamCut after
	// writing the same tree.
	AllowCut bool
}

// ExtractStats reports what Extract wrote.
type ExtractStats struct {
	// Files is the number of files created.
	Files int
	// Bytes is the number of payload bytes written to files.
	Bytes int64
	// Lanes has the stream bytes and chunks read from each lane.
	Lanes []LaneStats
}

// Extract reads the lanes concurrently, one goroutine per lane, and writes every
// payload at its offset in dir (created if needed), in whatever order chunks
// arrive across lanes. Lanes are either all split lanes (written by Split, with
// sequence records) or all plain xbstreams with each file wholly in one lane
// (Percona's --fifo-streams, or one lane holding a whole stream).
//
// The tree written is the one `mbstream -x` writes from the original stream,
// whatever the lane count. Files get mode 0640, directories 0750. Sparse chunks
// leave holes. Extract verifies every CRC32, that every file is covered from
// offset 0 without gap or overlap and in the order mbstream requires, that
// split lanes hold every chunk of the stream exactly once, and (for plain
// lanes) that every file has its 'E' chunk. It refuses any path that is empty,
// absolute, holds a NUL byte or is not clean ("..", ".", "//", trailing "/"),
// and writes through os.Root, so a symlink can never lead a write outside dir.
//
// Errors name the lane, its stream offset, the path and the problem, e.g.
// "lane 2: offset 123456: ibdata1: payload CRC32 mismatch (...)". On the first
// error or when ctx is done, Extract returns at once; lanes blocked in Read stay
// blocked until their reader returns, and write nothing after that.
func Extract(ctx context.Context, dir string, lanes []io.Reader, opts ExtractOptions) (ExtractStats, error) {
	if len(lanes) == 0 {
		return ExtractStats{}, errors.New("xbstream.Extract: no lanes")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return ExtractStats{}, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return ExtractStats{}, err
	}
	return newExtractor(root, opts, len(lanes)).run(ctx, lanes)
}

// newExtractor returns an extractor writing under root; a nil root checks
// everything Extract checks and writes nothing (Verify).
func newExtractor(root *os.Root, opts ExtractOptions, n int) *extractor {
	if opts.MaxOpenFiles <= 0 {
		opts.MaxOpenFiles = 256
	}
	return &extractor{
		root:  root,
		opts:  opts,
		n:     n,
		files: map[string]*fileState{},
		lru:   list.New(),
		lanes: make([]laneState, n),
	}
}

// run reads the lanes concurrently and applies every chunk (see Extract).
func (e *extractor) run(ctx context.Context, lanes []io.Reader) (ExtractStats, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, lr := range lanes {
		wg.Add(1)
		go func(i int, lr io.Reader) {
			defer wg.Done()
			if err := e.runLane(ctx, i, lr); err != nil {
				cancel(&LaneError{Lane: i, Err: err})
			}
		}(i, lr)
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	if err := context.Cause(ctx); err != nil {
		e.shutdown()
		return e.stats(), err
	}
	err := e.finish()
	if cerr := e.shutdown(); err == nil {
		err = cerr
	}
	return e.stats(), err
}

type interval struct{ off, end, firstSeq, lastSeq uint64 }

type fileState struct {
	path string
	mu   sync.Mutex // guards what follows except the handle fields

	created bool
	owner   int // plain lanes: the lane holding this file
	hasEOF  bool
	eofSeq  uint64
	maxSeq  uint64 // highest sequence number of a data chunk
	hasData bool
	ivs     []interval // written ranges, sorted by offset, disjoint
	size    uint64     // file size implied by the chunks (holes included)
	dataEnd uint64     // end of the last byte actually written
	sparse  bool
	openErr error

	// handle cache fields, guarded by extractor.cmu
	f    *os.File
	refs int
	elem *list.Element
}

type laneState struct {
	bytes, chunks atomic.Int64
	sequenced     int8 // 0 unknown, 1 yes, -1 no
	total         uint64
	hasEnd        bool
	cut           uint64
	hasCut        bool
	seqs          seqCheck
}

type extractor struct {
	root *os.Root
	opts ExtractOptions
	n    int

	mu    sync.Mutex // guards files
	files map[string]*fileState

	cmu    sync.Mutex // guards the handle cache and closing
	lru    *list.List // of *fileState with an open handle, most recent first
	open   int
	closed bool

	wmu      sync.RWMutex // writes hold it shared; shutdown exclusively
	bytes    atomic.Int64
	nFiles   atomic.Int64
	mode     atomic.Int32 // 1 sequenced, -1 plain
	cutSeen  atomic.Bool
	closeErr error

	lanes []laneState
}

func (e *extractor) stats() ExtractStats {
	s := ExtractStats{Files: int(e.nFiles.Load()), Bytes: e.bytes.Load(), Lanes: make([]LaneStats, e.n)}
	for i := range e.lanes {
		s.Lanes[i] = LaneStats{Bytes: e.lanes[i].bytes.Load(), Chunks: e.lanes[i].chunks.Load()}
	}
	return s
}

// checkPath refuses paths that could leave the target directory or that are
// not spelled canonically.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path", ErrBadPath)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%w: path holds a NUL byte", ErrBadPath)
	case p[0] == '/':
		return fmt.Errorf("%w: absolute path", ErrBadPath)
	case p == ".." || strings.HasPrefix(p, "../") || strings.HasSuffix(p, "/..") || strings.Contains(p, "/../"):
		return fmt.Errorf("%w: path holds '..'", ErrBadPath)
	case path.Clean(p) != p || p == ".":
		return fmt.Errorf("%w: path is not clean (want %q)", ErrBadPath, path.Clean(p))
	}
	return nil
}

func (e *extractor) runLane(ctx context.Context, lane int, lr io.Reader) error {
	ls := &e.lanes[lane]
	r := NewReader(lr, WithMaxChunkSize(e.opts.MaxChunkSize))
	var (
		pending    bool   // a 'n' record announced the next chunk
		pendingSeq uint64 // its number
		lastSeq    uint64
		haveLast   bool
		localSeq   uint64              // plain lanes: position in the lane
		closed     map[string]struct{} // plain lanes: paths whose 'E' went by
		stopped    bool                // after a cut: read on, write nothing
	)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := r.Offset()
		c, err := r.Next()
		ls.bytes.Store(r.Offset())
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		fail := func(err error) error {
			return &FormatError{Offset: start, Path: c.Path, Msg: err.Error(), Err: err}
		}
		if ls.sequenced == 0 {
			ls.sequenced = -1
			if c.Type == ChunkSequence {
				ls.sequenced = 1
			}
			if !e.mode.CompareAndSwap(0, int32(ls.sequenced)) && e.mode.Load() != int32(ls.sequenced) {
				return fail(fmt.Errorf("%w: some lanes carry sequence records (split lanes) and some do not", ErrSequence))
			}
		}
		if ls.hasEnd {
			return fail(fmt.Errorf("%w: chunk after the lane's end record", ErrSequence))
		}
		if c.Type == ChunkSequence {
			if ls.sequenced != 1 {
				return fail(fmt.Errorf("%w: sequence record in a lane that did not start with one", ErrSequence))
			}
			kind, num, err := parseSeqRecord(c)
			if err != nil {
				return fail(err)
			}
			if pending {
				return fail(fmt.Errorf("%w: two sequence records in a row", ErrSequence))
			}
			switch kind {
			case seqNext:
				if haveLast && num <= lastSeq {
					return fail(fmt.Errorf("%w: chunk number %d after %d", ErrSequence, num, lastSeq))
				}
				if ls.hasCut && num < ls.cut {
					return fail(fmt.Errorf("%w: chunk number %d after the cut at %d", ErrSequence, num, ls.cut))
				}
				pending, pendingSeq = true, num
			case seqCut:
				if ls.hasCut || (haveLast && lastSeq >= num) {
					return fail(fmt.Errorf("%w: misplaced cut record at %d", ErrSequence, num))
				}
				ls.hasCut, ls.cut, stopped = true, num, true
				e.cutSeen.Store(true)
			case seqEnd:
				if haveLast && lastSeq >= num {
					return fail(fmt.Errorf("%w: end record says %d chunks, lane holds chunk %d", ErrSequence, num, lastSeq))
				}
				ls.hasEnd, ls.total = true, num
			}
			continue
		}
		if c.Ignorable() {
			// Unknown type with the ignorable flag: skip it (see the notes on
			// mbstream above); in split lanes it still used a number.
			if pending {
				ls.seqs.add(pendingSeq)
				lastSeq, haveLast, pending = pendingSeq, true, false
			}
			continue
		}
		ls.chunks.Add(1)
		var seq uint64
		if ls.sequenced == 1 {
			if !pending {
				return fail(fmt.Errorf("%w: chunk without a sequence record in a split lane", ErrSequence))
			}
			seq, lastSeq, haveLast, pending = pendingSeq, pendingSeq, true, false
			ls.seqs.add(seq)
		} else {
			seq = localSeq
			localSeq++
			if closed == nil {
				closed = map[string]struct{}{}
			}
			if _, ok := closed[c.Path]; ok && !stopped {
				if e.n > 1 {
					return fail(fmt.Errorf("%w (not valid in FIFO lanes)", ErrReappears))
				}
				// One plain stream: exactly mbstream's stop.
				stopped = true
				ls.hasCut, ls.cut = true, seq
				e.cutSeen.Store(true)
			}
			if c.Type == ChunkEOF {
				closed[c.Path] = struct{}{}
			}
		}
		if stopped {
			continue
		}
		if err := checkPath(c.Path); err != nil {
			return fail(err)
		}
		if err := e.apply(lane, seq, c); err != nil {
			return fail(err)
		}
	}
	if pending {
		return &FormatError{Offset: r.Offset(), Msg: "lane ends after a sequence record", Err: ErrSequence}
	}
	if ls.sequenced == 1 && !ls.hasEnd {
		return &FormatError{Offset: r.Offset(), Msg: "split lane has no end record (truncated?)", Err: fmt.Errorf("%w: %w", ErrSequence, io.ErrUnexpectedEOF)}
	}
	return nil
}

func (e *extractor) state(p string) *fileState {
	e.mu.Lock()
	defer e.mu.Unlock()
	fs := e.files[p]
	if fs == nil {
		fs = &fileState{path: p, owner: -1}
		e.files[p] = fs
	}
	return fs
}

// apply records chunk c (number seq) of lane in its file's state and writes it.
func (e *extractor) apply(lane int, seq uint64, c *Chunk) error {
	fs := e.state(c.Path)
	fs.mu.Lock()
	if e.mode.Load() < 0 {
		if fs.owner >= 0 && fs.owner != lane {
			fs.mu.Unlock()
			return fmt.Errorf("%w: path also appears in lane %d (FIFO lanes hold each file in one lane)", ErrSequence, fs.owner)
		}
		fs.owner = lane
	}
	if c.Type == ChunkEOF {
		if fs.hasEOF || (fs.hasData && fs.maxSeq > seq) {
			fs.mu.Unlock()
			return fmt.Errorf("%w (and no cut record marks it)", ErrReappears)
		}
		fs.hasEOF, fs.eofSeq = true, seq
		fs.mu.Unlock()
		return e.withFile(fs, func(*os.File) error { return nil })
	}
	if fs.hasEOF && seq > fs.eofSeq {
		fs.mu.Unlock()
		return fmt.Errorf("%w (and no cut record marks it)", ErrReappears)
	}
	ext := c.Extent()
	end := c.Offset + ext
	if end < c.Offset || end > 1<<62 {
		fs.mu.Unlock()
		return fmt.Errorf("%w: chunk at offset %d of %d bytes overflows", ErrChunkTooLarge, c.Offset, ext)
	}
	if ext > 0 {
		if err := fs.insert(c.Offset, end, seq); err != nil {
			fs.mu.Unlock()
			return err
		}
	}
	if !fs.hasData || seq > fs.maxSeq {
		fs.maxSeq = seq
	}
	fs.hasData = true
	fs.size = max(fs.size, end)
	if c.Type == ChunkSparse {
		fs.sparse = true
		dataEnd := c.Offset
		pos := c.Offset
		for _, s := range c.Sparse {
			pos += uint64(s.Skip)
			if s.Len > 0 {
				pos += uint64(s.Len)
				dataEnd = pos
			}
		}
		fs.dataEnd = max(fs.dataEnd, dataEnd)
	} else {
		fs.dataEnd = max(fs.dataEnd, end)
	}
	fs.mu.Unlock()

	return e.withFile(fs, func(f *os.File) error {
		if c.Type == ChunkPayload {
			return e.writeAt(lane, f, c.Payload, int64(c.Offset))
		}
		pos, data := c.Offset, c.Payload
		for _, s := range c.Sparse {
			pos += uint64(s.Skip)
			if s.Len > 0 {
				if err := e.writeAt(lane, f, data[:s.Len], int64(pos)); err != nil {
					return err
				}
				data = data[s.Len:]
				pos += uint64(s.Len)
			}
		}
		return nil
	})
}

func (e *extractor) writeAt(lane int, f *os.File, b []byte, off int64) error {
	if len(b) == 0 {
		return nil
	}
	if f == nil { // Verify
		e.bytes.Add(int64(len(b)))
		return nil
	}
	e.wmu.RLock()
	defer e.wmu.RUnlock()
	if e.closed {
		return errors.New("extraction stopped")
	}
	t0 := time.Now()
	n, err := f.WriteAt(b, off)
	if e.opts.OnWrite != nil {
		e.opts.OnWrite(lane, n, time.Since(t0))
	}
	e.bytes.Add(int64(n))
	return err
}

// insert records [off, end) written by chunk number seq, merging it with its
// neighbours when they are adjacent and in stream order.
func (fs *fileState) insert(off, end, seq uint64) error {
	i := sort.Search(len(fs.ivs), func(i int) bool { return fs.ivs[i].off >= off })
	if i > 0 && fs.ivs[i-1].end > off {
		l := fs.ivs[i-1]
		return fmt.Errorf("%w: bytes [%d, %d) written again (already [%d, %d))", ErrOverlap, off, end, l.off, l.end)
	}
	if i < len(fs.ivs) && fs.ivs[i].off < end {
		r := fs.ivs[i]
		return fmt.Errorf("%w: bytes [%d, %d) written again (already [%d, %d))", ErrOverlap, off, end, r.off, r.end)
	}
	left := i > 0 && fs.ivs[i-1].end == off && fs.ivs[i-1].lastSeq < seq
	right := i < len(fs.ivs) && fs.ivs[i].off == end && seq < fs.ivs[i].firstSeq
	switch {
	case left && right:
		fs.ivs[i-1].end = fs.ivs[i].end
		fs.ivs[i-1].lastSeq = fs.ivs[i].lastSeq
		fs.ivs = append(fs.ivs[:i], fs.ivs[i+1:]...)
	case left:
		fs.ivs[i-1].end = end
		fs.ivs[i-1].lastSeq = seq
	case right:
		fs.ivs[i].off = off
		fs.ivs[i].firstSeq = seq
	default:
		fs.ivs = append(fs.ivs, interval{})
		copy(fs.ivs[i+1:], fs.ivs[i:])
		fs.ivs[i] = interval{off: off, end: end, firstSeq: seq, lastSeq: seq}
	}
	return nil
}

// withFile runs fn with an open handle for fs, creating the file (and its
// parents) on first use; handles are cached across lanes, least recently used
// evicted beyond MaxOpenFiles.
func (e *extractor) withFile(fs *fileState, fn func(*os.File) error) error {
	if e.root == nil { // Verify: count the file once, write nothing
		fs.mu.Lock()
		if !fs.created {
			fs.created = true
			e.nFiles.Add(1)
		}
		fs.mu.Unlock()
		return fn(nil)
	}
	e.cmu.Lock()
	if e.closed {
		e.cmu.Unlock()
		return errors.New("extraction stopped")
	}
	if fs.f != nil {
		fs.refs++
		e.lru.MoveToFront(fs.elem)
		f := fs.f
		e.cmu.Unlock()
		err := fn(f)
		e.release(fs)
		return err
	}
	e.cmu.Unlock()

	f, err := e.openFile(fs)
	if err != nil {
		return err
	}
	e.cmu.Lock()
	if e.closed {
		e.cmu.Unlock()
		f.Close()
		return errors.New("extraction stopped")
	}
	if fs.f != nil { // another lane opened it meanwhile
		e.cmu.Unlock()
		f.Close()
		return e.withFile(fs, fn)
	}
	fs.f, fs.refs = f, 1
	fs.elem = e.lru.PushFront(fs)
	e.open++
	evict := e.evictLocked()
	e.cmu.Unlock()
	e.closeAll(evict)
	err = fn(f)
	e.release(fs)
	return err
}

func (e *extractor) release(fs *fileState) {
	e.cmu.Lock()
	fs.refs--
	evict := e.evictLocked()
	e.cmu.Unlock()
	e.closeAll(evict)
}

func (e *extractor) evictLocked() []*os.File {
	var out []*os.File
	for el := e.lru.Back(); el != nil && e.open > e.opts.MaxOpenFiles; {
		prev := el.Prev()
		fs := el.Value.(*fileState)
		if fs.refs == 0 {
			out = append(out, fs.f)
			fs.f, fs.elem = nil, nil
			e.lru.Remove(el)
			e.open--
		}
		el = prev
	}
	return out
}

func (e *extractor) closeAll(fs []*os.File) {
	for _, f := range fs {
		if err := f.Close(); err != nil {
			e.cmu.Lock()
			if e.closeErr == nil {
				e.closeErr = err
			}
			e.cmu.Unlock()
		}
	}
}

// openFile opens fs's file, creating it exclusively the first time, as
// mbstream does (so a file or symlink already there is an error).
func (e *extractor) openFile(fs *fileState) (*os.File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.openErr != nil {
		return nil, fs.openErr
	}
	if fs.created {
		return e.root.OpenFile(fs.path, os.O_WRONLY, 0)
	}
	if d := path.Dir(fs.path); d != "." {
		if err := e.root.MkdirAll(d, 0o750); err != nil {
			fs.openErr = err
			return nil, err
		}
	}
	f, err := e.root.OpenFile(fs.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		fs.openErr = err
		return nil, err
	}
	fs.created = true
	e.nFiles.Add(1)
	return f, nil
}

// finish checks every file once all lanes are read: each must be covered from
// offset 0 without gap, in stream order; sparse files get their trailing holes.
func (e *extractor) finish() error {
	var totals []uint64
	var cuts []uint64
	var seqs seqCheck
	sequenced := e.mode.Load() > 0
	for i := range e.lanes {
		ls := &e.lanes[i]
		if sequenced {
			if ls.sequenced != 1 {
				return &LaneError{Lane: i, Err: fmt.Errorf("%w: lane is empty or has no sequence records while other lanes are split lanes", ErrSequence)}
			}
			totals = append(totals, ls.total)
			seqs.merge(ls.seqs)
		}
		if ls.hasCut {
			cuts = append(cuts, ls.cut)
		}
	}
	if sequenced {
		for i, t := range totals {
			if t != totals[0] {
				return &LaneError{Lane: i, Err: fmt.Errorf("%w: end record says %d chunks, lane 0 says %d (lanes of different backups?)", ErrSequence, t, totals[0])}
			}
		}
		if err := seqs.verify(totals[0]); err != nil {
			return err
		}
		if len(cuts) != 0 && len(cuts) != len(e.lanes) {
			return fmt.Errorf("%w: only %d of %d lanes carry the cut record", ErrSequence, len(cuts), len(e.lanes))
		}
		for _, c := range cuts {
			if c != cuts[0] {
				return fmt.Errorf("%w: lanes disagree on the cut (%d vs %d)", ErrSequence, c, cuts[0])
			}
		}
	}
	cut := len(cuts) > 0

	paths := make([]string, 0, len(e.files))
	for p := range e.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fs := e.files[p]
		if err := fs.check(!sequenced && !cut); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if fs.sparse && fs.size > fs.dataEnd {
			// A trailing hole: extend the file (xbstream writes a last zero byte).
			if err := e.withFile(fs, func(f *os.File) error {
				if f == nil { // Verify
					return nil
				}
				return f.Truncate(int64(fs.size))
			}); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
	}
	if cut && !e.opts.AllowCut {
		return ErrStreamCut
	}
	return nil
}

func (fs *fileState) check(needEOF bool) error {
	if needEOF && !fs.hasEOF {
		return fmt.Errorf("%w: no end-of-file chunk (truncated lane?)", io.ErrUnexpectedEOF)
	}
	if len(fs.ivs) == 0 {
		return nil
	}
	if fs.ivs[0].off != 0 {
		return fmt.Errorf("%w: bytes [0, %d) never written", ErrGap, fs.ivs[0].off)
	}
	for i := 1; i < len(fs.ivs); i++ {
		a, b := fs.ivs[i-1], fs.ivs[i]
		if a.end != b.off {
			return fmt.Errorf("%w: bytes [%d, %d) never written", ErrGap, a.end, b.off)
		}
		return fmt.Errorf("%w: the chunk at file offset %d comes before the one at %d in the stream", ErrOutOfOrder, b.off, a.off)
	}
	return nil
}

// shutdown stops all writes and closes every cached handle.
func (e *extractor) shutdown() error {
	e.wmu.Lock()
	e.cmu.Lock()
	e.closed = true
	var fs []*os.File
	for el := e.lru.Front(); el != nil; el = el.Next() {
		st := el.Value.(*fileState)
		fs = append(fs, st.f)
		st.f, st.elem = nil, nil
	}
	e.lru.Init()
	e.open = 0
	e.cmu.Unlock()
	e.wmu.Unlock()
	e.closeAll(fs)
	if e.root != nil {
		_ = e.root.Close()
	}
	e.cmu.Lock()
	defer e.cmu.Unlock()
	return e.closeErr
}
