package splitstorage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Handle is the split BackupHandle.
type Handle struct {
	s        *Storage
	e        *env
	dir      string
	name     string
	readOnly bool
	copied   bool // listed as another backup's, copied or renamed by hand (moved.go)
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

	// lock is what every object this backup writes is locked with (zero:
	// none; lock.go), recorded once, before the first file (lockStart).
	lock     backend.Lock
	lockOnce sync.Once
	lockErr  error

	// baseDoc is the base marker written (SetBase), for the seal; seal is
	// the checked seal of a backup read with a signing key (seal.go).
	baseDoc  []byte
	sealOnce sync.Once
	seal     *sealDoc
	sealErr  error

	// meter counts the requests this backup sends (backend.Meter): its
	// cost, recorded in its completion marker.
	meter *backend.Meter

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
	indexSum  []byte // SHA-256 of the index written, for the seal
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

// LocalDirs is the file backend's root, where the storage keeps every
// backup of this host; none for a store elsewhere.
func (h *Handle) LocalDirs() []string {
	if root := h.e.cfg.LocalRoot(); root != "" {
		return []string{root}
	}
	return nil
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
	if err := h.lockStart(ctx); err != nil {
		return nil, err
	}
	if err := h.e.spool.reserve(h.e.cfg.PartSize, fmt.Sprintf("%s: one part of --split-storage-part-size=%s", h.where(filename),
		flagvalue.FormatSize(h.e.cfg.PartSize))); err != nil {
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
	fctx, cancel := context.WithCancel(backend.WithMeter(ctx, h.meter))
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
	ctx = backend.WithMeter(ctx, h.meter)
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
		want  = map[string]int64{}  // every object written: key -> size
		sums  = map[string][]byte{} // every index's SHA-256, for the seal
	)
	for name, st := range h.files {
		names = append(names, name)
		sums[name] = st.indexSum
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
	if err := h.lockStart(ctx); err != nil {
		return fmt.Errorf("split storage: not completing backup %s/%s: %w", h.dir, h.name, err)
	}
	sort.Strings(names)
	// Its cost: every request before its seal and this marker (which, with
	// the check after it and a lock record, add 2 to 5).
	cost := h.meter.Requests()
	doc, _ := json.Marshal(Complete{Version: 1, Backup: h.dir + "/" + h.name, Finished: time.Now().UTC(), Files: names, Bytes: total, Parts: parts,
		Cost: &cost})
	key := backupPrefix(h.dir, h.name) + completeMarker
	start := time.Now()
	if err := h.writeSeal(ctx, doc, sums); err != nil {
		return fmt.Errorf("split storage: not completing backup %s/%s: sealing it: %w", h.dir, h.name, err)
	}
	if err := h.e.be.Put(ctx, key, strings.NewReader(string(doc)), int64(len(doc)), backend.PutOptions{CRC32C: crc32c(doc)}); err != nil {
		return fmt.Errorf("split storage: completing backup %s/%s: %w", h.dir, h.name, err)
	}
	if _, err := h.checkStored(ctx, want); err != nil {
		if derr := h.e.be.Delete(ctx, key); derr != nil {
			err = errors.Join(err, fmt.Errorf("and its completion marker could not be deleted: %w", derr))
		}
		return fmt.Errorf("split storage: backup %s/%s was removed while it completed: %w", h.dir, h.name, err)
	}
	if !h.lock.IsZero() {
		// The completion marker moves (quarantine, retirement) and is not
		// locked: the lock record keeps a copy.
		if err := writeLockRecord(ctx, h.e, h.dir, h.name, h.lock, []byte(doc)); err != nil {
			return fmt.Errorf("split storage: backup %s/%s is complete, but its lock record failed: %w", h.dir, h.name, err)
		}
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
	if err := h.checkIndexSeal(ctx, filename, doc); err != nil {
		return Index{}, err
	}
	idx, err := ParseIndex(doc, h.dir, h.name, filename)
	if err != nil {
		return Index{}, h.placed(ctx, fmt.Errorf("split storage: %s: index %s: %w", h.where(filename), key, err))
	}
	return idx, nil
}
