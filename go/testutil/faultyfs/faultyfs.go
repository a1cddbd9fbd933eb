// Package faultyfs mounts a directory again through FUSE, a loopback file
// system this process serves, and fails the opens, reads, stats and
// directory listings a test names with the errno it names: a network file
// system or a FUSE mount of a bucket (NFS, gcsfuse, s3fs) failing on the
// way to the data, reported to the reader by the kernel exactly as it
// reports theirs.
package faultyfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Op is what a fault fails.
type Op int

const (
	// Open fails opening the file.
	Open Op = iota
	// Read fails every read of the opened file.
	Read
	// Stat fails looking the path up and reading its attributes (stat).
	Stat
	// List fails reading the directory (readdir).
	List
)

// FS is a mounted loopback of a directory.
type FS struct {
	// Dir is the mount point: what is under it is the directory's.
	Dir string

	mu     sync.Mutex
	faults map[string]fault // by path relative to Dir
}

type fault struct {
	op    Op
	errno syscall.Errno
}

// Available says why this host cannot mount one (FUSE needs /dev/fuse,
// and mounting without fusermount needs root), nil when it can.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("mounting a FUSE file system without fusermount needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("no FUSE device: %w", err)
	}
	return nil
}

// Mount serves dir at a new mount point until the test ends.
func Mount(t testing.TB, dir string) *FS {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("faultyfs: %v", err)
	}
	f := &FS{Dir: t.TempDir(), faults: map[string]fault{}}
	loopback, err := fs.NewLoopbackRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	root := &node{LoopbackNode: loopback.(*fs.LoopbackNode), fs: f}
	// Nothing cached by the kernel (no entry or attribute timeouts, no
	// READDIRPLUS that would hand it the entries' attributes): every stat
	// and open reaches the server, so a fault set is met at once.
	var never time.Duration
	server, err := fs.Mount(f.Dir, root, &fs.Options{EntryTimeout: &never, AttrTimeout: &never, NegativeTimeout: &never,
		MountOptions: fuse.MountOptions{DirectMount: true, FsName: "faultyfs", DisableReadDirPlus: true}})
	if err != nil {
		t.Fatalf("faultyfs: mounting %s at %s: %v", dir, f.Dir, err)
	}
	t.Cleanup(func() { unmount(t, server) })
	return f
}

// unmount retries while a file of the mount is still closing.
func unmount(t testing.TB, server *fuse.Server) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := server.Unmount()
		if err == nil || time.Now().After(deadline) {
			if err != nil {
				t.Errorf("faultyfs: unmounting: %v", err)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Fail makes op on the file at rel (a path under Dir) fail with errno.
func (f *FS) Fail(rel string, op Op, errno syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[rel] = fault{op, errno}
}

// Heal removes the fault of the file at rel.
func (f *FS) Heal(rel string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.faults, rel)
}

func (f *FS) fault(rel string, op Op) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft, ok := f.faults[rel]; ok && ft.op == op {
		return ft.errno
	}
	return 0
}

// node is a loopback node whose opens and reads may fail.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
	_ fs.NodeReaddirer      = (*node)(nil)
)

// rel is the node's path under Dir ("" for Dir itself).
func (n *node) rel() string { return n.Path(n.RootData.RootNode.EmbeddedInode()) }

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.fs.fault(path.Join(n.rel(), name), Stat); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Lookup(ctx, name, out)
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := n.fs.fault(n.rel(), Stat); errno != 0 {
		return errno
	}
	return n.LoopbackNode.Getattr(ctx, f, out)
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.fs.fault(n.rel(), List); errno != 0 {
		return nil, 0, errno
	}
	return n.LoopbackNode.OpendirHandle(ctx, flags)
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	if errno := n.fs.fault(n.rel(), List); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Readdir(ctx)
}

// WrapChild makes every node of the tree a node.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), fs: n.fs}
}

// Open opens the file for direct I/O, so that every read reaches the
// server (a page the kernel cached would not fail).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	rel := n.rel()
	if errno := n.fs.fault(rel, Open); errno != 0 {
		return nil, 0, errno
	}
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &file{LoopbackFile: fh.(*fs.LoopbackFile), fs: n.fs, rel: rel}, fuseFlags | fuse.FOPEN_DIRECT_IO, 0
}

// file is a loopback file whose reads may fail.
type file struct {
	*fs.LoopbackFile
	fs  *FS
	rel string
}

var _ fs.FileReader = (*file)(nil)

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if errno := f.fs.fault(f.rel, Read); errno != 0 {
		return nil, errno
	}
	return f.LoopbackFile.Read(ctx, buf, off)
}
