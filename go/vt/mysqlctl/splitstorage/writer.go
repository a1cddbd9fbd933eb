package splitstorage

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	stats "vitess.io/vitess/go/vt/mysqlctl/backupstats"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

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
	// indexSize is the size of the index object, once written, and
	// indexSum the SHA-256 of its bytes (for the seal).
	indexSize int64
	indexSum  []byte
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
			if err == nil {
				if part.tagger, err = w.h.partTagger(w.file, w.nparts+1); err != nil {
					part.release()
				}
			}
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
	err := w.h.e.be.Put(w.ctx, key, part.reader(), part.size, w.h.putOptions(part.crc))
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
	w.st.indexSize, w.st.indexSum = w.indexSize, w.indexSum
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
	idx := Index{Version: 2, Backup: w.h.dir + "/" + w.h.name, File: w.file, PartSize: w.h.e.cfg.PartSize, BlockSize: crcBlockSize, Size: w.size, Parts: w.parts,
		SealKey: w.h.sealKey()}
	if w.fc != nil {
		idx.Version, idx.Encryption = 3, crypt.Algorithm
	}
	doc, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	key := IndexKey(w.h.dir, w.h.name, w.file)
	start := time.Now()
	if err := w.h.e.be.Put(w.ctx, key, strings.NewReader(string(doc)), int64(len(doc)), w.h.putOptions(crc32c(doc))); err != nil {
		return fmt.Errorf("split storage: %s: writing index: %w", w.h.where(w.file), err)
	}
	w.indexSize = int64(len(doc))
	sum := sha256.Sum256(doc)
	w.indexSum = sum[:]
	w.h.e.stats.Scope(stats.Operation("Index:Write")).TimedIncrementBytes(len(doc), time.Since(start))
	return nil
}
