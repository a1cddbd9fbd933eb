package splitstorage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Promotion, the flow careful fleets run by hand (back up to a working
// storage, test, then move the proven backup to a protected one that keeps
// it locked), in one step: a complete backup of this storage is copied to
// the protected storage (with the backups it needs, its records with it),
// verified there, then locked there. The source holds a .promoting marker
// from the first step to the last, which every removal refuses (retention
// included: the working storage never drops a backup whose promotion has
// not finished); the last step replaces it with .promoted. A promotion cut
// short anywhere leaves the destination's lock unset and the source
// marked: running it again resumes (what is already there is not copied
// again) and finishes it. Whether the backup deserves promotion (its test
// restore passed) is the caller's to judge.
const (
	promotingMarker = ".promoting"
	promotedMarker  = ".promoted"
)

type promotionDoc struct {
	To      string       `json:"to"`
	Started time.Time    `json:"started"`
	Done    time.Time    `json:"done,omitzero"`
	Lock    backend.Lock `json:"lock"`
	// Requests are what the run that finished it sent to both stores.
	Requests backend.Requests `json:"requests"`
}

// PromoteReport is what a promotion did.
type PromoteReport struct {
	Backup      string `json:"backup"`
	Destination string `json:"destination"`
	// Copied are the backups copied, the bases the destination lacked first;
	// a backup the destination already held complete is not copied again.
	Copied []string         `json:"copied,omitempty"`
	Copy   CopyReport       `json:"copy"`
	Lock   LockResult       `json:"lock"`
	Done   time.Time        `json:"done"`
	Until  time.Time        `json:"until"`
	Mode   backend.LockMode `json:"mode"`
	// Requests are what this run sent to both stores.
	Requests backend.Requests `json:"requests"`
}

// Promote copies backup dir/name, and the bases of it the destination
// lacks, to the split storage to, verifies each there, and locks it there
// (with its chain) as l says. See promotingMarker.
func (s *Storage) Promote(ctx context.Context, to backupstorage.BackupStorage, dir, name string, l backend.Lock, opts CopyOptions) (rep PromoteReport, err error) {
	ctx, meter := backend.Metered(ctx)
	defer func() { rep.Requests = meter.Requests() }()
	dst, err := peerOf(to, "a promotion's destination")
	if err != nil {
		return PromoteReport{}, err
	}
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return PromoteReport{}, err
	}
	de, err := dst.env(ctx)
	if err != nil {
		return PromoteReport{}, err
	}
	rep = PromoteReport{Backup: dir + "/" + name, Destination: de.be.String()}
	fail := func(err error) (PromoteReport, error) {
		return rep, fmt.Errorf("split storage: promoting backup %s to %s: %w", rep.Backup, rep.Destination, err)
	}
	if err := l.Validate(); err != nil || !l.HoldsAt(datingNow(ctx, de.be)) {
		return fail(fmt.Errorf("a promotion locks the backup at the destination until a later date (by the destination's clock): %v", l))
	}
	if _, err := lockerOf(de); err != nil {
		return fail(err)
	}
	doc := promotionDoc{To: rep.Destination, Started: time.Now().UTC(), Lock: l}
	if err := putJSON(ctx, e.be, backupPrefix(dir, name)+promotingMarker, doc); err != nil {
		return fail(err)
	}
	chain, err := chainOf(ctx, e.be, dir, name)
	if err != nil {
		return fail(err)
	}
	opts.Lock = l // each object locked by the request that copies it
	for _, b := range chain {
		copied, err := s.copyOnce(ctx, dst, de, dir, b, opts, &rep.Copy)
		if err != nil {
			return fail(err)
		}
		if copied {
			rep.Copied = append(rep.Copied, b)
		}
	}
	if rep.Lock, err = dst.Lock(ctx, dir, name, l); err != nil {
		return fail(err)
	}
	doc.Done, doc.Lock, doc.Requests = time.Now().UTC(), rep.Lock.Lock, meter.Requests()
	if err := putJSON(ctx, e.be, backupPrefix(dir, name)+promotedMarker, doc); err != nil {
		return fail(err)
	}
	if err := e.be.Delete(ctx, backupPrefix(dir, name)+promotingMarker); err != nil {
		return fail(err)
	}
	rep.Done, rep.Until, rep.Mode = doc.Done, rep.Lock.Lock.Until, rep.Lock.Lock.Mode
	return rep, nil
}

// chainOf is a backup's chain, its full first, itself last.
func chainOf(ctx context.Context, be backend.Backend, dir, name string) ([]string, error) {
	chain := []string{name}
	for cur := name; ; {
		base, err := baseOf(ctx, be, dir, cur)
		if err != nil {
			return nil, err
		}
		if base == "" {
			return chain, nil
		}
		if len(chain) > 1000 {
			return nil, fmt.Errorf("backup %s/%s: a chain of more than 1000 backups, or a loop", dir, name)
		}
		chain = append([]string{base}, chain...)
		cur = base
	}
}

// copyOnce copies one backup of a chain unless the destination holds it
// complete already, and then verifies every part there: a resumed
// promotion proves what an earlier run copied before it locks it.
func (s *Storage) copyOnce(ctx context.Context, dst *Storage, de *env, dir, name string, opts CopyOptions, sum *CopyReport) (bool, error) {
	state, err := backupState(ctx, de.be, dir, name)
	if err != nil {
		return false, err
	}
	if state == "" {
		r, err := s.CopyBackup(ctx, dst, dir, name, opts)
		sum.Objects, sum.Bytes, sum.Copied, sum.CopiedBytes, sum.ServerSide = sum.Objects+r.Objects, sum.Bytes+r.Bytes,
			sum.Copied+r.Copied, sum.CopiedBytes+r.CopiedBytes, sum.ServerSide+r.ServerSide
		return err == nil, err
	}
	h := &Handle{s: dst, e: de, dir: dir, name: name, readOnly: true}
	if _, err := h.VerifyParts(ctx, VerifyPartsOptions{}); err != nil {
		return false, fmt.Errorf("%s/%s is at the destination but does not verify there: %w", dir, name, err)
	}
	return false, nil
}

func putJSON(ctx context.Context, be backend.Backend, key string, v any) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return be.Put(ctx, key, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{CRC32C: crc32c(doc)})
}

// refusePromoting fails, wrapping ErrInUse (a removal to try again later,
// and one retention passes over), while a promotion of dir/name has not
// finished.
func refusePromoting(ctx context.Context, e *env, dir, name string) error {
	d, err := readMarker[promotionDoc](ctx, e.be, backupPrefix(dir, name)+promotingMarker)
	switch {
	case errors.Is(err, ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("split storage: removing backup %s/%s: reading its promotion: %w", dir, name, err)
	}
	return fmt.Errorf("split storage: backup %s/%s is not removed: %w: its promotion to %s, started %s, has not finished (vtfifo promote "+
		"resumes it)", dir, name, ErrInUse, d.To, d.Started.Format(time.RFC3339))
}

// Promotion says where and until when a backup was promoted ("" when it
// was not, or is being promoted).
func (h *Handle) Promotion(ctx context.Context) (string, error) {
	prefix := backupPrefix(h.dir, h.name)
	if d, err := readMarker[promotionDoc](ctx, h.e.be, prefix+promotingMarker); err == nil {
		return fmt.Sprintf("being promoted to %s (started %s; not finished)", d.To, d.Started.Format(time.RFC3339)), nil
	} else if !errors.Is(err, ErrNotExist) {
		return "", err
	}
	d, err := readMarker[promotionDoc](ctx, h.e.be, prefix+promotedMarker)
	switch {
	case errors.Is(err, ErrNotExist):
		return "", nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("promoted to %s on %s, %s there (%s)", d.To, d.Done.Format(time.RFC3339), d.Lock, costText(d.Requests)), nil
}

// costText says what requests cost, for show.
func costText(r backend.Requests) string {
	if r.Total() == 0 {
		return "no request billed: local disk"
	}
	return fmt.Sprintf("%d write/list, %d read, %d delete requests; %d bytes up, %d down", r.Write, r.Read, r.Delete, r.BytesUp, r.BytesDown)
}

// Cost says what writing the backup cost at the store, from its
// completion marker ("" when it records none).
func (h *Handle) Cost(ctx context.Context) (string, error) {
	doc, err := savedComplete(ctx, h.e.be, backupPrefix(h.dir, h.name), true)
	if err != nil {
		return "", err
	}
	c, err := ParseComplete(doc, h.dir, h.name)
	if err != nil || c.Cost == nil {
		return "", err
	}
	return costText(*c.Cost), nil
}
