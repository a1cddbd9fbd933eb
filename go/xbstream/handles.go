package xbstream

import (
	"container/list"
	"os"
	"path"
	"sync"
	"sync/atomic"
)

// handleCache keeps the files being written open across lanes, at most max at
// once, closing the least recently used first. A nil root (Verify) opens
// nothing and only counts the files.
type handleCache struct {
	root    *os.Root
	max     int
	created atomic.Int64 // files created

	mu       sync.Mutex // guards what follows and the handle fields of every file
	lru      *list.List // of *fileState with an open handle, most recent first
	open     int
	closeErr error // the first error closing a handle
}

// handle is what the cache keeps of one file; fileState embeds it.
type handle struct {
	created bool  // guarded by the fileState's mu
	openErr error // guarded by the fileState's mu

	// guarded by handleCache.mu
	f    *os.File
	refs int
	elem *list.Element
}

func newHandleCache(root *os.Root, max int) *handleCache {
	return &handleCache{root: root, max: max, lru: list.New()}
}

// with runs fn with an open handle for fs (nil under Verify), creating the
// file and its parents on first use.
func (c *handleCache) with(fs *fileState, fn func(*os.File) error) error {
	if c.root == nil {
		fs.mu.Lock()
		if !fs.created {
			fs.created = true
			c.created.Add(1)
		}
		fs.mu.Unlock()
		return fn(nil)
	}
	c.mu.Lock()
	if fs.f != nil {
		fs.refs++
		c.lru.MoveToFront(fs.elem)
		f := fs.f
		c.mu.Unlock()
		err := fn(f)
		c.release(fs)
		return err
	}
	c.mu.Unlock()

	f, err := c.openFile(fs)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if fs.f != nil { // another lane opened it meanwhile
		c.mu.Unlock()
		f.Close()
		return c.with(fs, fn)
	}
	fs.f, fs.refs = f, 1
	fs.elem = c.lru.PushFront(fs)
	c.open++
	evict := c.evictLocked()
	c.mu.Unlock()
	c.closeAll(evict)
	err = fn(f)
	c.release(fs)
	return err
}

func (c *handleCache) release(fs *fileState) {
	c.mu.Lock()
	fs.refs--
	evict := c.evictLocked()
	c.mu.Unlock()
	c.closeAll(evict)
}

// evictLocked takes the least recently used handles not in use out of the
// cache until it holds at most max; the caller closes them unlocked.
func (c *handleCache) evictLocked() []*os.File {
	var out []*os.File
	for el := c.lru.Back(); el != nil && c.open > c.max; {
		prev := el.Prev()
		fs := el.Value.(*fileState)
		if fs.refs == 0 {
			out = append(out, fs.f)
			fs.f, fs.elem = nil, nil
			c.lru.Remove(el)
			c.open--
		}
		el = prev
	}
	return out
}

func (c *handleCache) closeAll(fs []*os.File) {
	for _, f := range fs {
		if err := f.Close(); err != nil {
			c.mu.Lock()
			if c.closeErr == nil {
				c.closeErr = err
			}
			c.mu.Unlock()
		}
	}
}

// openFile opens fs's file, creating it exclusively the first time, as
// mbstream does (so a file or symlink already there is an error).
func (c *handleCache) openFile(fs *fileState) (*os.File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.openErr != nil {
		return nil, fs.openErr
	}
	if fs.created {
		return c.root.OpenFile(fs.path, os.O_WRONLY, 0)
	}
	if d := path.Dir(fs.path); d != "." {
		if err := c.root.MkdirAll(d, 0o750); err != nil {
			fs.openErr = err
			return nil, err
		}
	}
	f, err := c.root.OpenFile(fs.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		fs.openErr = err
		return nil, err
	}
	fs.created = true
	c.created.Add(1)
	return f, nil
}

// close closes every handle and the root; called once every lane has
// stopped. It returns the first error closing a handle.
func (c *handleCache) close() error {
	c.mu.Lock()
	var fs []*os.File
	for el := c.lru.Front(); el != nil; el = el.Next() {
		st := el.Value.(*fileState)
		fs = append(fs, st.f)
		st.f, st.elem = nil, nil
	}
	c.lru.Init()
	c.open = 0
	c.mu.Unlock()
	c.closeAll(fs)
	if c.root != nil {
		_ = c.root.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}
