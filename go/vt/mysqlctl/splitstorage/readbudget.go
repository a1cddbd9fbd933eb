package splitstorage

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// readBudget is the memory that all files being read share for read-ahead.
// Every reader owns one block buffer outside it, so a reader always makes
// progress whatever the others hold; read-ahead beyond that block is taken
// from the budget only while it lasts (never waited for), so readers never
// wait on each other's memory.
type readBudget struct {
	size int64
	sem  *semaphore.Weighted
	held atomic.Int64
}

var (
	budgetsMu sync.Mutex
	budgets   = map[int64]*readBudget{}
)

// sharedReadBudget returns the process-wide budget of size bytes: every
// storage instance with the same setting shares it.
func sharedReadBudget(size int64) *readBudget {
	budgetsMu.Lock()
	defer budgetsMu.Unlock()
	if b := budgets[size]; b != nil {
		return b
	}
	b := &readBudget{size: size, sem: semaphore.NewWeighted(size)}
	budgets[size] = b
	return b
}

func (b *readBudget) tryTake(n int64) bool {
	if !b.sem.TryAcquire(n) {
		return false
	}
	b.held.Add(n)
	return true
}

func (b *readBudget) give(n int64) {
	if n > 0 {
		b.held.Add(-n)
		b.sem.Release(n)
	}
}

// blocks keeps the block buffers of closed readers for the next ones, so
// that files read one after another reuse memory instead of leaving it to
// the garbage collector.
var blocks = sync.Pool{New: func() any { b := make([]byte, crcBlockSize); return &b }}

func getBlock(size int64) []byte {
	if size != crcBlockSize {
		return make([]byte, size)
	}
	return (*blocks.Get().(*[]byte))[:size]
}

func putBlock(b []byte) {
	if b = b[:cap(b)]; len(b) == crcBlockSize {
		blocks.Put(&b)
	}
}
