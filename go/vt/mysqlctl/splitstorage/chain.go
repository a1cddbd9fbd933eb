package splitstorage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/backuphandle"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
)

// Incremental chains. A backup taken against a base (an incremental backup
// holds only the pages changed since its base) records the base's name in
// its .base object before any of its files is written (SetBase). The storage
// then never loses a base while a backup depends on it: RemoveBackup of a
// backup that others depend on retires it instead (its completion marker
// moves into .retired, so it leaves ListBackups, and with it restores and
// retention counts, while its objects stay for its dependents), and removing
// the last dependent of a retired backup removes that one too, up the chain.

// The handle is what the fifo engine asks of a storage beyond Vitess's
// interface (backuphandle).
var (
	_ backuphandle.Chain           = (*Handle)(nil)
	_ backuphandle.RangeReader     = (*Handle)(nil)
	_ backuphandle.StoredSizer     = (*Handle)(nil)
	_ backuphandle.ConcurrentFiles = (*Handle)(nil)
	_ backuphandle.LocalDirs       = (*Handle)(nil)
)

// SetBase records that this backup, being written, depends on the backup
// named base in the same directory, which must be complete (or retired: kept
// for others). Call it before the first file: from then on the base is not
// removed while this backup exists, and EndBackup refuses to complete if it
// went away meanwhile.
func (h *Handle) SetBase(ctx context.Context, base string) error {
	if h.readOnly {
		return errors.New("split storage: SetBase cannot be called on a read-only backup")
	}
	ctx = backend.WithMeter(ctx, h.meter)
	if err := checkName("base backup name", base, false); err != nil {
		return err
	}
	if base == h.name {
		return fmt.Errorf("split storage: backup %s/%s cannot be its own base", h.dir, h.name)
	}
	h.mu.Lock()
	if h.base != "" || len(h.files) > 0 || h.ended {
		h.mu.Unlock()
		return fmt.Errorf("split storage: backup %s/%s: SetBase must come once, before any file", h.dir, h.name)
	}
	h.base = base
	h.mu.Unlock()
	if err := h.capToBase(ctx); err != nil {
		h.mu.Lock()
		h.base = ""
		h.mu.Unlock()
		return err
	}
	doc, _ := json.Marshal(baseDoc{Base: base})
	key := backupPrefix(h.dir, h.name) + baseMarker
	err := h.e.be.Put(ctx, key, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{IfNotExists: true, CRC32C: crc32c(doc)})
	if err == nil {
		h.baseDoc = doc
	}
	if err != nil {
		err = fmt.Errorf("split storage: backup %s/%s: recording its base %s: %w", h.dir, h.name, base, err)
	} else if err = h.checkBase(ctx); err != nil {
		// Checked after the record: a removal of the base that missed the
		// record has deleted its completion marker by now (removeChained).
		h.e.be.Delete(ctx, key)
	}
	if err != nil {
		// The backup may go on as a full one.
		h.mu.Lock()
		h.base = ""
		h.mu.Unlock()
	}
	return err
}

// checkBase fails unless this backup's base is complete or retired.
func (h *Handle) checkBase(ctx context.Context) error {
	if h.base == "" {
		return nil
	}
	state, err := backupState(ctx, h.e.be, h.dir, h.base)
	if err != nil {
		return fmt.Errorf("split storage: backup %s/%s: checking its base %s: %w", h.dir, h.name, h.base, err)
	}
	if state == "" {
		return fmt.Errorf("split storage: backup %s/%s: its base %s is not a complete backup of %s (removed, quarantined or never completed): %w", h.dir,
			h.name, h.base, h.dir, ErrNotExist)
	}
	return nil
}

// backupState is "complete", "retired" or "" (neither: missing, incomplete
// or quarantined).
func backupState(ctx context.Context, be backend.Backend, dir, name string) (string, error) {
	prefix := backupPrefix(dir, name)
	for _, m := range []string{completeMarker, retiredMarker} {
		_, err := be.Stat(ctx, prefix+m)
		switch {
		case err == nil:
			return strings.TrimPrefix(m, "."), nil
		case !errors.Is(err, ErrNotExist):
			return "", err
		}
	}
	return "", nil
}

// Siblings lists this storage's complete backups of this backup's
// directory (a chain is never based on a legacy storage's backup).
func (h *Handle) Siblings(ctx context.Context) ([]backupstorage.BackupHandle, error) {
	e, names, err := h.s.backupNames(ctx, h.dir)
	if err != nil {
		return nil, err
	}
	states, err := h.s.statesOf(ctx, e, h.dir, names)
	if err != nil {
		return nil, err
	}
	return h.s.handles(e, h.dir, names, states), nil
}

// Sibling opens the backup named name in this backup's directory for
// reading: a complete one, or a retired one kept as a base.
func (h *Handle) Sibling(ctx context.Context, name string) (backupstorage.BackupHandle, error) {
	return h.s.OpenBackup(ctx, h.dir, name)
}

// OpenBackup opens one backup for reading by name: a complete one, or a
// retired one kept as the base of others. Anything else is an error wrapping
// ErrNotExist.
func (s *Storage) OpenBackup(ctx context.Context, dir, name string) (backupstorage.BackupHandle, error) {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	state, err := backupState(ctx, e.be, dir, name)
	if err != nil {
		return nil, fmt.Errorf("split storage: opening backup %s/%s: %w", dir, name, err)
	}
	if state == "" {
		return nil, fmt.Errorf("split storage: backup %s/%s is not a complete backup (missing, removed, quarantined or never completed): %w", dir, name, ErrNotExist)
	}
	return &Handle{s: s, e: e, dir: dir, name: name, readOnly: true}, nil
}

// baseOf returns the base a backup recorded, "" for none.
func baseOf(ctx context.Context, be backend.Backend, dir, name string) (string, error) {
	doc, err := readSmall(ctx, be, backupPrefix(dir, name)+baseMarker)
	if errors.Is(err, ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var b baseDoc
	if err := strictJSON(doc, &b); err != nil {
		return "", fmt.Errorf("%s: %w", backupPrefix(dir, name)+baseMarker, err)
	}
	return b.Base, nil
}

// dependents returns the backups of dir (complete, retired, incomplete or
// still running) whose base is name.
func dependents(ctx context.Context, e *env, dir string, names []string, name string) ([]string, error) {
	var (
		mu   sync.Mutex
		deps []string
	)
	err := forEach(ctx, listWorkers, names, func(ctx context.Context, n string) error {
		if n == name {
			return nil
		}
		b, err := baseOf(ctx, e.be, dir, n)
		if err != nil {
			return fmt.Errorf("reading the base of %s/%s: %w", dir, n, err)
		}
		if b == name {
			mu.Lock()
			deps = append(deps, n)
			mu.Unlock()
		}
		return nil
	})
	sort.Strings(deps)
	return deps, err
}

// Dependents returns the backups of dir that depend on name as their base.
func (s *Storage) Dependents(ctx context.Context, dir, name string) ([]string, error) {
	e, names, err := s.backupNames(ctx, dir)
	if err != nil {
		return nil, err
	}
	deps, err := dependents(ctx, e, dir, names, name)
	if err != nil {
		return nil, fmt.Errorf("split storage: %w", err)
	}
	return deps, nil
}

// removeProven is removeChained for a backup named by a caller: only one
// this storage can prove it wrote (ownership.go); another name is the
// legacy storage's to remove, or left alone (ErrNotOurs).
func (s *Storage) removeProven(ctx context.Context, e *env, dir, name string) error {
	ours, _, err := proveBackup(ctx, e.be, dir, name)
	if err != nil {
		return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
	}
	if ours {
		if err := refuseLocked(ctx, e, dir, name, "removing"); err != nil {
			return err
		}
		if err := refusePromoting(ctx, e, dir, name); err != nil {
			return err
		}
		return s.removeChained(ctx, e, dir, name)
	}
	if done, err := s.removeLegacy(ctx, e, dir, name); done || err != nil {
		return err
	}
	objs, err := e.be.List(ctx, backupPrefix(dir, name), false)
	if err != nil {
		return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
	}
	if len(objs) > 0 {
		// Not a backup this storage wrote, nor one the legacy storage
		// lists: whatever it is, it is left alone.
		return flagvalue.Contradiction(fmt.Errorf("split storage: %s/%s in %s is not a backup the split storage wrote (no start or completion "+
			"marker of its own): it is left alone: %w", dir, name, e.be, ErrNotOurs))
	}
	return nil
}

// removeChained removes a backup unless others depend on it, in which case
// it retires it; then it removes its base too when that was retired and this
// was its last dependent. It reports what it kept.
func (s *Storage) removeChained(ctx context.Context, e *env, dir, name string) error {
	_, names, err := s.backupNames(ctx, dir)
	if err != nil {
		return err
	}
	deps, err := dependents(ctx, e, dir, names, name)
	if err != nil {
		return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
	}
	if len(deps) > 0 {
		return retire(ctx, e, dir, name, deps)
	}
	base, err := baseOf(ctx, e.be, dir, name)
	if err != nil {
		return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
	}
	// The marker that makes it usable (complete, or retired) goes first; a
	// backup may have named this one its base between the listing and now
	// (SetBase checks the base after recording it): look again, and keep it
	// for that one.
	prefix := backupPrefix(dir, name)
	for _, m := range []string{completeMarker, retiredMarker} {
		doc, err := readSmall(ctx, e.be, prefix+m)
		if errors.Is(err, ErrNotExist) {
			continue
		}
		if err == nil {
			err = e.be.Delete(ctx, prefix+m)
		}
		if err != nil {
			return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
		}
		_, names, err := s.backupNames(ctx, dir)
		var deps []string
		if err == nil {
			deps, err = dependents(ctx, e, dir, names, name)
		}
		if err == nil && len(deps) == 0 {
			break
		}
		if perr := e.be.Put(ctx, prefix+m, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{CRC32C: crc32c(doc)}); perr != nil {
			err = errors.Join(err, perr)
		}
		if err != nil {
			return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
		}
		if m == retiredMarker {
			return nil
		}
		return retire(ctx, e, dir, name, deps)
	}
	if err := removeBackup(ctx, e, dir, name); err != nil {
		return err
	}
	if base == "" {
		return nil
	}
	// Its base goes too if it was only kept for dependents, and none is left.
	state, err := backupState(ctx, e.be, dir, base)
	if err != nil || state != "retired" {
		return err
	}
	e.logger.Infof("split storage: %s/%s was kept as the base of %s/%s, which is removed: removing it", dir, base, dir, name)
	return s.removeProven(ctx, e, dir, base)
}

// retire keeps a backup that others depend on: its completion marker moves
// into the retired marker, so that no listing shows it, and its objects stay.
func retire(ctx context.Context, e *env, dir, name string, deps []string) error {
	prefix := backupPrefix(dir, name)
	complete, err := readSmall(ctx, e.be, prefix+completeMarker)
	switch {
	case errors.Is(err, ErrNotExist):
		if state, serr := backupState(ctx, e.be, dir, name); serr == nil && state == "retired" {
			e.logger.Infof("split storage: %s/%s is already removed from the list and kept as the base of %s", dir, name, strings.Join(deps, ", "))
			return nil
		}
		return fmt.Errorf("split storage: backup %s/%s is not complete but %s depend on it; not removing it", dir, name, strings.Join(deps, ", "))
	case err != nil:
		return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
	}
	doc, _ := json.Marshal(retiredDoc{At: time.Now().UTC(), Dependents: deps, Complete: complete})
	if err := e.be.Put(ctx, prefix+retiredMarker, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{CRC32C: crc32c(doc)}); err != nil {
		return fmt.Errorf("split storage: retiring backup %s/%s: %w", dir, name, err)
	}
	if err := e.be.Delete(ctx, prefix+completeMarker); err != nil {
		return fmt.Errorf("split storage: retiring backup %s/%s: %w", dir, name, err)
	}
	e.logger.Infof("split storage: %s/%s removed from the list of backups but kept as the base of %s; it goes when they do", dir, name, strings.Join(deps, ", "))
	return nil
}

// readRetired reads a retired backup's marker.
func readRetired(ctx context.Context, be backend.Backend, prefix string) (retiredDoc, error) {
	return readMarker[retiredDoc](ctx, be, prefix+retiredMarker)
}

// StoredSize returns the size of a file of the backup from its index,
// without reading its parts: a cheap check that the file is all there.
func (h *Handle) StoredSize(ctx context.Context, filename string) (int64, error) {
	idx, err := h.Index(ctx, filename)
	if err != nil {
		return 0, err
	}
	return idx.Size, nil
}
