package xbstream

import (
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
	// ListFiles fills ExtractStats.FileSizes.
	ListFiles bool
	// Select, if set, extracts only the files it accepts (by path) from
	// partial lanes: each lane is a stretch, or stretches one after another,
	// of a split lane, every one starting at a chunk boundary (with its
	// sequence record), as a ChunkObserver recorded them. The chunks of other
	// paths are read, checked and skipped. What cannot be checked without the
	// whole stream is left out (every chunk exactly once, the end records);
	// what can is required: each selected file that appears must be covered
	// from offset 0 without gap and have its end-of-file chunk. The caller
	// checks that every file it wanted is in ExtractStats.FileSizes (with
	// ListFiles). A stream cut (see AllowCut) fails a selective extraction.
	Select func(path string) bool
	// AllowCut makes a stream cut (a path appearing again after its 'E' chunk)
	// succeed as `mbstream -x` does, instead of returning ErrStreamCut after
	// writing the same tree.
	AllowCut bool
	// OnRecord, if set, is told of every record a lane holds, in the lane's
	// order, from the lane's goroutine: its offset in the lane's stream and
	// its path ("" for a sequence record). A caller that knows where the
	// lane's frames start (a lane index) checks it against the lane.
	OnRecord func(lane int, offset int64, path string)
	// Keep, if set, keeps the contents of the files it accepts (by path) in
	// ExtractStats.Kept as well, so that a caller of Verify can read a small
	// file (the tool's metadata) it does not write: each at most
	// MaxKeptBytes, without holes; one larger or sparse is left out.
	Keep func(path string) bool
}

// MaxKeptBytes bounds a file ExtractOptions.Keep keeps.
const MaxKeptBytes = 1 << 20

// ExtractStats reports what Extract wrote.
type ExtractStats struct {
	// Files is the number of files created.
	Files int
	// Bytes is the number of payload bytes written to files.
	Bytes int64
	// Lanes has the stream bytes and chunks read from each lane.
	Lanes []LaneStats
	// FileSizes has every file's path and size (holes included), with
	// ExtractOptions.ListFiles.
	FileSizes map[string]int64
	// Kept has the contents of the files ExtractOptions.Keep accepted.
	Kept map[string][]byte
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
// "lane 2: offset 123456: ibdata1: payload CRC32 mismatch (...)". At the first
// error, or when ctx is done, Extract cancels the context its lanes were
// opened with and returns once every lane's goroutine has stopped and closed
// its reader (see Lane): nothing reads or writes after Extract returns.
func Extract(ctx context.Context, dir string, lanes []Lane, opts ExtractOptions) (ExtractStats, error) {
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
		opts:    opts,
		n:       n,
		files:   map[string]*fileState{},
		handles: newHandleCache(root, opts.MaxOpenFiles),
		lanes:   make([]laneState, n),
	}
}

// run reads the lanes concurrently and applies every chunk (see Extract).
func (e *extractor) run(ctx context.Context, lanes []Lane) (ExtractStats, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for i, open := range lanes {
		wg.Go(func() { e.readLane(ctx, cancel, i, open) })
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		_ = e.handles.close()
		return e.stats(), err
	}
	err := e.finish()
	if cerr := e.handles.close(); err == nil {
		err = cerr
	}
	return e.stats(), err
}

// readLane opens one lane, applies its chunks and closes it. A failure
// cancels ctx before the lane is closed: closing may need it (an external
// decompressor blocked writing what nobody reads exits only when killed). A
// failure to close (a decompressor that exited with an error) fails the lane.
func (e *extractor) readLane(ctx context.Context, cancel context.CancelCauseFunc, lane int, open Lane) {
	fail := func(err error) { cancel(&LaneError{Lane: lane, Err: err}) }
	r, err := open(ctx)
	if err != nil {
		fail(err)
		return
	}
	if err := e.runLane(ctx, lane, r); err != nil {
		fail(err)
	}
	if err := r.Close(); err != nil {
		fail(fmt.Errorf("closing the lane: %w", err))
	}
}

// fileState is what the chunks so far say of one file.
type fileState struct {
	path string
	mu   sync.Mutex // guards what follows, and handle's created and openErr

	owner   int // plain lanes: the lane holding this file
	hasEOF  bool
	eofSeq  uint64
	maxSeq  uint64 // highest sequence number of a data chunk
	hasData bool
	ivs     intervals
	size    uint64 // file size implied by the chunks (holes included)
	dataEnd uint64 // end of the last byte actually written
	sparse  bool
	// kept is the file's contents so far where ExtractOptions.Keep
	// accepted it (keep); keep is false again once it cannot be kept.
	keep bool
	kept []byte

	handle
}

type extractor struct {
	opts    ExtractOptions
	n       int
	handles *handleCache

	mu    sync.Mutex // guards files
	files map[string]*fileState

	bytes   atomic.Int64
	mode    atomic.Int32 // 1 sequenced, -1 plain
	cutSeen atomic.Bool

	lanes []laneState
}

func (e *extractor) stats() ExtractStats {
	s := ExtractStats{Files: int(e.handles.created.Load()), Bytes: e.bytes.Load(), Lanes: make([]LaneStats, e.n)}
	for i := range e.lanes {
		s.Lanes[i] = LaneStats{Bytes: e.lanes[i].bytes.Load(), Chunks: e.lanes[i].chunks.Load()}
	}
	if e.opts.Keep != nil {
		s.Kept = map[string][]byte{}
		e.mu.Lock()
		for p, f := range e.files {
			f.mu.Lock()
			if f.keep {
				s.Kept[p] = f.kept
			}
			f.mu.Unlock()
		}
		e.mu.Unlock()
	}
	if e.opts.ListFiles {
		e.mu.Lock()
		s.FileSizes = make(map[string]int64, len(e.files))
		for p, f := range e.files {
			f.mu.Lock()
			s.FileSizes[p] = int64(f.size)
			f.mu.Unlock()
		}
		e.mu.Unlock()
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

func (e *extractor) state(p string) *fileState {
	e.mu.Lock()
	defer e.mu.Unlock()
	fs := e.files[p]
	if fs == nil {
		fs = &fileState{path: p, owner: -1, keep: e.opts.Keep != nil && e.opts.Keep(p)}
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
		return e.handles.with(fs, func(*os.File) error { return nil })
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
		if err := fs.ivs.insert(c.Offset, end, seq); err != nil {
			fs.mu.Unlock()
			return err
		}
	}
	if !fs.hasData || seq > fs.maxSeq {
		fs.maxSeq = seq
	}
	fs.hasData = true
	fs.size = max(fs.size, end)
	fs.keepChunk(c, end)
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

	return e.handles.with(fs, func(f *os.File) error {
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

// keepChunk copies a payload chunk ending at end into the kept contents of
// a file Keep accepted (under fs.mu).
func (fs *fileState) keepChunk(c *Chunk, end uint64) {
	if !fs.keep {
		return
	}
	if c.Type != ChunkPayload || end > MaxKeptBytes {
		fs.keep, fs.kept = false, nil
		return
	}
	if uint64(len(fs.kept)) < end {
		fs.kept = append(fs.kept, make([]byte, int(end)-len(fs.kept))...)
	}
	copy(fs.kept[c.Offset:end], c.Payload)
}

func (e *extractor) writeAt(lane int, f *os.File, b []byte, off int64) error {
	if len(b) == 0 {
		return nil
	}
	if f == nil { // Verify
		e.bytes.Add(int64(len(b)))
		return nil
	}
	t0 := time.Now()
	n, err := f.WriteAt(b, off)
	if e.opts.OnWrite != nil {
		e.opts.OnWrite(lane, n, time.Since(t0))
	}
	e.bytes.Add(int64(n))
	return err
}

// finish checks every file once all lanes are read: each must be covered from
// offset 0 without gap, in stream order; sparse files get their trailing holes.
func (e *extractor) finish() error {
	sequenced := e.mode.Load() > 0
	cut, err := e.checkSequences(sequenced)
	if err != nil {
		return err
	}

	paths := make([]string, 0, len(e.files))
	for p := range e.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fs := e.files[p]
		if !fs.hasEOF && (e.opts.Select != nil || (!sequenced && !cut)) {
			return fmt.Errorf("%s: %w: no end-of-file chunk (truncated lane?)", p, io.ErrUnexpectedEOF)
		}
		if err := fs.ivs.check(); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if fs.sparse && fs.size > fs.dataEnd {
			// A trailing hole: extend the file (xbstream writes a last zero byte).
			if err := e.handles.with(fs, func(f *os.File) error {
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
