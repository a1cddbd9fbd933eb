package splitstorage

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// memPool hands out fixed-size chunks of memory inside a byte budget. A caller
// that would exceed the budget waits (backpressure) until chunks come back.
// Freed chunks are kept for reuse, so the heap does not grow with garbage
// between GC cycles; they are dropped after the pool has been idle a while.
type memPool struct {
	chunkSize int64
	budget    int64
	sem       *semaphore.Weighted
	held      atomic.Int64 // bytes reserved now

	// writers counts files open for writing: each may hold a part that is
	// filling, so more of them than parts fit in the budget could wait on
	// each other forever (see openWriter).
	writers  atomic.Int64
	partSize int64

	mu    sync.Mutex
	free  [][]byte
	inUse int64
	trim  *time.Timer
}

const poolIdleTrim = 30 * time.Second

func newMemPool(budget, partSize int64) *memPool {
	chunk := min(partSize, 8<<20)
	return &memPool{chunkSize: chunk, budget: budget, partSize: partSize, sem: semaphore.NewWeighted(budget)}
}

// openWriter admits one more file open for writing, or refuses it up front
// when every open file could not hold one filling part at the same time: a
// writer that waits for memory held by the half-filled parts of the others,
// while they wait for it (a lane splitter feeds the emptiest lane first),
// would wait forever.
func (p *memPool) openWriter() error {
	parts := p.budget / p.partSize
	if n := p.writers.Add(1); n > parts {
		p.writers.Add(-1)
		return fmt.Errorf("%d files open for writing at once, but --split-storage-memory-budget (%d bytes) holds only %d parts of --split-storage-part-size (%d bytes): raise the budget, lower the part size, or write fewer files at once (for the fifo engine, --fifo-backup-lanes)", n, p.budget, parts, p.partSize)
	}
	return nil
}

func (p *memPool) closeWriter() { p.writers.Add(-1) }

// reserve takes n bytes (rounded up to whole chunks) of the budget, waiting
// until they are free. A part reserves its full size before it takes any
// memory, so writers never deadlock each holding half a part.
func (p *memPool) reserve(ctx context.Context, n int64) (int64, error) {
	n = (n + p.chunkSize - 1) / p.chunkSize * p.chunkSize
	if n > p.budget {
		return 0, fmt.Errorf("split storage: a part of %d bytes does not fit the memory budget of %d bytes", n, p.budget)
	}
	if err := p.sem.Acquire(ctx, n); err != nil {
		return 0, err
	}
	p.held.Add(n)
	return n, nil
}

func (p *memPool) unreserve(n int64) {
	if n > 0 {
		p.held.Add(-n)
		p.sem.Release(n)
	}
}

// chunk hands out a chunk; the caller must hold a reservation covering it.
func (p *memPool) chunk() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inUse++
	if p.trim != nil {
		p.trim.Stop()
		p.trim = nil
	}
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		return b
	}
	return make([]byte, p.chunkSize)
}

func (p *memPool) put(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, b[:cap(b)])
	p.inUse--
	if p.inUse == 0 && p.trim == nil {
		p.trim = time.AfterFunc(poolIdleTrim, p.dropIdle)
	}
}

func (p *memPool) dropIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inUse == 0 {
		p.free = nil
	}
	p.trim = nil
}

// partBuffer is one part held in memory as budget chunks.
type partBuffer struct {
	pool     *memPool
	chunks   [][]byte
	size     int64
	reserved int64
	crc      uint32
}

// newPartBuffer reserves room for a part of up to max bytes.
func newPartBuffer(ctx context.Context, pool *memPool, max int64) (*partBuffer, error) {
	r, err := pool.reserve(ctx, max)
	if err != nil {
		return nil, err
	}
	return &partBuffer{pool: pool, reserved: r}, nil
}

func (b *partBuffer) grow() error {
	if int64(len(b.chunks)+1)*b.pool.chunkSize > b.reserved {
		return errors.New("split storage: part buffer over its reservation")
	}
	b.chunks = append(b.chunks, b.pool.chunk())
	return nil
}

// shrink gives back the reservation the part does not use (a short last part).
func (b *partBuffer) shrink() {
	used := int64(len(b.chunks)) * b.pool.chunkSize
	if b.reserved > used {
		b.pool.unreserve(b.reserved - used)
		b.reserved = used
	}
}

// write appends p, waiting for budget as needed.
func (b *partBuffer) write(p []byte) error {
	b.crc = crc32.Update(b.crc, castagnoli, p)
	for len(p) > 0 {
		off := b.size % b.pool.chunkSize
		if off == 0 && int64(len(b.chunks))*b.pool.chunkSize == b.size {
			if err := b.grow(); err != nil {
				return err
			}
		}
		c := b.chunks[len(b.chunks)-1]
		n := copy(c[off:], p)
		p = p[n:]
		b.size += int64(n)
	}
	return nil
}

// readFrom fills the buffer from r until EOF or until limit bytes are held.
func (b *partBuffer) readFrom(r io.Reader, limit int64) error {
	for b.size < limit {
		off := b.size % b.pool.chunkSize
		if off == 0 && int64(len(b.chunks))*b.pool.chunkSize == b.size {
			if err := b.grow(); err != nil {
				return err
			}
		}
		c := b.chunks[len(b.chunks)-1]
		end := min(int64(len(c)), off+(limit-b.size))
		n, err := r.Read(c[off:end])
		if n > 0 {
			b.crc = crc32.Update(b.crc, castagnoli, c[off:off+int64(n)])
			b.size += int64(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (b *partBuffer) release() {
	if b == nil {
		return
	}
	for _, c := range b.chunks {
		b.pool.put(c)
	}
	b.pool.unreserve(b.reserved)
	b.chunks = nil
	b.size = 0
	b.reserved = 0
}

// reader returns an io.ReadSeeker over the buffered bytes.
func (b *partBuffer) reader() *partReader { return &partReader{b: b} }

type partReader struct {
	b   *partBuffer
	pos int64
}

func (r *partReader) Read(p []byte) (int, error) {
	if r.pos >= r.b.size {
		return 0, io.EOF
	}
	cs := r.b.pool.chunkSize
	total := 0
	for len(p) > 0 && r.pos < r.b.size {
		c := r.b.chunks[r.pos/cs]
		off := r.pos % cs
		end := min(int64(len(c)), off+(r.b.size-r.pos))
		n := copy(p, c[off:end])
		p = p[n:]
		r.pos += int64(n)
		total += n
	}
	return total, nil
}

// WriteTo lets io.Copy write chunk by chunk without an intermediate buffer.
func (r *partReader) WriteTo(w io.Writer) (int64, error) {
	cs := r.b.pool.chunkSize
	var total int64
	for r.pos < r.b.size {
		c := r.b.chunks[r.pos/cs]
		off := r.pos % cs
		end := min(int64(len(c)), off+(r.b.size-r.pos))
		n, err := w.Write(c[off:end])
		r.pos += int64(n)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (r *partReader) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.pos + offset
	case io.SeekEnd:
		abs = r.b.size + offset
	default:
		return 0, errors.New("partReader.Seek: invalid whence")
	}
	if abs < 0 {
		return 0, errors.New("partReader.Seek: negative position")
	}
	r.pos = abs
	return abs, nil
}

// Len reports the unread bytes (the HTTP clients use it for Content-Length).
func (r *partReader) Len() int { return int(r.b.size - r.pos) }
