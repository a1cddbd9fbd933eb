package vtfifocli

import (
	"context"
	"fmt"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// What the CLI asks of a storage beyond backupstorage.BackupStorage, here
// only: one small interface per capability, and one way to ask for each
// kind: can, for what a command cannot do without (its error names the
// storage that lacks it), has, for what it does more with where the
// storage has it. The split storage has them
// all (asserted below); a storage that wraps another passes on what the one
// it wraps has. Nowhere else does the CLI assert a concrete storage type.

// incompleteLister lists the backups never completed (and quarantined).
type incompleteLister interface {
	ListIncomplete(ctx context.Context, dir string) ([]splitstorage.IncompleteBackup, error)
}

// ownChecker says what is there by a backup name no listing holds: objects
// it did not write (splitstorage.ErrNotOurs), or nothing.
type ownChecker interface {
	CheckOwn(ctx context.Context, dir, name string) error
}

// rootChecker says whether the storage's root is one of its own
// (splitstorage.ErrNotSplitRoot when it provably is not).
type rootChecker interface {
	CheckRoot(ctx context.Context) error
}

// guardedRemover says which backups a removal keeps a base for, and what a
// removal would refuse (a reader's lease), and removes a backup unless it
// is being read.
type guardedRemover interface {
	Dependents(ctx context.Context, dir, name string) ([]string, error)
	CheckUnread(ctx context.Context, dir, name string) error
	RemoveUnread(ctx context.Context, dir, name string) error
}

// backupLocker locks a backup and the ones it needs at the store.
type backupLocker interface {
	Lock(ctx context.Context, dir, name string, l splitstorage.Lock) (splitstorage.LockResult, error)
}

// sealReader is a backup handle that says whether it is sealed, with
// which key, and whether its seal checked.
type sealReader interface {
	SealState(ctx context.Context) (string, error)
}

// promoter copies a backup to a protected split storage, verified and
// locked there.
type promoter interface {
	Promote(ctx context.Context, to backupstorage.BackupStorage, dir, name string, l splitstorage.Lock, opts splitstorage.CopyOptions) (splitstorage.PromoteReport, error)
}

// promotionReader is a backup handle that says where it was promoted,
// and what writing it cost at the store.
type promotionReader interface {
	Promotion(ctx context.Context) (string, error)
	Cost(ctx context.Context) (string, error)
}

// lockReader is a backup handle that says what its lock records hold.
type lockReader interface {
	LockState(ctx context.Context) (splitstorage.BackupLock, error)
}

// leaseBreaker ends another holder's leases on a backup.
type leaseBreaker interface {
	BreakLeases(ctx context.Context, dir, name string) ([]string, error)
}

// releaser puts a quarantined backup back.
type releaser interface {
	Release(ctx context.Context, dir, name string) (dependents []string, err error)
}

// originNamer says which storage a listed backup is in (the split storage
// lists a legacy storage's beside its own).
type originNamer interface {
	Origin(bh backupstorage.BackupHandle) string
}

// keyLister names the encryption keys the storage holds.
type keyLister interface {
	Keys(ctx context.Context) ([]string, string, error)
}

// partVerifier is a backup handle whose parts can be checked one by one.
type partVerifier = splitstorage.PartVerifier

// fleetLister lists every shard of the storage and what is in each, from
// the summaries it keeps of each (splitstorage/fleet.go).
type fleetLister interface {
	ListShard(ctx context.Context, dir string) ([]backupstorage.BackupHandle, []splitstorage.IncompleteBackup, error)
	Fleet(ctx context.Context, opts splitstorage.FleetOptions) ([]splitstorage.FleetShard, splitstorage.FleetReport, error)
}

// keyChecker is a backup handle that says which key wraps it and whether
// the key file opens it.
type keyChecker interface {
	CheckKey(ctx context.Context) (string, error)
}

// leaseHolder holds a backup for reading, so that removals keep off it.
type leaseHolder interface {
	Hold(ctx context.Context, dir, name, what string, ttl time.Duration) (*splitstorage.Lease, error)
}

// backupCopier copies a backup to another split storage, verified there;
// it opens any backup by name (a base of an incremental one, even one
// removed from the list and kept for its dependents) and removes one.
type backupCopier interface {
	CopyBackup(ctx context.Context, dst backupstorage.BackupStorage, dir, name string, opts splitstorage.CopyOptions) (splitstorage.CopyReport, error)
	backupOpener
	RemoveBackup(ctx context.Context, dir, name string) error
}

// backupOpener opens any backup by name, listed or kept as a base.
type backupOpener interface {
	OpenBackup(ctx context.Context, dir, name string) (backupstorage.BackupHandle, error)
}

// backupRepairer repairs a backup's damaged parts from a copy in another
// split storage.
type backupRepairer interface {
	RepairBackup(ctx context.Context, from backupstorage.BackupStorage, dir, name string) (splitstorage.RepairReport, error)
}

// peerStorage is the second split storage of a copy (its destination) or
// a repair (where the copy is): what the CLI asks of it beside Vitess's
// interface (openPeer builds it).
type peerStorage interface {
	backupstorage.BackupStorage
	backupOpener
	originNamer
	rootChecker
}

var (
	_ incompleteLister = (*splitstorage.Storage)(nil)
	_ rootChecker      = (*splitstorage.Storage)(nil)
	_ ownChecker       = (*splitstorage.Storage)(nil)
	_ fleetLister      = (*splitstorage.Storage)(nil)
	_ guardedRemover   = (*splitstorage.Storage)(nil)
	_ releaser         = (*splitstorage.Storage)(nil)
	_ leaseBreaker     = (*splitstorage.Storage)(nil)
	_ keyLister        = (*splitstorage.Storage)(nil)
	_ originNamer      = (*splitstorage.Storage)(nil)
	_ leaseHolder      = (*splitstorage.Storage)(nil)
	_ backupCopier     = (*splitstorage.Storage)(nil)
	_ backupRepairer   = (*splitstorage.Storage)(nil)
	_ peerStorage      = (*splitstorage.Storage)(nil)
	_ backupLocker     = (*splitstorage.Storage)(nil)
	_ lockReader       = (*splitstorage.Handle)(nil)
	_ sealReader       = (*splitstorage.Handle)(nil)
	_ promoter         = (*splitstorage.Storage)(nil)
	_ promotionReader  = (*splitstorage.Handle)(nil)
	_ keyChecker       = (*splitstorage.Handle)(nil)
	_ indexer          = (*splitstorage.Handle)(nil)
	_ partVerifier     = (*splitstorage.Handle)(nil)
	_ storeClock       = (*splitstorage.Storage)(nil)
)

// has returns v (a storage or a backup handle) as the capability T, and
// whether it has it.
func has[T any](v any) (T, bool) {
	c, ok := v.(T)
	return c, ok
}

// can returns v (a storage or a backup handle) as the capability T, or an
// error naming the storage in use and what it cannot do.
func can[T any](v any, what string) (T, error) {
	c, ok := has[T](v)
	if !ok {
		return c, fmt.Errorf("the %s storage cannot %s: that needs the split storage (--backup-storage-implementation=split)",
			backupstorage.BackupStorageImplementation, what)
	}
	return c, nil
}

// indexer is the split storage's handle: its lanes' part indexes and
// encryption.
type indexer interface {
	Index(ctx context.Context, file string) (splitstorage.Index, error)
	EncryptionKeyID(ctx context.Context) (string, error)
}
