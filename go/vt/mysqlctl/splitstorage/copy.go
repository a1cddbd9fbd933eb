package splitstorage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
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
	// Lock locks each object at the destination in the request that
	// writes it (a promotion); zero: none.
	Lock backend.Lock
}

// CopyReport says what CopyBackup did.
type CopyReport struct {
	Objects     int   `json:"objects"`
	Bytes       int64 `json:"bytes"`
	Copied      int   `json:"copied"`
	CopiedBytes int64 `json:"copied_bytes"`
	// ServerSide of the copied objects were copied by the storage service
	// (their bytes never passed through this process).
	ServerSide int `json:"server_side"`
	// Requests are what the copy sent to both stores (backend.Requests).
	Requests backend.Requests `json:"requests"`
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
func (s *Storage) CopyBackup(ctx context.Context, to backupstorage.BackupStorage, dir, name string, opts CopyOptions) (rep CopyReport, err error) {
	ctx, meter := backend.Metered(ctx)
	defer func() { rep.Requests = meter.Requests() }()
	dst, err := peerOf(to, "a copy's destination")
	if err != nil {
		return CopyReport{}, err
	}
	c, err := s.startCopy(ctx, dst, dir, name, opts)
	if err != nil {
		return CopyReport{}, err
	}
	// The destination is provably this storage's from its first object
	// (the root identity, then the start marker), and held while the copy
	// writes it: a cleanup there keeps off it, whatever age its objects
	// carry (a move links the source's).
	if err := notAnothersDirectory(ctx, c.de.be, dir, name); err != nil {
		return c.rep, fmt.Errorf("split storage: copying backup %s: %w", c.where, err)
	}
	if err := claimRoot(ctx, c.de.be); err != nil {
		return c.rep, fmt.Errorf("split storage: copying backup %s: %w", c.where, err)
	}
	lease, err := hold(ctx, c.de.be, dir, name, "copy from "+c.se.be.String(), copyLeaseTTL)
	if err != nil {
		return c.rep, fmt.Errorf("split storage: copying backup %s: %w", c.where, err)
	}
	defer lease.Release(ctx)
	if err := c.copyAll(ctx, c.started); err != nil {
		return c.rep, err
	}
	if err := c.copyAll(ctx, c.data); err != nil {
		return c.rep, err
	}
	if err := c.verify(ctx); err != nil {
		return c.rep, err
	}
	prefix := backupPrefix(dir, name)
	if err := c.de.be.Put(ctx, prefix+completeMarker, bytes.NewReader(c.complete), int64(len(c.complete)),
		backend.PutOptions{CRC32C: crc32c(c.complete)}); err != nil {
		return c.rep, fmt.Errorf("split storage: copying backup %s: writing its completion marker: %w", c.where, err)
	}
	c.opts.Lock = backend.Lock{} // records are replaced by later ones: never locked (lockCovers)
	return c.rep, c.copyAll(ctx, c.sidecars)
}

// backupCopy is one CopyBackup.
type backupCopy struct {
	s, dst         *Storage
	se, de         *env
	dir, name      string
	where          string
	opts           CopyOptions
	conc           int
	complete       []byte // the source's completion marker
	started        []backend.ObjectInfo
	data, sidecars []backend.ObjectInfo

	mu  sync.Mutex
	rep CopyReport
}

// startCopy checks that the backup is complete at the source, that its
// base (if incremental) is at the destination and that the destination does
// not hold it complete already, and lists what is to be copied.
func (s *Storage) startCopy(ctx context.Context, dst *Storage, dir, name string, opts CopyOptions) (*backupCopy, error) {
	c := &backupCopy{s: s, dst: dst, dir: dir, name: name, where: dir + "/" + name, opts: opts}
	var err error
	if c.se, err = s.backupEnv(ctx, dir, name); err != nil {
		return nil, err
	}
	if c.de, err = dst.backupEnv(ctx, dir, name); err != nil {
		return nil, err
	}
	c.conc = cmp.Or(max(opts.Concurrency, 0), c.de.cfg.UploadConcurrency)
	prefix := backupPrefix(dir, name)
	c.complete, err = readSmall(ctx, c.se.be, prefix+completeMarker)
	if errors.Is(err, ErrNotExist) {
		// A retired base copies as a complete backup.
		var r retiredDoc
		if r, err = readRetired(ctx, c.se.be, prefix); err == nil {
			c.complete = r.Complete
		}
	}
	if err != nil {
		return nil, fmt.Errorf("split storage: copying backup %s: it is not complete at the source: %w", c.where, err)
	}
	source := &Handle{s: s, e: c.se, dir: dir, name: name, readOnly: true}
	if err := source.CheckPlace(ctx); err != nil {
		return nil, err // another backup's, copied there: nothing of it is damaged
	}
	if err := c.checkDestination(ctx); err != nil {
		return nil, fmt.Errorf("split storage: copying backup %s: %w", c.where, err)
	}
	objs, err := c.se.be.List(ctx, prefix, false)
	if err != nil {
		return nil, fmt.Errorf("split storage: copying backup %s: %w", c.where, err)
	}
	for _, o := range objs {
		switch {
		case o.Dir || o.Key == prefix+completeMarker || o.Key == prefix+quarantineMarker || o.Key == prefix+retiredMarker || isLeaseKey(prefix, o.Key):
		case isLockRecordKey(prefix, o.Key), o.Key == prefix+promotingMarker, o.Key == prefix+promotedMarker:
			// The source's own: the destination locks by its own settings.
		case isSidecarKey(prefix, o.Key):
			c.sidecars = append(c.sidecars, o)
		case o.Key == prefix+startedMarker:
			c.started = append(c.started, o)
		case ownKey(prefix, o.Key):
			c.data = append(c.data, o)
		default:
			// Put there by someone else: not the backup's to copy.
		}
	}
	return c, nil
}

// checkDestination: an incremental backup is of use only where its base
// is, and a backup complete at the destination is not copied again.
func (c *backupCopy) checkDestination(ctx context.Context) error {
	base, err := baseOf(ctx, c.se.be, c.dir, c.name)
	if err != nil {
		return err
	}
	if base != "" {
		state, err := backupState(ctx, c.de.be, c.dir, base)
		if err != nil {
			return err
		}
		if state == "" {
			return fmt.Errorf("it is incremental and its base %s/%s is not at the destination %s: copy the base first: %w", c.dir, base, c.de.be, ErrNotExist)
		}
	}
	if err := c.sealsFit(ctx); err != nil {
		return err
	}
	if _, err := c.de.be.Stat(ctx, backupPrefix(c.dir, c.name)+completeMarker); err == nil {
		// Nothing to do, and nothing done: a request the destination
		// refuses (the CLI's usage error), never damage.
		return flagvalue.Contradiction(fmt.Errorf("the destination %s already holds it complete, so nothing was copied (vtfifo verify with the "+
			"destination's flags checks it there): %w", c.de.be, ErrExists))
	} else if !errors.Is(err, ErrNotExist) {
		return err
	}
	return nil
}

// sealsFit: the destination checks the backup's seal as every reader
// there will. One it would refuse whatever the copy does (no seal, where it
// has a signing key and does not accept unsealed backups; a seal of a key
// its key file lacks) is refused before anything is copied: a request the
// destination's flags contradict, not damage.
func (c *backupCopy) sealsFit(ctx context.Context) error {
	if c.de.seals == nil {
		return nil
	}
	doc, err := readSmall(ctx, c.se.be, backupPrefix(c.dir, c.name)+sealMarker)
	switch {
	case errors.Is(err, ErrNotExist) && c.de.cfg.AcceptUnsealed:
		return nil
	case errors.Is(err, ErrNotExist):
		return flagvalue.Contradiction(fmt.Errorf("it carries no seal, and the destination %s has a signing key (--%s) and does not accept "+
			"unsealed backups: every reader there would refuse it, so nothing was copied; give the destination (and its readers) --%s, or copy "+
			"it to a storage without a signing key", c.de.be, flagSigningKeyFile, flagAcceptUnsealed))
	case err != nil:
		return err
	}
	var d sealDoc
	if json.Unmarshal(doc, &d) != nil || slices.Contains(c.de.seals.IDs(), d.Key) {
		return nil // a seal that does not parse: the verification names it
	}
	return flagvalue.Contradiction(fmt.Errorf("it is sealed with key %s, which the destination's signing key file %s does not hold: no reader "+
		"there could check it, so nothing was copied; add that key to the destination's key file, below its current one", d.Key,
		c.de.seals.Source()))
}

// copyAll copies objs, c.conc at a time, counting them in c.rep.
func (c *backupCopy) copyAll(ctx context.Context, objs []backend.ObjectInfo) error {
	return forEach(ctx, c.conc, objs, func(ctx context.Context, o backend.ObjectInfo) error {
		copied, server, err := copyObject(ctx, c.se.be, c.de.be, o, c.de.cfg.SpoolDir, backend.PutOptions{Moving: c.opts.Move, Lock: c.opts.Lock})
		if err != nil {
			return fmt.Errorf("split storage: copying backup %s: %s: %w", c.where, o.Key, err)
		}
		c.mu.Lock()
		c.rep.Objects++
		c.rep.Bytes += o.Size
		if copied {
			c.rep.Copied++
			c.rep.CopiedBytes += o.Size
		}
		if server {
			c.rep.ServerSide++
		}
		c.mu.Unlock()
		if c.opts.OnObject != nil {
			c.opts.OnObject(o.Key, o.Size, copied)
		}
		return nil
	})
}

// verify checks the destination against the source's completion marker
// (every index; every part's size and CRC32C, read back). When it fails,
// the source is checked the same way before the destination is blamed: a
// damaged source would fail every copy, so what was copied is removed and
// the error names the source; otherwise the destination's wrong objects
// are removed, so that the next run copies them again.
func (c *backupCopy) verify(ctx context.Context) error {
	prefix := backupPrefix(c.dir, c.name)
	dh := &Handle{s: c.dst, e: c.de, dir: c.dir, name: c.name, readOnly: true}
	_, err := dh.verifyAgainst(ctx, c.complete, nil, VerifyPartsOptions{Concurrency: c.conc})
	if err == nil {
		return nil
	}
	damage, _ := SplitProblems(err)
	if len(damage) == 0 {
		// Nothing proven wrong there, only not read back: what was copied
		// stays for the next run, which skips what is whole.
		return fmt.Errorf("split storage: copy of backup %s could not be verified at the destination %s: objects copied there could not be "+
			"read back (nothing says they are damaged; nothing was removed): run the copy again once it answers: %w", c.where, c.de.be, err)
	}
	sh := &Handle{s: c.s, e: c.se, dir: c.dir, name: c.name, readOnly: true}
	if _, srcErr := sh.verifyAgainst(ctx, c.complete, nil, VerifyPartsOptions{Concurrency: c.conc}); srcErr != nil {
		if srcDamage, _ := SplitProblems(srcErr); len(srcDamage) == 0 {
			return fmt.Errorf("split storage: copy of backup %s failed its verification at the destination %s, and the source %s could not be "+
				"read to tell which is wrong (nothing was removed; run the copy again once both answer): %w", c.where, c.de.be, c.se.be,
				errors.Join(err, srcErr))
		}
		left := "the objects copied there were removed"
		if rmErr := removeBackup(ctx, c.de, c.dir, c.name); rmErr != nil {
			left = fmt.Sprintf("removing what was copied there failed too (%v): remove it there with vtfifo verify --remove-incomplete --incomplete-min-age=0", rmErr)
		}
		return fmt.Errorf("split storage: backup %s is damaged at the source %s, so it cannot be copied (nothing is listed at the destination %s; %s); "+
			"repair it at the source or copy another backup: %w", c.where, c.se.be, c.de.be, left, srcErr)
	}
	for _, e := range damage {
		var p Problem
		if errors.As(e, &p) && p.Key != "" && p.Key != prefix+completeMarker {
			c.de.be.Delete(ctx, p.Key)
		}
	}
	return fmt.Errorf("split storage: copy of backup %s failed its verification at the destination %s, while the source %s verifies (the damaged "+
		"objects were removed at the destination; run the copy again): %w", c.where, c.de.be, c.se.be, err)
}

// copyObject copies o from src to dst unless dst has it already (same size;
// for objects small enough to compare, the same bytes), and reports whether
// it copied: server-side where dst can (same S3 endpoint; same file system
// for a move), otherwise through a temporary file in spoolDir, so a retried
// upload can read the bytes again.
func copyObject(ctx context.Context, src, dst backend.Backend, o backend.ObjectInfo, spoolDir string, put backend.PutOptions) (copied, serverSide bool, err error) {
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
	if c, ok := dst.(backend.ServerCopier); ok {
		if copied, err := c.CopyFrom(ctx, src, o.Key, o.Size, put); copied || err != nil {
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
	put.CRC32C = h.Sum32()
	return true, false, dst.Put(ctx, o.Key, io.NewSectionReader(f, 0, n), n, put)
}

// forEach runs fn on every item, conc at a time, and returns the first
// error (the others are cancelled); it returns once every fn has.
func forEach[T any](ctx context.Context, conc int, items []T, fn func(context.Context, T) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(conc, 1))
	for _, it := range items {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, it) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// ProblemsOf undoes errors.Join: the problems VerifyParts (or a copy's
// verification) found, one error each.
func ProblemsOf(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
