// Package backuphandle declares what a backup engine may ask of a storage's
// BackupHandle beyond Vitess's backupstorage.BackupHandle: the whole
// contract between the fifo engine and the split storage, which never import
// each other. The engine type-asserts a handle to these; a storage that
// offers one asserts it at compile time (var _ backuphandle.Chain =
// (*Handle)(nil)), so a rename on either side fails to build instead of
// dropping the engine onto its slow path.
package backuphandle

import (
	"context"
	"io"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
)

// Chain is a handle whose storage holds incremental chains: it keeps a
// base while a backup depends on it.
type Chain interface {
	// SetBase records, before any file is written, that this backup depends
	// on base; the storage keeps the base while this backup exists.
	SetBase(ctx context.Context, base string) error
	// Siblings lists the complete backups of the handle's directory.
	Siblings(ctx context.Context) ([]backupstorage.BackupHandle, error)
	// Sibling opens a backup of the handle's directory by name: a complete
	// one, or one removed from the list but kept as a base.
	Sibling(ctx context.Context, name string) (backupstorage.BackupHandle, error)
}

// RangeReader reads part of a stored file (n bytes from off), so a restore
// of some tables reads only their stretches of a lane. Other handles read a
// file from its start and the engine skips what it does not want.
type RangeReader interface {
	ReadFileRange(ctx context.Context, filename string, off, n int64) (io.ReadCloser, error)
}

// StoredSizer says a stored file's size without reading it.
type StoredSizer interface {
	StoredSize(ctx context.Context, file string) (int64, error)
}

// ConcurrentFiles says how many files the handle can have open for writing
// at once (the split storage: the parts its spool has room for); the
// engine's automatic lane count stays within it.
type ConcurrentFiles interface {
	WritableFilesAtOnce() int
}

// LocalDirs says which directories of this host the handle's storage keeps
// its backups in (a local root; none for a store elsewhere), so that the
// engine never takes a backup into, nor restores by clearing, a tablet
// directory that holds them.
type LocalDirs interface {
	LocalDirs() []string
}
