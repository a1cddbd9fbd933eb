package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// A backup of the legacy storage (one of Vitess's own, listed beside the
// split storage's: splitstorage/legacy.go) is copied file by file through
// the two storages' own interfaces: read through the legacy storage's
// handle, written as a new backup of the split storage (its parts, their
// checksums), with the files its MANIFEST names (BackupFiles), the MANIFEST
// last. It keeps its engine: Vitess restores it from the split storage as
// it did from the legacy one. Each file is then read back from the copy and
// compared with what was read (CRC-32 and size); a copy that differs is
// removed again.

// copiedFile is one file copied: its name, size and CRC-32 as read.
type copiedFile struct {
	name string
	size int64
	sum  uint32
}

// copyLegacy copies bh (a legacy storage's) into to as dir/bh.Name().
func copyLegacy(ctx context.Context, bh backupstorage.BackupHandle, to peerStorage, dir string) (splitstorage.CopyReport, error) {
	var rep splitstorage.CopyReport
	name := bh.Name()
	_, doc, err := fifobackupengine.ReadAnyManifest(ctx, bh)
	if err != nil && doc == nil {
		return rep, sourceErr(err)
	}
	if err != nil {
		return rep, err // read, but not JSON
	}
	files, err := fifobackupengine.BackupFiles(doc)
	if err != nil {
		return rep, fmt.Errorf("backup %s/%s: %w", dir, name, err)
	}
	if own, err := ownBackup(ctx, to, dir, name); err != nil || own != nil {
		if err == nil {
			err = flagvalue.Contradiction(fmt.Errorf("backup %s/%s: the split storage already holds it, so nothing was copied: %w", dir, name,
				splitstorage.ErrExists))
		}
		return rep, err
	}
	nbh, err := to.StartBackup(ctx, dir, name)
	if err != nil {
		return rep, err
	}
	var copied []copiedFile
	for _, f := range files {
		c, err := copyFile(ctx, bh, nbh, f)
		if err != nil {
			_ = nbh.AbortBackup(context.Background())
			return rep, fmt.Errorf("backup %s/%s: copying %s: %w", dir, name, f, err)
		}
		copied = append(copied, c)
		rep.Objects++
		rep.Bytes += c.size
		rep.Copied, rep.CopiedBytes = rep.Objects, rep.Bytes
	}
	if err := nbh.EndBackup(ctx); err != nil {
		return rep, fmt.Errorf("backup %s/%s: completing the copy: %w", dir, name, err)
	}
	if err := readBack(ctx, to, dir, name, copied); err != nil {
		if rerr := to.RemoveBackup(context.Background(), dir, name); rerr != nil {
			err = fmt.Errorf("%w; removing the copy failed too: %v", err, rerr)
		}
		return rep, err
	}
	return rep, nil
}

// ownBackup is to's own backup dir/name (not its legacy storage's), nil
// when it has none.
func ownBackup(ctx context.Context, to peerStorage, dir, name string) (backupstorage.BackupHandle, error) {
	bhs, err := to.ListBackups(ctx, dir)
	if err != nil {
		return nil, err
	}
	for _, h := range bhs {
		if h.Name() == name && to.Origin(h) == splitstorage.Name {
			return h, nil
		}
	}
	return nil, nil
}

// copyFile copies one file of from into to, summing what it read; an error
// reading from is sourceErr's.
func copyFile(ctx context.Context, from, to backupstorage.BackupHandle, file string) (copiedFile, error) {
	r, err := from.ReadFile(ctx, file)
	if err != nil {
		return copiedFile{}, sourceErr(err)
	}
	defer r.Close()
	w, err := to.AddFile(ctx, file, backupstorage.FileSizeUnknown)
	if err != nil {
		return copiedFile{}, err
	}
	h := crc32.NewIEEE()
	src := &readErrors{r: r}
	n, err := io.Copy(io.MultiWriter(w, h), src)
	if src.err != nil {
		err = sourceErr(src.err)
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return copiedFile{name: file, size: n, sum: h.Sum32()}, err
}

// sourceErr is an error reading the legacy storage: a file that is not
// there is the backup's (it lacks a file its MANIFEST names); any other
// says only that it could not be read (unreadable), never that it is
// damaged: the legacy storage keeps no checksum to tell.
func sourceErr(err error) error {
	if unreadable.Missing(err) {
		return err
	}
	return unreadable.Error(err)
}

// readErrors keeps the error its reader returned (io.EOF aside), to tell a
// failed read of the source from a failed write of the copy.
type readErrors struct {
	r   io.Reader
	err error
}

func (e *readErrors) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// readBack reads every copied file from the copy and compares it with
// what was read from the source.
func readBack(ctx context.Context, to peerStorage, dir, name string, copied []copiedFile) error {
	bh, err := ownBackup(ctx, to, dir, name)
	if err == nil && bh == nil {
		err = errors.New("not listed after it was completed")
	}
	if err != nil {
		return fmt.Errorf("backup %s/%s: reading the copy back: %w", dir, name, err)
	}
	for _, c := range copied {
		r, err := bh.ReadFile(ctx, c.name)
		if err != nil {
			return fmt.Errorf("backup %s/%s: reading %s back from the copy: %w", dir, name, c.name, err)
		}
		h := crc32.NewIEEE()
		n, err := io.Copy(h, r)
		r.Close()
		if err != nil {
			return fmt.Errorf("backup %s/%s: reading %s back from the copy: %w", dir, name, c.name, err)
		}
		if n != c.size || h.Sum32() != c.sum {
			return fmt.Errorf("backup %s/%s: %s reads back as %d bytes (CRC-32 %08x) from the copy, %d (%08x) from the source", dir, name, c.name, n,
				h.Sum32(), c.size, c.sum)
		}
	}
	return nil
}
