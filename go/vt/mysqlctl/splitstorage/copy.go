package splitstorage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend/local"
)

// CopyOptions configures CopyBackup.
type CopyOptions struct {
	// Concurrency is how many objects are copied at once (default: the
	// destination's upload concurrency).
	Concurrency int
	// OnObject is called after each object with its size and whether it was
	// copied (false: the destination already had it). Called concurrently.
	OnObject func(key string, size int64, copied bool)
	// Move says the source goes once the copy is done: on one file system
	// the objects are then hard-linked, not copied (a copy that stays must
	// not share its bytes with the source).
	Move bool
}

// CopyReport says what CopyBackup did.
type CopyReport struct {
	Objects, Copied    int
	Bytes, CopiedBytes int64
	// ServerSide of the copied objects were copied by the storage service
	// (their bytes never passed through this process).
	ServerSide int
}

// CopyBackup copies the complete backup dir/name of s to dst, under the same
// directory and name. Every object but the markers is copied first, each
// through a temporary file (memory does not grow with the part size), then
// the destination is verified against the source's completion marker (every
// index; every part's size and CRC32C, read back), and only then is the
// marker written there: the destination never lists a backup before it is
// whole. A copy that stopped halfway is resumed by running it again: objects
// already at the destination with the right size (small ones: the same
// bytes) are skipped, and parts the verification finds wrong are deleted
// there, so that the next run copies them again. A destination that already
// holds the backup complete is refused (ErrExists).
func (s *Storage) CopyBackup(ctx context.Context, dst *Storage, dir, name string, opts CopyOptions) (CopyReport, error) {
	var rep CopyReport
	where := dir + "/" + name
	se, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return rep, err
	}
	de, err := dst.backupEnv(ctx, dir, name)
	if err != nil {
		return rep, err
	}
	prefix := backupPrefix(dir, name)
	complete, err := readSmall(ctx, se.be, prefix+completeMarker)
	if errors.Is(err, ErrNotExist) {
		// A retired base copies as a complete backup.
		var r retiredDoc
		if r, err = readRetired(ctx, se.be, prefix); err == nil {
			complete = r.Complete
		}
	}
	if err != nil {
		return rep, fmt.Errorf("split storage: copying backup %s: it is not complete at the source: %w", where, err)
	}
	// An incremental backup is only of use where its base is.
	base, err := baseOf(ctx, se.be, dir, name)
	if err != nil {
		return rep, fmt.Errorf("split storage: copying backup %s: %w", where, err)
	}
	if base != "" {
		state, err := backupState(ctx, de.be, dir, base)
		if err != nil {
			return rep, fmt.Errorf("split storage: copying backup %s: %w", where, err)
		}
		if state == "" {
			return rep, fmt.Errorf("split storage: copying backup %s: it is incremental and its base %s/%s is not at the destination %s: copy the base first: %w", where, dir, base, de.be, ErrNotExist)
		}
	}
	if _, err := de.be.Stat(ctx, prefix+completeMarker); err == nil {
		return rep, fmt.Errorf("split storage: copying backup %s: the destination %s already holds it: %w", where, de.be, ErrExists)
	} else if !errors.Is(err, ErrNotExist) {
		return rep, fmt.Errorf("split storage: copying backup %s: %w", where, err)
	}
	objs, err := se.be.List(ctx, prefix, false)
	if err != nil {
		return rep, fmt.Errorf("split storage: copying backup %s: %w", where, err)
	}
	var data, sidecars []backend.ObjectInfo
	for _, o := range objs {
		switch {
		case o.Dir || o.Key == prefix+completeMarker || o.Key == prefix+quarantineMarker || o.Key == prefix+retiredMarker:
		case isSidecarKey(prefix, o.Key):
			sidecars = append(sidecars, o)
		default:
			data = append(data, o)
		}
	}
	conc := opts.Concurrency
	if conc <= 0 {
		conc = de.cfg.UploadConcurrency
	}
	var mu sync.Mutex
	copyAll := func(objs []backend.ObjectInfo) error {
		return forEach(ctx, conc, objs, func(ctx context.Context, o backend.ObjectInfo) error {
			copied, server, err := copyObject(ctx, se.be, de.be, o, de.cfg.SpoolDir, opts.Move)
			if err != nil {
				return fmt.Errorf("split storage: copying backup %s: %s: %w", where, o.Key, err)
			}
			mu.Lock()
			rep.Objects++
			rep.Bytes += o.Size
			if copied {
				rep.Copied++
				rep.CopiedBytes += o.Size
			}
			if server {
				rep.ServerSide++
			}
			mu.Unlock()
			if opts.OnObject != nil {
				opts.OnObject(o.Key, o.Size, copied)
			}
			return nil
		})
	}
	if err := copyAll(data); err != nil {
		return rep, err
	}

	dh := &Handle{s: dst, e: de, dir: dir, name: name, readOnly: true}
	if _, err := dh.verifyAgainst(ctx, complete, nil, VerifyPartsOptions{Concurrency: conc}); err != nil {
		// Wrong objects go, so that the next run copies them again.
		var p Problem
		for _, e := range flatten(err) {
			if errors.As(e, &p) && p.Key != "" && p.Key != prefix+completeMarker {
				de.be.Delete(ctx, p.Key)
			}
		}
		return rep, fmt.Errorf("split storage: copy of backup %s failed its verification at the destination %s (the damaged objects were removed there; run the copy again): %w", where, de.be, err)
	}
	if err := de.be.Put(ctx, prefix+completeMarker, bytes.NewReader(complete), int64(len(complete)), backend.PutOptions{CRC32C: crc32c(complete)}); err != nil {
		return rep, fmt.Errorf("split storage: copying backup %s: writing its completion marker: %w", where, err)
	}
	if err := copyAll(sidecars); err != nil {
		return rep, err
	}
	return rep, nil
}

// copyObject copies o from src to dst unless dst has it already (same size;
// for objects small enough to compare, the same bytes), and reports whether
// it copied: server-side where dst can (same S3 endpoint; same file system
// for a move), otherwise through a temporary file in spoolDir, so a retried
// upload can read the bytes again.
func copyObject(ctx context.Context, src, dst backend.Backend, o backend.ObjectInfo, spoolDir string, move bool) (copied, serverSide bool, err error) {
	if have, err := dst.Stat(ctx, o.Key); err == nil && have.Size == o.Size {
		if o.Size > maxSidecarBytes {
			return false, false, nil // a part: its CRC32C is checked by the verification after the copy
		}
		a, errA := readSmall(ctx, src, o.Key)
		b, errB := readSmall(ctx, dst, o.Key)
		if errA == nil && errB == nil && bytes.Equal(a, b) {
			return false, false, nil
		}
	} else if err != nil && !errors.Is(err, ErrNotExist) {
		return false, false, err
	}
	if c, ok := dst.(backend.ServerCopier); ok && (move || !isLocal(dst)) {
		if copied, err := c.CopyFrom(ctx, src, o.Key, o.Size, backend.PutOptions{}); copied || err != nil {
			return copied, copied, err
		}
	}
	r, err := src.Get(ctx, o.Key, 0, -1)
	if err != nil {
		return false, false, err
	}
	defer r.Close()
	f, err := os.CreateTemp(spoolDir, "vtfifo-copy-")
	if err != nil {
		return false, false, err
	}
	defer f.Close()
	_ = os.Remove(f.Name()) // nameless: nothing stays behind a killed copy
	h := crc32.New(castagnoli)
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err != nil {
		return false, false, err
	}
	if n != o.Size {
		return false, false, fmt.Errorf("read %d bytes, the listing says %d", n, o.Size)
	}
	return true, false, dst.Put(ctx, o.Key, io.NewSectionReader(f, 0, n), n, backend.PutOptions{CRC32C: h.Sum32()})
}

// forEach runs fn on every item, conc at a time, and returns the first
// error (the others are cancelled); it returns once every fn has.
func forEach[T any](ctx context.Context, conc int, items []T, fn func(context.Context, T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	sem := make(chan struct{}, max(conc, 1))
	for _, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, it); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// flatten undoes errors.Join.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func isLocal(b backend.Backend) bool {
	_, ok := backend.Innermost(b).(*local.Backend)
	return ok
}
