package splitstorage

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// RepairReport says what RepairBackup found and replaced.
type RepairReport struct {
	// Damaged are the problems the verification found before the repair.
	Damaged []Problem
	// Repaired are the parts replaced by the copy's.
	Repaired []Problem
}

// RepairBackup replaces the damaged or missing parts of the backup dir/name
// (complete, quarantined or a retired base) with the same parts of its copy
// in from, another split storage that holds it (where vtfifo copy put it).
// Each part of the copy is read into a nameless temporary file and checked
// against this backup's own index (size and CRC32C) before it replaces the
// damaged one; then the whole backup is verified again, every part read
// back. Only parts are repaired: a damaged index or completion marker, or
// a part the copy holds damaged too is left, and the error names it (an
// object the backup does not list is none of its damage: VerifyParts). A
// backup that verifies needs no repair: nothing is read from the copy. An
// object of the backup that could not be read (go/internal/unreadable) is
// no damage: nothing is changed, and the error says so (Damaged holds
// only what was proven damaged).
func (s *Storage) RepairBackup(ctx context.Context, copyIn backupstorage.BackupStorage, dir, name string) (RepairReport, error) {
	var rep RepairReport
	from, err := peerOf(copyIn, "a repair's copy")
	if err != nil {
		return rep, err
	}
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return rep, err
	}
	where := dir + "/" + name
	doc, err := savedComplete(ctx, e.be, backupPrefix(dir, name), true)
	if err != nil {
		return rep, fmt.Errorf("split storage: repairing backup %s: it is not complete, quarantined or a retired base: %w", where, err)
	}
	h := &Handle{s: s, e: e, dir: dir, name: name, readOnly: true}
	if err := h.CheckPlace(ctx); err != nil {
		return rep, err // another backup's, copied here: nothing of it is damaged
	}
	opts := VerifyPartsOptions{Concurrency: e.cfg.UploadConcurrency, MaxProblems: 1 << 20}
	_, verr := h.verifyAgainst(ctx, doc, nil, opts)
	if verr == nil {
		return rep, nil
	}
	damage, unread := SplitProblems(verr)
	var parts, left []Problem
	for _, err := range damage {
		var p Problem
		switch {
		case !errors.As(err, &p):
			return rep, fmt.Errorf("split storage: repairing backup %s: %w", where, err)
		case p.Part > 0 && p.File != "":
			parts = append(parts, p)
		default:
			left = append(left, p)
		}
		rep.Damaged = append(rep.Damaged, p)
	}
	if len(unread) > 0 { // no damage: nothing to replace, and what else is damaged is not known
		return rep, fmt.Errorf("split storage: repairing backup %s: %d of its objects could not be read, so what needs repair is not known; "+
			"nothing was changed: %w", where, len(unread), errors.Join(unread...))
	}
	if len(left) > 0 {
		return rep, fmt.Errorf("split storage: backup %s has damage that a copy's parts cannot repair (only parts are repaired); nothing was changed: %w",
			where, errors.Join(asErrors(left)...))
	}
	fe, err := from.backupEnv(ctx, dir, name)
	if err != nil {
		return rep, err
	}
	if _, err := savedComplete(ctx, fe.be, backupPrefix(dir, name), true); err != nil {
		return rep, fmt.Errorf("split storage: repairing backup %s: %s holds no complete copy of it: %w", where, fe.be, err)
	}
	if err := h.replaceParts(ctx, fe.be, parts, &rep); err != nil {
		return rep, fmt.Errorf("split storage: repairing backup %s from %s: %w", where, fe.be, err)
	}
	if _, err := h.verifyAgainst(ctx, doc, nil, opts); err != nil {
		return rep, fmt.Errorf("split storage: backup %s still fails its verification after the repair: %w", where, err)
	}
	return rep, nil
}

// replaceParts puts the copy's version of every damaged part in place, each
// once it matches this backup's index; it goes on past a part it cannot
// repair and returns every failure.
func (h *Handle) replaceParts(ctx context.Context, from backend.Backend, damaged []Problem, rep *RepairReport) error {
	idx := map[string]Index{}
	for _, p := range damaged {
		if _, ok := idx[p.File]; !ok {
			i, err := h.Index(ctx, p.File)
			if err != nil {
				return err
			}
			idx[p.File] = i
		}
	}
	var mu sync.Mutex
	var failed []error
	_ = forEach(ctx, h.e.cfg.UploadConcurrency, damaged, func(ctx context.Context, p Problem) error {
		err := h.replacePart(ctx, from, p, idx[p.File].Parts[p.Part-1])
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed = append(failed, fmt.Errorf("file %s, part %d (%s): %w", p.File, p.Part, p.Key, err))
		} else {
			rep.Repaired = append(rep.Repaired, p)
		}
		return nil
	})
	return errors.Join(append(failed, ctx.Err())...)
}

// replacePart reads part p from the copy into a nameless temporary file,
// checks it against want, and writes it over this backup's part.
func (h *Handle) replacePart(ctx context.Context, from backend.Backend, p Problem, want PartEntry) error {
	r, err := from.Get(ctx, p.Key, 0, -1)
	if err != nil {
		return copysFailure("the copy's part", err)
	}
	defer r.Close()
	f, err := os.CreateTemp(h.e.cfg.SpoolDir, "vtfifo-repair-")
	if err != nil {
		return err
	}
	defer f.Close()
	_ = os.Remove(f.Name()) // nameless: nothing stays behind a killed repair
	sum := crc32.New(castagnoli)
	n, err := io.Copy(io.MultiWriter(f, sum), io.LimitReader(r, want.Size+1))
	switch {
	case err != nil:
		return copysFailure("reading the copy's part", err)
	case n != want.Size:
		return fmt.Errorf("the copy's part is damaged too: expected %d bytes, found %d", want.Size, n)
	case sum.Sum32() != want.CRC32C:
		return fmt.Errorf("the copy's part is damaged too: expected crc32c %08x, found %08x", want.CRC32C, sum.Sum32())
	}
	return h.e.be.Put(ctx, p.Key, io.NewSectionReader(f, 0, n), n, backend.PutOptions{CRC32C: want.CRC32C})
}

// copysFailure is a failure to read the copy: its text, not its chain (a
// part the copy lacks is not the backup's ErrNotExist), still marked as
// could-not-be-read where it was.
func copysFailure(what string, err error) error {
	out := fmt.Errorf("%s: %v", what, err)
	if unreadable.Is(err) {
		return unreadable.Error(out)
	}
	return out
}

func asErrors(ps []Problem) []error {
	out := make([]error, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}
