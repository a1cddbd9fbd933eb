// Package local is the file backend: objects are files under a root directory.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Backend stores objects as files under a root directory. A Put writes a
// temporary file, fsyncs it, renames it into place and fsyncs the directory, so
// an object is either absent or complete after a crash. A body that is a file
// without a name on the root's file system (a spooled part) is linked as the
// temporary file instead of copied into it.
type Backend struct {
	root string
}

const (
	localFileMode = 0o640
	localDirMode  = 0o750
)

func New(root string) (*Backend, error) {
	if root == "" {
		return nil, backend.Permanent(errors.New("--split-storage-root is empty"))
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, backend.Permanent(err)
	}
	return &Backend{root: abs}, nil
}

func (l *Backend) String() string { return "file:" + l.root }
func (l *Backend) Close() error   { return nil }

func (l *Backend) path(key string) (string, error) {
	clean := path.Clean("/" + key)
	if clean == "/" || strings.Contains(key, "\\") || clean != "/"+strings.TrimSuffix(key, "/") {
		return "", backend.Permanent(fmt.Errorf("invalid object key %q", key))
	}
	return filepath.Join(l.root, filepath.FromSlash(clean[1:])), nil
}

// entryInfo is what an entry of dir is, following a symbolic link as Get
// and Stat do: an operator who moved a shard's or a backup's directory to
// another disk and linked it in place sees it listed, counted by the fleet
// view and removed as it is read, as if it were there. Nil where the entry
// is gone (or a link leads nowhere): no object.
func entryInfo(dir string, e fs.DirEntry) (fs.FileInfo, error) {
	var fi fs.FileInfo
	var err error
	if e.Type()&fs.ModeSymlink != 0 {
		fi, err = os.Stat(filepath.Join(dir, e.Name()))
	} else {
		fi, err = e.Info()
	}
	if err != nil {
		return nil, vanishedOr(err)
	}
	return fi, nil
}

// walkObjects appends the objects under dir (a directory, or a link to
// one) to out.
func (l *Backend) walkObjects(dir string, out []backend.ObjectInfo) ([]backend.ObjectInfo, error) {
	// The separator makes WalkDir follow dir itself where it is a link.
	err := filepath.WalkDir(dir+string(filepath.Separator), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || ownTemp(d.Name()) {
			return nil
		}
		info, err := entryInfo(filepath.Dir(p), d)
		if err != nil || info == nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(l.root, p)
		out = append(out, backend.ObjectInfo{Key: filepath.ToSlash(rel), Size: info.Size(), Modified: info.ModTime()})
		return nil
	})
	return out, err
}

// vanishedOr is nil for an entry removed between the directory's read and
// its stat (it is not there), else err: an entry that could not be
// stat'ed (a network file system's EIO or ESTALE, a permission) is not an
// absent one, and a listing that left it out would call a part missing.
func vanishedOr(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func localErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %v", backend.ErrNotExist, err)
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %v", backend.ErrExists, err)
	}
	return backend.Permanent(err)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (l *Backend) mkdirs(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	var created []string // the directories MkdirAll makes, under the root
	for d := dir; strings.HasPrefix(d, l.root+string(filepath.Separator)); d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		created = append(created, d)
	}
	if err := os.MkdirAll(dir, localDirMode); err != nil {
		return err
	}
	if err := l.adopt(created...); err != nil {
		return err
	}
	// Make the new directory entries durable up to the root.
	for d := dir; strings.HasPrefix(d, l.root) && d != filepath.Dir(d); d = filepath.Dir(d) {
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
		if d == l.root {
			break
		}
	}
	return nil
}

func (l *Backend) Put(ctx context.Context, key string, r io.ReadSeeker, size int64, opts backend.PutOptions) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := l.mkdirs(dir); err != nil {
		return localErr(err)
	}
	tmp := tempName(p)
	if src := backend.BodyFile(r); src != nil && linkNameless(src, size, tmp) {
		// The body is a spooled part on this file system: naming it saves
		// copying it. Its writeback started while it filled (see
		// splitstorage's spool), so little is left for the fsync.
		err = os.Chmod(tmp, localFileMode)
		if err == nil {
			err = src.Sync()
		}
	} else {
		err = copyInto(ctx, tmp, r, size, key)
	}
	if err == nil {
		err = l.adopt(tmp)
	}
	if err == nil && !opts.Lock.IsZero() {
		err = setLock(tmp, opts.Lock)
	}
	if err == nil && !opts.IfNotExists {
		err = refuseLocked(p, key, "replacing")
	}
	if err != nil {
		os.Remove(tmp)
		return localErr(err)
	}
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if opts.IfNotExists {
		// link fails if the target exists: an atomic create-if-absent.
		if err := os.Link(tmp, p); err != nil {
			return localErr(err)
		}
		os.Remove(tmp)
	} else if err := os.Rename(tmp, p); err != nil {
		return localErr(err)
	}
	ok = true
	return localErr(syncDir(dir))
}

// copyInto writes size bytes of r into a new file tmp and fsyncs it.
func copyInto(ctx context.Context, tmp string, r io.Reader, size int64, key string) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, localFileMode)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, ctxReader{ctx, r})
	if err == nil && n != size {
		err = backend.Permanent(fmt.Errorf("put %s: wrote %d bytes, expected %d", key, n, size))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func (l *Backend) Get(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	p, err := l.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, localErr(err)
	}
	// A directory by the object's name is no object, as Stat and List say:
	// not a read to try again.
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		f.Close()
		if err != nil {
			return nil, localErr(err)
		}
		return nil, fmt.Errorf("%w: %s is a directory", backend.ErrNotExist, key)
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
			return nil, localErr(err)
		}
	}
	if length < 0 {
		return f, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(f, length), f}, nil
}

func (l *Backend) Stat(ctx context.Context, key string) (backend.ObjectInfo, error) {
	p, err := l.path(key)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return backend.ObjectInfo{}, localErr(err)
	}
	if fi.IsDir() {
		return backend.ObjectInfo{}, fmt.Errorf("%w: %s is a directory", backend.ErrNotExist, key)
	}
	return backend.ObjectInfo{Key: key, Size: fi.Size(), Modified: fi.ModTime()}, nil
}

func (l *Backend) List(ctx context.Context, prefix string, dirs bool) ([]backend.ObjectInfo, error) {
	// prefix is a "directory" (ends in '/') or a name prefix inside one.
	dirKey, namePrefix := path.Split(prefix)
	base := l.root
	if dirKey != "" {
		p, err := l.path(dirKey)
		if err != nil {
			return nil, err
		}
		base = p
	}
	var out []backend.ObjectInfo
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, localErr(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, namePrefix) || ownTemp(name) {
			continue
		}
		key := dirKey + name
		info, err := entryInfo(base, e)
		if err != nil {
			return nil, localErr(err)
		}
		if info == nil {
			continue
		}
		if info.IsDir() {
			if dirs {
				out = append(out, backend.ObjectInfo{Key: key + "/", Dir: true})
				continue
			}
			if out, err = l.walkObjects(filepath.Join(base, name), out); err != nil {
				return nil, localErr(err)
			}
			continue
		}
		out = append(out, backend.ObjectInfo{Key: key, Size: info.Size(), Modified: info.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (l *Backend) Delete(ctx context.Context, key string) error {
	p, err := l.path(key)
	if err != nil {
		return err
	}
	if err := refuseLocked(p, key, "deleting"); err != nil {
		return localErr(err)
	}
	if other, ok := l.aliasOf(key); ok {
		return backend.Permanent(flagvalue.Contradiction(fmt.Errorf("%s is %s of this storage, through a symbolic link: deleting it would "+
			"delete that object, which is not this one; the link is the operator's to remove", key, other)))
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return localErr(err)
	}
	// Remove directories left empty, up to (not including) the root. A
	// directory holding only our temporary files (writes cut by a crash:
	// never listed, so never deleted one by one) counts as empty. A
	// symbolic link to a directory (a shard or a backup put on another
	// disk) is the operator's, and removing it would take every backup
	// behind it out of the storage: it stays, and so does what holds it.
	for d := filepath.Dir(p); d != l.root && strings.HasPrefix(d, l.root); d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			break
		}
		if os.Remove(d) != nil && !(removeOnlyTemp(d) && os.Remove(d) == nil) {
			break
		}
	}
	return nil
}

// aliasOf is the other key of this storage that key's file is, where a
// symbolic link on its path leads into a directory another key reaches
// too (a backup's directory linked to another backup's, a shard linked to
// another): deleting key would delete that object. A link elsewhere (a
// directory moved to another disk) is no alias.
func (l *Backend) aliasOf(key string) (string, bool) {
	parts := strings.Split(key, "/")
	root, err := filepath.EvalSymlinks(l.root)
	if err != nil {
		return "", false
	}
	resolved := []string{root} // resolved[k]: where parts[:k] lead
	for i, part := range parts {
		next := filepath.Join(resolved[i], part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", false
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if next, err = filepath.EvalSymlinks(next); err != nil {
				return "", false
			}
			for k := i; k >= 0; k-- {
				if rel, err := filepath.Rel(resolved[k], next); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					other := path.Join(path.Join(parts[:k]...), filepath.ToSlash(rel), path.Join(parts[i+1:]...))
					return other, other != key
				}
			}
		}
		resolved = append(resolved, next)
	}
	return "", false
}

// removeOnlyTemp removes dir's files if every entry is a temporary file
// of ours (ownTemp), and reports whether it did.
func removeOnlyTemp(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return false
	}
	for _, e := range entries {
		if e.IsDir() || !ownTemp(e.Name()) {
			return false
		}
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}
