package splitstorage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	stats "vitess.io/vitess/go/vt/mysqlctl/backupstats"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
)

// readBlock is a verified block (buf, whole, to give back; data, the bytes
// of it to hand out), or the error that ends the file.
type readBlock struct {
	buf, data []byte
	err       error
}

// fileReader reads a range of one file: its parts fetched ahead into a
// bounded set of blocks, each verified (CRC32C, or decrypted) before any of
// its bytes is handed out.
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
	tagger, err := r.h.readTagger(r.idx.SealKey, r.idx.File, n)
	if err != nil {
		return err
	}
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
		if err := r.h.checkBlockTag(tagger, r.idx.File, n, blk, b, want); err != nil {
			return err
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
				return fmt.Errorf("%s: frame %d (bytes %d..%d) does not decrypt: %w: the object was altered, or is another part's, file's or backup's, or the "+
					"file was cut short", where, blk, got-int64(k), got-1, err)
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
