package splitstorage

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	stats "vitess.io/vitess/go/vt/mysqlctl/backupstats"
	mysqlctlerrors "vitess.io/vitess/go/vt/mysqlctl/errors"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Index is the JSON document stored as <file>.index once all of a file's
// parts are stored. Version 2 adds a CRC32C per block of BlockSize bytes of
// every part, so a reader verifies each block before it hands out any of its
// bytes without holding a whole part. Version 3 is an encrypted file: each
// block is a frame sealed on its own (see encryption.go); Size is then the
// file's bytes before encryption, and the parts' sizes what is stored.
type Index struct {
	Version    int         `json:"version"`
	Backup     string      `json:"backup"`
	File       string      `json:"file"`
	PartSize   int64       `json:"part_size"`
	BlockSize  int64       `json:"block_size,omitempty"`
	Encryption string      `json:"encryption,omitempty"`
	Size       int64       `json:"size"`
	Parts      []PartEntry `json:"parts"`
}

// PartEntry describes one part object.
type PartEntry struct {
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
	// Blocks holds the big-endian CRC32C of each block of the part (version 2).
	Blocks []byte `json:"blocks,omitempty"`
}

// Complete is the JSON document stored as .complete, last, by EndBackup.
type Complete struct {
	Version  int       `json:"version"`
	Backup   string    `json:"backup"`
	Finished time.Time `json:"finished"`
	Files    []string  `json:"files"`
	Bytes    int64     `json:"bytes"`
	Parts    int       `json:"parts"`
}

// Handle is the split BackupHandle.
type Handle struct {
	s        *Storage
	e        *env
	dir      string
	name     string
	readOnly bool
	mysqlctlerrors.PerFileErrorRecorder

	// write side
	started     []byte // the start marker's content: this backup's, not a later one's
	ctx         context.Context
	cancel      context.CancelFunc
	uploadSlots chan struct{}
	wg          sync.WaitGroup
	mu          sync.Mutex
	files       map[string]*fileState
	ended       bool
	spoolHeld   int64  // spool bytes reserved for the uploads, until the backup ends
	base        string // the backup this one depends on (SetBase); "" for none

	// dataKey encrypts the files written (nil: in the clear); on the read
	// side it is unwrapped when the first encrypted file is read.
	keyMu   sync.Mutex
	dataKey *crypt.DataKey
}

type fileState struct {
	open      bool
	err       error
	size      int64
	parts     []PartEntry // as in its index, to check them before completing
	indexSize int64
}

// Directory is part of backupstorage.BackupHandle.
func (h *Handle) Directory() string { return h.dir }

// Name is part of backupstorage.BackupHandle.
func (h *Handle) Name() string { return h.name }

func (h *Handle) where(file string) string {
	return fmt.Sprintf("backup %s/%s, file %s", h.dir, h.name, file)
}

// Wait returns once no part upload of this backup is in flight, with the
// errors recorded for its files. Vitess v25 adds it to BackupHandle (an engine
// waits before EndBackup); with v24 nothing calls it, and every file's Close
// already waits for its own parts.
func (h *Handle) Wait() error {
	h.wg.Wait()
	return h.Error()
}

// WritableFilesAtOnce says how many more files can be open for writing at
// once: every one fills a part in the spool, so the parts the spool
// directory's free space still holds (the fifo engine sizes its automatic
// lane count by it).
func (h *Handle) WritableFilesAtOnce() int {
	return h.e.spool.headroom(h.e.cfg.PartSize)
}

// releaseSpool gives back the spool room reserved for the backup's uploads.
func (h *Handle) releaseSpool() {
	h.mu.Lock()
	n := h.spoolHeld
	h.spoolHeld = 0
	h.mu.Unlock()
	h.e.spool.unreserve(n)
}

// AddFile is part of backupstorage.BackupHandle. The stream is cut into parts
// of exactly the configured part size; filesize is not used for that.
func (h *Handle) AddFile(ctx context.Context, filename string, filesize int64) (io.WriteCloser, error) {
	if h.readOnly {
		return nil, errors.New("split storage: AddFile cannot be called on a read-only backup")
	}
	if err := checkName("file name", filename, false); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return nil, fmt.Errorf("split storage: %s: AddFile after EndBackup/AbortBackup", h.where(filename))
	}
	if _, dup := h.files[filename]; dup {
		return nil, fmt.Errorf("split storage: %s: added twice", h.where(filename))
	}
	if err := h.e.spool.reserve(h.e.cfg.PartSize, fmt.Sprintf("%s: one part of --split-storage-part-size=%s", h.where(filename), flagvalue.FormatSize(h.e.cfg.PartSize))); err != nil {
		return nil, err
	}
	var fc *crypt.File
	if h.dataKey != nil {
		var err error
		if fc, err = h.dataKey.File(filename); err != nil {
			h.e.spool.unreserve(h.e.cfg.PartSize)
			return nil, fmt.Errorf("split storage: %s: %w", h.where(filename), err)
		}
	}
	st := &fileState{open: true}
	h.files[filename] = st
	fctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.ctx, cancel)
	w := &fileWriter{h: h, st: st, file: filename, ctx: fctx, cancel: func() { stop(); cancel() }, fc: fc}
	if fc != nil {
		w.frame = getBlock(frameSize)[:0]
	}
	return w, nil
}

// EndBackup is part of backupstorage.BackupHandle: after every file is closed
// successfully it writes the completion marker, which makes the backup visible.
func (h *Handle) EndBackup(ctx context.Context) error {
	if h.readOnly {
		return errors.New("split storage: EndBackup cannot be called on a read-only backup")
	}
	h.mu.Lock()
	if h.ended {
		h.mu.Unlock()
		return fmt.Errorf("split storage: backup %s/%s: EndBackup called twice or after AbortBackup", h.dir, h.name)
	}
	h.ended = true
	var (
		errs  []error
		names []string
		total int64
		parts int
		want  = map[string]int64{} // every object written: key -> size
	)
	for name, st := range h.files {
		names = append(names, name)
		total += st.size
		parts += len(st.parts)
		for i, p := range st.parts {
			want[PartKey(h.dir, h.name, name, i+1)] = p.Size
		}
		want[IndexKey(h.dir, h.name, name)] = st.indexSize
		if st.open {
			errs = append(errs, fmt.Errorf("%s: still open", h.where(name)))
		} else if st.err != nil {
			errs = append(errs, st.err)
		}
	}
	h.mu.Unlock()
	h.wg.Wait()
	h.releaseSpool()
	defer h.cancel()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("split storage: not completing backup %s/%s: %w", h.dir, h.name, err)
	}
	// A backup removed while it ran (RemoveBackup, fifoverify
	// --remove-incomplete) must not complete over the missing objects: check
	// them before the marker, and again after it, in case the removal ran
	// meanwhile (it deletes the marker again as its last step).
	if startGone, err := h.checkStored(ctx, want); err != nil {
		if startGone {
			// Removed: finish the removal, which the parts written since escaped.
			if rerr := removeBackup(ctx, h.e, h.dir, h.name); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return fmt.Errorf("split storage: not completing backup %s/%s: %w", h.dir, h.name, err)
	}
	if err := h.checkBase(ctx); err != nil {
		return fmt.Errorf("split storage: not completing backup %s/%s: %w", h.dir, h.name, err)
	}
	sort.Strings(names)
	doc, _ := json.Marshal(Complete{Version: 1, Backup: h.dir + "/" + h.name, Finished: time.Now().UTC(), Files: names, Bytes: total, Parts: parts})
	key := backupPrefix(h.dir, h.name) + completeMarker
	start := time.Now()
	if err := h.e.be.Put(ctx, key, strings.NewReader(string(doc)), int64(len(doc)), backend.PutOptions{CRC32C: crc32c(doc)}); err != nil {
		return fmt.Errorf("split storage: completing backup %s/%s: %w", h.dir, h.name, err)
	}
	if _, err := h.checkStored(ctx, want); err != nil {
		if derr := h.e.be.Delete(ctx, key); derr != nil {
			err = errors.Join(err, fmt.Errorf("and its completion marker could not be deleted: %w", derr))
		}
		return fmt.Errorf("split storage: backup %s/%s was removed while it completed: %w", h.dir, h.name, err)
	}
	h.e.stats.Scope(stats.Operation("Backup:Complete")).TimedIncrement(time.Since(start))
	h.e.logger.Infof("split storage: backup %s/%s complete: %d files, %d bytes in %d parts of up to %d bytes (%d retries)",
		h.dir, h.name, len(names), total, parts, h.e.cfg.PartSize, h.s.Retries())
	return nil
}

// checkStored lists the backup once and checks that every object in want is
// there with its size, and that the start marker is this backup's own;
// startGone says the start marker is missing (the backup was removed).
func (h *Handle) checkStored(ctx context.Context, want map[string]int64) (startGone bool, err error) {
	prefix := backupPrefix(h.dir, h.name)
	objs, err := h.e.be.List(ctx, prefix, false)
	if err != nil {
		return false, fmt.Errorf("listing %s to check its objects: %w", prefix, err)
	}
	got := make(map[string]int64, len(objs))
	for _, o := range objs {
		got[o.Key] = o.Size
	}
	var problems []string
	b, err := readSmall(ctx, h.e.be, prefix+startedMarker)
	switch {
	case errors.Is(err, ErrNotExist):
		startGone = true
		problems = append(problems, "its start marker is gone")
	case err != nil:
		return false, fmt.Errorf("reading its start marker: %w", err)
	case !bytes.Equal(b, h.started):
		problems = append(problems, "its start marker is another backup's")
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	missing := 0
	for _, k := range keys {
		size, ok := got[k]
		switch {
		case !ok:
			missing++
			if missing <= 3 {
				problems = append(problems, fmt.Sprintf("%s is missing", k))
			}
		case size != want[k]:
			problems = append(problems, fmt.Sprintf("%s has %d bytes, %d were written", k, size, want[k]))
		}
	}
	if missing > 3 {
		problems = append(problems, fmt.Sprintf("%d more objects are missing", missing-3))
	}
	if len(problems) > 0 {
		return startGone, fmt.Errorf("%d objects written, but %s (was the backup removed while it ran?)", len(want), strings.Join(problems, "; "))
	}
	return false, nil
}

// AbortBackup is part of backupstorage.BackupHandle: it stops the uploads and
// deletes every object of the backup.
func (h *Handle) AbortBackup(ctx context.Context) error {
	if h.readOnly {
		return errors.New("split storage: AbortBackup cannot be called on a read-only backup")
	}
	h.mu.Lock()
	h.ended = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
	h.releaseSpool()
	return h.s.removeChained(ctx, h.e, h.dir, h.name)
}

// fileWriter cuts one AddFile stream into parts, each spooled to disk.
type fileWriter struct {
	h      *Handle
	st     *fileState
	file   string
	ctx    context.Context
	cancel func()

	cur    *spoolPart
	nparts int
	size   int64 // bytes written to the file (before encryption)
	closed bool

	// Encryption (fc nil: in the clear): the frame being filled, sealed in
	// place once full and more bytes come, or at Close as the last one.
	fc    *crypt.File
	frame []byte

	wg    sync.WaitGroup
	mu    sync.Mutex
	parts []PartEntry
	// indexSize is the size of the index object, once written.
	indexSize int64
	err       error
}

func (w *fileWriter) fail(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
		w.cancel() // stop this file's other uploads
	}
	return w.err
}

func (w *fileWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.closed {
		return 0, fmt.Errorf("split storage: %s: write after close", w.h.where(w.file))
	}
	if err := w.failed(); err != nil {
		return 0, err
	}
	if w.fc == nil {
		n, err := w.store(p)
		w.size += int64(n)
		return n, err
	}
	written := 0
	for len(p) > 0 {
		room := frameSize - crypt.Overhead - len(w.frame)
		if room == 0 {
			// Full, and more is coming: it is not the last frame.
			if err := w.sealFrame(false); err != nil {
				return written, err
			}
			continue
		}
		n := copy(w.frame[len(w.frame):len(w.frame)+room], p)
		w.frame = w.frame[:len(w.frame)+n]
		p = p[n:]
		written += n
		w.size += int64(n)
	}
	return written, nil
}

// sealFrame encrypts the frame being filled at its place (the part being
// filled, its next frame) and stores it. A part holds whole frames: the part
// size is a multiple of the frame size.
func (w *fileWriter) sealFrame(last bool) error {
	frame := 0
	if w.cur != nil {
		frame = int(w.cur.size / frameSize)
	}
	sealed := w.fc.Seal(w.frame[:0], w.frame, w.nparts+1, frame, last)
	_, err := w.store(sealed)
	w.frame = w.frame[:0]
	return err
}

// store cuts bytes as they are stored into parts, each spooled to disk and
// uploaded once full.
func (w *fileWriter) store(p []byte) (int, error) {
	ps := w.h.e.cfg.PartSize
	written := 0
	for len(p) > 0 {
		if w.cur == nil {
			part, err := w.h.e.spool.newPart(w.h.e.linked)
			if err != nil {
				return written, w.fail(fmt.Errorf("split storage: %s, part %d: %w", w.h.where(w.file), w.nparts+1, err))
			}
			w.cur = part
		}
		n := int(min(int64(len(p)), ps-w.cur.size))
		if err := w.cur.write(p[:n]); err != nil {
			return written, w.fail(fmt.Errorf("split storage: %s, part %d: %w", w.h.where(w.file), w.nparts+1, err))
		}
		p = p[n:]
		written += n
		if w.cur.size == ps {
			if err := w.submit(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// submit uploads the filled part in the background once an upload slot is
// free; the writer waits for the slot, so the parts on disk stay within
// what the backup reserved.
func (w *fileWriter) submit() error {
	part := w.cur
	w.cur = nil
	w.nparts++
	n := w.nparts
	if err := part.seal(); err != nil {
		part.release()
		return w.fail(fmt.Errorf("split storage: %s, part %d: %w", w.h.where(w.file), n, err))
	}
	select {
	case w.h.uploadSlots <- struct{}{}:
	case <-w.ctx.Done():
		part.release()
		if err := w.failed(); err != nil {
			return err
		}
		return w.fail(fmt.Errorf("split storage: %s, part %d: %w", w.h.where(w.file), n, w.ctx.Err()))
	}
	w.mu.Lock()
	w.parts = append(w.parts, PartEntry{})
	w.mu.Unlock()
	w.wg.Add(1)
	w.h.wg.Add(1)
	go func() {
		defer w.h.wg.Done()
		defer w.wg.Done()
		defer func() { <-w.h.uploadSlots }()
		defer part.release()
		if err := w.upload(n, part); err != nil {
			w.fail(err)
		}
	}()
	return nil
}

func (w *fileWriter) upload(n int, part *spoolPart) error {
	key := PartKey(w.h.dir, w.h.name, w.file, n)
	start := time.Now()
	err := w.h.e.be.Put(w.ctx, key, part.reader(), part.size, backend.PutOptions{CRC32C: part.crc})
	if err != nil {
		return fmt.Errorf("split storage: %s, part %d (%s): upload: %w", w.h.where(w.file), n, key, err)
	}
	w.h.e.stats.Scope(stats.Operation("Part:Upload")).TimedIncrementBytes(int(part.size), time.Since(start))
	w.mu.Lock()
	w.parts[n-1] = part.entry()
	w.mu.Unlock()
	return nil
}

// Close uploads the last part, waits for all parts, then writes the index.
func (w *fileWriter) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.finish()
	w.cancel()
	w.h.e.spool.unreserve(w.h.e.cfg.PartSize)
	w.h.mu.Lock()
	w.st.open = false
	w.st.err = err
	w.st.size = w.size
	w.st.parts = w.parts
	w.st.indexSize = w.indexSize
	w.h.mu.Unlock()
	if err != nil {
		w.h.RecordError(w.file, err)
	}
	return err
}

func (w *fileWriter) finish() error {
	if w.fc != nil {
		// The last frame, even empty: a file cut short then fails to open.
		if w.failed() == nil {
			_ = w.sealFrame(true) // an error is the file's, returned below
		}
		putBlock(w.frame)
		w.frame = nil
	}
	if w.cur != nil {
		if w.cur.size > 0 && w.failed() == nil {
			_ = w.submit() // an error is the file's, returned below
		} else {
			w.cur.release()
			w.cur = nil
		}
	}
	w.wg.Wait()
	if err := w.failed(); err != nil {
		return err
	}
	idx := Index{Version: 2, Backup: w.h.dir + "/" + w.h.name, File: w.file, PartSize: w.h.e.cfg.PartSize, BlockSize: crcBlockSize, Size: w.size, Parts: w.parts}
	if w.fc != nil {
		idx.Version, idx.Encryption = 3, crypt.Algorithm
	}
	doc, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	key := IndexKey(w.h.dir, w.h.name, w.file)
	start := time.Now()
	if err := w.h.e.be.Put(w.ctx, key, strings.NewReader(string(doc)), int64(len(doc)), backend.PutOptions{CRC32C: crc32c(doc)}); err != nil {
		return fmt.Errorf("split storage: %s: writing index: %w", w.h.where(w.file), err)
	}
	w.indexSize = int64(len(doc))
	w.h.e.stats.Scope(stats.Operation("Index:Write")).TimedIncrementBytes(len(doc), time.Since(start))
	return nil
}

// ReadFile is part of backupstorage.BackupHandle: it streams the parts in
// order, one request per part (resumed from the byte reached if it breaks),
// reading ahead up to --split-storage-read-ahead bytes, and checks every
// block's CRC32C (version 2 indexes) before handing out any of its bytes,
// and each part's size and CRC32C at its end. Memory: one block buffer per
// file, read-ahead from the shared --split-storage-memory-budget.
func (h *Handle) ReadFile(ctx context.Context, filename string) (io.ReadCloser, error) {
	return h.openReader(ctx, filename, 0, -1)
}

// ReadFileRange is ReadFile for the n bytes of the file from offset off
// (offsets in the file's bytes, before encryption): it downloads, with
// ranged requests, only the blocks that hold them, and verifies each block
// (and opens each frame) before it hands out any byte of it. A range that
// goes past the end of the file is an error. Files indexed without block
// checksums (version 1) are read a whole part at a time, checked at its end.
func (h *Handle) ReadFileRange(ctx context.Context, filename string, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("split storage: %s: invalid range of %d bytes at %d", h.where(filename), n, off)
	}
	return h.openReader(ctx, filename, off, n)
}

// openReader reads n bytes of the file from off (n < 0: to its end).
func (h *Handle) openReader(ctx context.Context, filename string, off, n int64) (io.ReadCloser, error) {
	if !h.readOnly {
		return nil, errors.New("split storage: ReadFile cannot be called on a read-write backup")
	}
	idx, err := h.Index(ctx, filename)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		n = idx.Size - off
	}
	if off+n > idx.Size {
		return nil, fmt.Errorf("split storage: %s: range of %d bytes at %d goes past the end of the file (%d bytes)", h.where(filename), n, off, idx.Size)
	}
	bs := idx.BlockSize
	if bs == 0 {
		bs = crcBlockSize // version 1: checked per part only
	}
	bs = min(bs, max(idx.PartSize, 1))
	var fc *crypt.File
	if idx.Encryption != "" {
		if fc, err = h.fileCipher(ctx, filename); err != nil {
			return nil, err
		}
	}
	maxBufs := 1 + int(h.e.cfg.ReadAhead/bs)
	rctx, cancel := context.WithCancel(ctx)
	r := &fileReader{h: h, idx: idx, fc: fc, blockSize: bs, lo: off, hi: off + n, maxBufs: maxBufs, ctx: rctx, cancel: cancel,
		blocks: make(chan readBlock, maxBufs+1), free: make(chan []byte, maxBufs), prodDone: make(chan struct{})}
	go r.produce()
	return r, nil
}

// Index reads and checks the part index of a file of the backup.
func (h *Handle) Index(ctx context.Context, filename string) (Index, error) {
	if err := checkName("file name", filename, false); err != nil {
		return Index{}, err
	}
	key := IndexKey(h.dir, h.name, filename)
	start := time.Now()
	doc, err := readSmall(ctx, h.e.be, key)
	if err != nil {
		if errors.Is(err, ErrNotExist) {
			return Index{}, fmt.Errorf("split storage: %s: no such file in the backup (index %s missing): %w", h.where(filename), key, err)
		}
		return Index{}, fmt.Errorf("split storage: %s: reading index: %w", h.where(filename), err)
	}
	h.e.stats.Scope(stats.Operation("Index:Read")).TimedIncrementBytes(len(doc), time.Since(start))
	idx, err := ParseIndex(doc, h.dir, h.name, filename)
	if err != nil {
		return Index{}, fmt.Errorf("split storage: %s: index %s: %w", h.where(filename), key, err)
	}
	return idx, nil
}

// readBlock is a verified block (buf, whole, to give back; data, the bytes
// of it to hand out), or the error that ends the file.
type readBlock struct {
	buf, data []byte
	err       error
}

type fileReader struct {
	h         *Handle
	idx       Index
	fc        *crypt.File // nil: stored in the clear
	blockSize int64
	lo, hi    int64 // the file's bytes read: [lo, hi)
	maxBufs   int
	ctx       context.Context
	cancel    context.CancelFunc
	blocks    chan readBlock // verified blocks, in order, then the error or io.EOF that ends them
	free      chan []byte    // buffers the reader has consumed
	prodDone  chan struct{}

	// producer side
	bufs     int   // buffers made
	borrowed int64 // bytes of them taken from the read budget

	// reader side
	curBuf []byte // the block being read, whole
	cur    []byte // what is left of it
	err    error
	closed bool
}

// buffer returns a block buffer: one the reader gave back, a new one while
// the read-ahead allows and the budget has room, or else the next one given
// back (the reader always has one buffer of its own, so this ends).
func (r *fileReader) buffer() ([]byte, error) {
	select {
	case b := <-r.free:
		return b, nil
	default:
	}
	if r.bufs == 0 || (r.bufs < r.maxBufs && r.h.e.budget.tryTake(r.blockSize)) {
		if r.bufs > 0 {
			r.borrowed += r.blockSize
		}
		r.bufs++
		return getBlock(r.blockSize), nil
	}
	select {
	case b := <-r.free:
		return b, nil
	case <-r.ctx.Done():
		return nil, r.ctx.Err()
	}
}

func (r *fileReader) produce() {
	defer close(r.prodDone)
	var partStart int64 // the file's offset of the part's first byte
	for i, p := range r.idx.Parts {
		size := r.plainBytes(p.Size)
		// A part that holds none of the file's bytes (the last frame of
		// an empty encrypted file) is read where the range reaches it: it
		// authenticates the file's end.
		if (partStart < r.hi && partStart+size > r.lo) || (size == 0 && partStart >= r.lo && partStart <= r.hi) {
			if err := r.fetch(i+1, partStart); err != nil {
				r.blocks <- readBlock{err: err}
				return
			}
		}
		partStart += size
	}
	r.blocks <- readBlock{err: io.EOF}
}

// plainBytes is how many of the file's bytes stored bytes hold: all of them
// in the clear, less a tag per frame when encrypted.
func (r *fileReader) plainBytes(stored int64) int64 {
	if r.fc == nil {
		return stored
	}
	return stored - (stored+r.blockSize-1)/r.blockSize*crypt.Overhead
}

// fetch streams part n (whose first byte is the file's byte partStart),
// block by block, verifying each: the blocks that hold [r.lo, r.hi), with one
// ranged request, or the whole part where there are no block checksums.
func (r *fileReader) fetch(n int, partStart int64) error {
	want := r.idx.Parts[n-1]
	key := PartKey(r.h.dir, r.h.name, r.idx.File, n)
	where := fmt.Sprintf("split storage: %s, part %d (%s)", r.h.where(r.idx.File), n, key)
	plainBlock := r.plainBytes(r.blockSize)
	first, last := int64(0), (want.Size-1)/r.blockSize
	if want.Blocks != nil {
		first = max(r.lo-partStart, 0) / plainBlock
		last = min((min(r.hi, partStart+r.plainBytes(want.Size))-1-partStart)/plainBlock, last)
	}
	begin, end := first*r.blockSize, min((last+1)*r.blockSize, want.Size)
	whole := begin == 0 && end == want.Size
	length := end - begin
	if whole {
		length = -1 // and check that the object is no longer
	}
	start := time.Now()
	body, err := r.h.e.be.Get(r.ctx, key, begin, length)
	if err != nil {
		if errors.Is(err, ErrNotExist) {
			return fmt.Errorf("%s: part missing: expected %d bytes, found no object: %w", where, want.Size, err)
		}
		return fmt.Errorf("%s: download: %w", where, err)
	}
	defer body.Close()
	var (
		got = begin
		crc uint32
	)
	for blk := int(first); got < end; blk++ {
		buf, err := r.buffer()
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		k, err := io.ReadFull(body, buf[:min(r.blockSize, end-got)])
		got += int64(k)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return fmt.Errorf("%s: size mismatch: expected %d bytes, found %d", where, want.Size, got)
		}
		if err != nil {
			return fmt.Errorf("%s: download: %w", where, err)
		}
		b := buf[:k]
		crc = crc32.Update(crc, castagnoli, b)
		if want.Blocks != nil {
			if exp, found := binary.BigEndian.Uint32(want.Blocks[4*blk:]), crc32.Checksum(b, castagnoli); exp != found {
				return fmt.Errorf("%s: checksum mismatch in bytes %d..%d: expected crc32c %08x, found %08x", where, got-int64(k), got-1, exp, found)
			}
		}
		if whole && got == want.Size {
			// One byte more means the object is longer than the index says.
			var one [1]byte
			if m, _ := io.ReadFull(body, one[:]); m > 0 {
				return fmt.Errorf("%s: size mismatch: expected %d bytes, found %d or more", where, want.Size, got+1)
			}
			if crc != want.CRC32C {
				return fmt.Errorf("%s: checksum mismatch: expected crc32c %08x, found %08x", where, want.CRC32C, crc)
			}
		}
		if got == end {
			r.h.e.stats.Scope(stats.Operation("Part:Download")).TimedIncrementBytes(int(end-begin), time.Since(start))
		}
		if r.fc != nil {
			last := n == len(r.idx.Parts) && got == want.Size
			plain, err := r.fc.Open(b[:0], b, n, blk, last)
			if err != nil {
				return fmt.Errorf("%s: frame %d (bytes %d..%d) does not decrypt: %w: the object was altered, or is another part's, file's or backup's, or the file was cut short", where, blk, got-int64(k), got-1, err)
			}
			b = plain
		}
		// Only the bytes of the range (whole blocks, but at its ends).
		blockStart := partStart + int64(blk)*plainBlock
		data := b[min(max(r.lo-blockStart, 0), int64(len(b))):min(max(r.hi-blockStart, 0), int64(len(b)))]
		select {
		case r.blocks <- readBlock{buf: buf, data: data}:
		case <-r.ctx.Done():
			return fmt.Errorf("%s: %w", where, r.ctx.Err())
		}
	}
	return nil
}

// advance gives back the block read and waits for the next one; io.EOF at the end.
func (r *fileReader) advance() error {
	if r.err != nil {
		return r.err
	}
	if r.curBuf != nil {
		r.free <- r.curBuf[:cap(r.curBuf)]
		r.curBuf, r.cur = nil, nil
	}
	select {
	case blk := <-r.blocks:
		if blk.err != nil {
			r.err = blk.err
			if blk.err != io.EOF {
				r.cancel()
			}
			return r.err
		}
		r.curBuf, r.cur = blk.buf, blk.data
		return nil
	case <-r.ctx.Done():
		r.err = fmt.Errorf("split storage: %s: %w", r.h.where(r.idx.File), r.ctx.Err())
		return r.err
	}
}

func (r *fileReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if err := r.advance(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// WriteTo hands whole blocks to w (io.Copy uses it).
func (r *fileReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		for len(r.cur) == 0 {
			if err := r.advance(); err != nil {
				if err == io.EOF {
					return total, nil
				}
				return total, err
			}
		}
		n, err := w.Write(r.cur)
		total += int64(n)
		r.cur = r.cur[n:]
		if err != nil {
			r.err = err
			return total, err
		}
	}
}

func (r *fileReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.cancel()
	<-r.prodDone
	// Every buffer is back now: hand them to the next readers.
	if r.curBuf != nil {
		putBlock(r.curBuf)
		r.curBuf, r.cur = nil, nil
	}
	for len(r.blocks) > 0 {
		if blk := <-r.blocks; blk.buf != nil {
			putBlock(blk.buf)
		}
	}
	for len(r.free) > 0 {
		putBlock(<-r.free)
	}
	r.h.e.budget.give(r.borrowed)
	r.borrowed = 0
	return nil
}
