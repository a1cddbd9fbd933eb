package splitstorage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// A quarantined backup is a complete one that proved unusable after it
// completed (it failed its test restore): its completion marker is moved
// into the quarantine marker, so that ListBackups, and with it every
// restore, no longer sees it, while its objects stay for inspection.
// ListIncomplete shows it with the reason; Release puts it back; RemoveBackup
// removes it.
const quarantineMarker = ".quarantined"

type quarantineDoc struct {
	Reason   string          `json:"reason"`
	At       time.Time       `json:"at"`
	Complete json.RawMessage `json:"complete"`
	// Base names the backup whose quarantine took this one out with it
	// (its chain's), "" for one quarantined for itself.
	Base string `json:"base,omitempty"`
}

// takenWith says whether the quarantine was base's, not this backup's
// own: Base, or for a marker written before Base was, the reason the
// cascade wrote.
func (q quarantineDoc) takenWith(base string) bool {
	return q.Base == base || (q.Base == "" && strings.HasPrefix(q.Reason, cascadeReason(base, "")))
}

// cascadeReason is the reason of a dependent quarantined with its base.
func cascadeReason(base, reason string) string {
	return fmt.Sprintf("its base %s is quarantined: %s", base, reason)
}

// Quarantine takes this complete backup out of the list restores choose
// from, keeping reason (no secret in it: it is stored), and with it every
// complete backup that depends on it as its base (chain.go). Release puts
// back the one it names, and those its quarantine took out with it.
func (h *Handle) Quarantine(ctx context.Context, reason string) error {
	return h.quarantine(ctx, reason, "")
}

// quarantine is Quarantine, base naming the backup whose quarantine takes
// this one out ("" for its own).
func (h *Handle) quarantine(ctx context.Context, reason, base string) error {
	prefix := backupPrefix(h.dir, h.name)
	complete, err := readSmall(ctx, h.e.be, prefix+completeMarker)
	if err != nil {
		return fmt.Errorf("split storage: quarantining backup %s/%s: it is not complete: %w", h.dir, h.name, err)
	}
	doc, err := json.Marshal(quarantineDoc{Reason: reason, At: time.Now().UTC(), Complete: complete, Base: base})
	if err != nil {
		return err
	}
	if err := h.e.be.Put(ctx, prefix+quarantineMarker, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{CRC32C: crc32c(doc)}); err != nil {
		return fmt.Errorf("split storage: quarantining backup %s/%s: %w", h.dir, h.name, err)
	}
	if err := h.e.be.Delete(ctx, prefix+completeMarker); err != nil {
		return fmt.Errorf("split storage: quarantining backup %s/%s: %w", h.dir, h.name, err)
	}
	// Its incremental dependents cannot restore without it: out of the list too.
	deps, err := h.s.Dependents(ctx, h.dir, h.name)
	if err != nil {
		return fmt.Errorf("split storage: quarantined backup %s/%s, but not its dependents: %w", h.dir, h.name, err)
	}
	for _, d := range deps {
		if state, err := backupState(ctx, h.e.be, h.dir, d); err != nil || state != "complete" {
			continue
		}
		dh := &Handle{s: h.s, e: h.e, dir: h.dir, name: d, readOnly: true}
		if err := dh.quarantine(ctx, cascadeReason(h.name, reason), h.name); err != nil {
			return err
		}
	}
	return nil
}

// Release puts a quarantined backup back among the complete ones, and
// then the dependents its quarantine took out with it (never one
// quarantined for a test of its own), each verified as it is; it returns
// their names.
//
// A backup not quarantined (ErrNotExist) still has its dependents released
// where its quarantine took them: a release cut short between the two
// steps (a kill), or one of a version that released the base alone, is
// finished by releasing the base again; the error stays, with their names.
func (s *Storage) Release(ctx context.Context, dir, name string) ([]string, error) {
	if err := s.releaseOne(ctx, dir, name); err != nil {
		if !errors.Is(err, ErrNotExist) {
			return nil, err
		}
		released, depErr := s.releaseTakenWith(ctx, dir, name)
		return released, cmp.Or(depErr, err)
	}
	return s.releaseTakenWith(ctx, dir, name)
}

// releaseTakenWith releases the dependents of base that base's quarantine
// took out with it, and theirs.
func (s *Storage) releaseTakenWith(ctx context.Context, dir, base string) ([]string, error) {
	deps, err := s.Dependents(ctx, dir, base)
	if err != nil {
		return nil, fmt.Errorf("split storage: released backup %s/%s, but the backups its quarantine took out with it could not be listed: %w",
			dir, base, err)
	}
	var released []string
	for _, d := range deps {
		e, err := s.backupEnv(ctx, dir, d)
		if err != nil {
			return released, err
		}
		q, err := readQuarantine(ctx, e.be, backupPrefix(dir, d))
		if errors.Is(err, ErrNotExist) || (err == nil && !q.takenWith(base)) {
			continue // not quarantined, or for itself
		}
		if err == nil {
			var more []string
			if more, err = s.Release(ctx, dir, d); err == nil {
				released = append(append(released, d), more...)
				continue
			}
		}
		return released, fmt.Errorf("split storage: released backup %s/%s, but not %s, which its quarantine took out with it: %w", dir, base, d, err)
	}
	return released, nil
}

// releaseOne puts one quarantined backup back, once every part of it is
// verified.
func (s *Storage) releaseOne(ctx context.Context, dir, name string) error {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return err
	}
	prefix := backupPrefix(dir, name)
	q, err := readQuarantine(ctx, e.be, prefix)
	if err != nil {
		return fmt.Errorf("split storage: releasing backup %s/%s: %w", dir, name, err)
	}
	if _, err := ParseComplete(q.Complete, dir, name); err != nil {
		return fmt.Errorf("split storage: releasing backup %s/%s: its saved completion marker: %w", dir, name, err)
	}
	// A backup quarantined for damage must not come back with it: every
	// part is read back against its index first.
	h := &Handle{s: s, e: e, dir: dir, name: name, readOnly: true}
	if _, err := h.verifyAgainst(ctx, q.Complete, nil, VerifyPartsOptions{}); err != nil {
		if damage, unread := SplitProblems(err); len(damage) == 0 {
			// Nothing proven damaged: what could not be read is no verdict.
			return fmt.Errorf("split storage: backup %s/%s stays quarantined (%s): %d of its objects could not be read, so it is not known "+
				"whether it is whole: %w", dir, name, q.Reason, len(unread), err)
		}
		return fmt.Errorf("split storage: backup %s/%s stays quarantined (%s): it fails verification: %w: %w", dir, name, q.Reason, ErrDamaged, err)
	}
	if err := e.be.Put(ctx, prefix+completeMarker, bytes.NewReader(q.Complete), int64(len(q.Complete)),
		backend.PutOptions{CRC32C: crc32c(q.Complete)}); err != nil {
		return fmt.Errorf("split storage: releasing backup %s/%s: %w", dir, name, err)
	}
	if err := e.be.Delete(ctx, prefix+quarantineMarker); err != nil {
		return fmt.Errorf("split storage: releasing backup %s/%s: %w", dir, name, err)
	}
	return nil
}

func readQuarantine(ctx context.Context, be backend.Backend, prefix string) (quarantineDoc, error) {
	return readMarker[quarantineDoc](ctx, be, prefix+quarantineMarker)
}

// readMarker reads a small JSON marker object into a T.
func readMarker[T any](ctx context.Context, be backend.Backend, key string) (T, error) {
	var v T
	doc, err := readSmall(ctx, be, key)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(doc, &v); err != nil {
		return v, fmt.Errorf("%s: %w", key, err)
	}
	return v, nil
}
