package splitstorage

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strings"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// A legacy storage (Config.Legacy): one of Vitess's own storage
// implementations, as the tablet used it before the switch to this one,
// configured by its own flags. Its backups (taken by Vitess's builtin or
// xtrabackup engine, or by fifo into that storage) are listed beside this
// storage's, sorted by name, so that GetBackups, a restore's choice by time
// and retention see the shard's whole history; each is its own storage's
// handle, so Vitess restores it with its own engine as before. This
// storage never writes to the legacy one, except to remove a backup an
// operator or retention removes. Its layout is the legacy storage's
// business: it is only ever reached through its own implementation.

const flagLegacy = "split-storage-legacy"

// allowedLegacy are the storages a binary links, besides this one.
func allowedLegacy() string {
	var names []string
	for n := range backupstorage.BackupStorageMap {
		if n != Name {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return "empty, or one of the Vitess storages this binary links: " + strings.Join(names, ", ")
}

func (c Config) checkLegacy(p *flagvalue.Problems) {
	if c.Legacy == "" {
		return
	}
	if _, ok := backupstorage.BackupStorageMap[c.Legacy]; !ok || c.Legacy == Name {
		p.Invalid(flagLegacy, c.Legacy, allowedLegacy())
	}
}

// legacy is the legacy storage with this storage's parameters, nil when
// none is named. It is not closed after use: the handles it lists read
// through it, and Vitess's gcs, azblob and ceph storages return themselves
// from WithParams, so closing would close the shared instance's client.
func (s *Storage) legacy(e *env) backupstorage.BackupStorage {
	if e.cfg.Legacy == "" {
		return nil
	}
	return backupstorage.BackupStorageMap[e.cfg.Legacy].WithParams(s.params)
}

// withLegacy adds to own (this storage's complete backups in dir, whose
// backup directories are names) the legacy storage's, sorted by name. A
// legacy storage whose root is this one's (migration step 2 allows it)
// lists every directory of dir, this storage's backups among them: of the
// names in both, only those this storage can prove it wrote are left out
// (ownership.go); the others are the legacy storage's. A legacy storage
// that cannot list fails the listing, naming it: an empty list would hide
// backups.
func (s *Storage) withLegacy(ctx context.Context, e *env, dir string, names []string, own []backupstorage.BackupHandle) ([]backupstorage.BackupHandle, error) {
	legacy := s.legacy(e)
	if legacy == nil {
		return own, nil
	}
	theirs, err := legacy.ListBackups(ctx, dir)
	if err == nil {
		err = legacyRootExists(e.cfg.Legacy)
	}
	if err != nil {
		return nil, fmt.Errorf("split storage: listing the backups of the legacy %s storage (--%s) in %s: %w", e.cfg.Legacy, flagLegacy, dir, err)
	}
	out := slices.Clone(own)
	for _, bh := range theirs {
		if slices.Contains(names, bh.Name()) {
			ours, _, err := proveBackup(ctx, e.be, dir, bh.Name())
			if err != nil {
				return nil, fmt.Errorf("split storage: listing backups in %s: %w", dir, err)
			}
			if ours {
				continue
			}
		}
		out = append(out, bh)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// legacyRootExists fails for Vitess's file storage whose root does not
// exist: it lists nothing there, which must not pass for a storage without
// backups (a mistyped or unmounted root would hide a fleet's history).
func legacyRootExists(legacy string) error {
	if legacy != "file" {
		return nil
	}
	root := filebackupstorage.FileBackupStorageRoot
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return fmt.Errorf("its root %q (--file-backup-storage-root) does not exist or is not a directory (mistyped, or not mounted?): %w", root,
			cmp.Or(err, fs.ErrNotExist))
	}
	return nil
}

// Origin names the storage a backup listed by this one is in: this
// storage's name, or the legacy storage's.
func (s *Storage) Origin(bh backupstorage.BackupHandle) string {
	if _, ok := bh.(*Handle); ok {
		return Name
	}
	if e, err := s.env(context.Background()); err == nil && e.cfg.Legacy != "" {
		return e.cfg.Legacy
	}
	return "?"
}

// hasManifest reads a legacy backup's MANIFEST (not more than a backup's
// own checks need: that it is there and can be read).
func hasManifest(ctx context.Context, bh backupstorage.BackupHandle) error {
	r, err := bh.ReadFile(ctx, "MANIFEST")
	if err != nil {
		return fmt.Errorf("no MANIFEST that can be read: %w", err)
	}
	return r.Close()
}

// removeLegacy removes dir/name, which is not this storage's, from the
// legacy storage when it is one of its backups: reports whether it did.
func (s *Storage) removeLegacy(ctx context.Context, e *env, dir, name string) (bool, error) {
	legacy := s.legacy(e)
	if legacy == nil {
		return false, nil
	}
	theirs, err := legacy.ListBackups(ctx, dir)
	if err != nil {
		return false, fmt.Errorf("split storage: listing the legacy %s storage (--%s) in %s: %w", e.cfg.Legacy, flagLegacy, dir, err)
	}
	i := slices.IndexFunc(theirs, func(bh backupstorage.BackupHandle) bool { return bh.Name() == name })
	if i < 0 {
		return false, nil
	}
	// Vitess's storages list every directory as a backup: only one with a
	// MANIFEST is one (a root shared with a tablet's files, another tool's
	// tree, holds directories that are not).
	if err := hasManifest(ctx, theirs[i]); err != nil {
		return true, fmt.Errorf("split storage: %s/%s in the legacy %s storage is left alone: it is not a backup (%w): %w", dir, name, e.cfg.Legacy, err,
			ErrNotOurs)
	}
	if err := legacy.RemoveBackup(ctx, dir, name); err != nil {
		return true, fmt.Errorf("split storage: removing backup %s/%s from the legacy %s storage: %w", dir, name, e.cfg.Legacy, err)
	}
	return true, nil
}

// holdsLegacyBackup reports whether the legacy storage, when there is one,
// lists a backup in dir: the fleet view shows a shard whose backups are
// all still there.
func (s *Storage) holdsLegacyBackup(ctx context.Context, e *env, dir string) (bool, error) {
	legacy := s.legacy(e)
	if legacy == nil {
		return false, nil
	}
	bhs, err := legacy.ListBackups(ctx, dir)
	if err != nil {
		return false, fmt.Errorf("split storage: listing the backups of the legacy %s storage (--%s) in %s: %w", e.cfg.Legacy, flagLegacy, dir, err)
	}
	return len(bhs) > 0, nil
}
