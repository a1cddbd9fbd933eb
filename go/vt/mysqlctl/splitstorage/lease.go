package splitstorage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/procident"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// A read lease is a small object, .reading-<holder>, that a process reading
// a backup for long (a restore, a copy, an export, a test restore) puts
// beside it: RemoveUnread refuses the backup while a lease is current, so
// that retention on another host (vtfifo rm and prune, vtbackup's pruning
// through the plugin) does not remove it under the reader; it keeps the
// backup for a later run, so a scheduled backup never fails because someone
// reads an old one. Vitess's own RemoveBackup (vtctld) does not look at
// leases. A copy
// holds one on the backup it writes at its destination, so that a cleanup
// there keeps off it. A lease ends when its holder releases it, at its
// expiry, or, seen from the holder's own host and PID namespace, when the
// holder's process is gone (it names host, boot, PID namespace and process:
// a killed reader does not block a removal for a day; procident.Outlived). BreakLeases ends another host's leases, on
// an operator's word.

// copyLeaseTTL bounds a copy's lease on its destination when the copy
// died on another host without releasing it.
const copyLeaseTTL = 24 * time.Hour

// ErrInUse is returned by RemoveUnread for a backup under a current read
// lease.
var ErrInUse = errors.New("the backup is being read")

// Lease is a read lease a reader holds; Release removes it.
type Lease struct {
	be  backend.Backend
	key string
}

type leaseDoc struct {
	Holder string    `json:"holder"`
	What   string    `json:"what"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	// Who holds it (empty, or without its PID namespace, in leases written
	// before): the host, its boot and the process.
	procident.Owner
}

// Hold puts a read lease on the complete backup dir/name for ttl, saying
// what reads it (no secret: it is stored).
func (s *Storage) Hold(ctx context.Context, dir, name, what string, ttl time.Duration) (*Lease, error) {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	return hold(ctx, e.be, dir, name, what, ttl)
}

func hold(ctx context.Context, be backend.Backend, dir, name, what string, ttl time.Duration) (*Lease, error) {
	self := procident.Self()
	var r [4]byte
	_, _ = rand.Read(r[:])
	holder := fmt.Sprintf("%s-%d-%s", self.Host, self.PID, hex.EncodeToString(r[:]))
	now := time.Now().UTC()
	doc, err := json.Marshal(leaseDoc{Holder: holder, What: what, Since: now, Until: now.Add(ttl), Owner: self})
	if err != nil {
		return nil, err
	}
	key := backupPrefix(dir, name) + leasePrefix + holder
	if err := be.Put(ctx, key, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{CRC32C: crc32c(doc)}); err != nil {
		return nil, fmt.Errorf("split storage: holding backup %s/%s for %s: %w", dir, name, what, err)
	}
	return &Lease{be: be, key: key}, nil
}

// Release ends the lease (a nil lease does nothing).
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	return l.be.Delete(context.WithoutCancel(ctx), l.key)
}

// currentLeases says who holds a current lease on dir/name, one line
// each; expired leases, and those whose holder is gone from this host
// (gone, one line each), are not counted.
func currentLeases(ctx context.Context, be backend.Backend, dir, name string) (held, gone []string, err error) {
	prefix := backupPrefix(dir, name)
	wctx, clock := backend.WatchClock(ctx)
	objs, err := be.List(wctx, prefix+leasePrefix, false)
	if err != nil {
		return nil, nil, err
	}
	if len(objs) == 0 {
		return nil, nil, nil
	}
	now := judgingNow(ctx, be, clock)
	self := procident.Self()
	for _, o := range objs {
		doc, err := readSmall(ctx, be, o.Key)
		if err != nil {
			continue // released meanwhile
		}
		var l leaseDoc
		if json.Unmarshal(doc, &l) != nil {
			continue
		}
		if l.onStoreClock(o.Modified); now.After(l.Until) {
			continue
		}
		if self.Outlived(l.Owner) {
			gone = append(gone, fmt.Sprintf("the lease on %s/%s of %s by %s no longer counts: its process (pid %d on this host) is gone", dir, name,
				l.What, l.Holder, l.PID))
			continue
		}
		held = append(held, fmt.Sprintf("%s by %s since %s (until %s)", l.What, l.Holder, l.Since.Format(time.RFC3339), l.Until.Format(time.RFC3339)))
	}
	return held, gone, nil
}

// onStoreClock moves l's term (Since to Until, as its holder's clock
// wrote it) to start at its write time at the store, written, so that
// currentLeases judges it by the store's clock alone. Neither the holder's
// clock nor this host's moves it: a holder whose clock ran three days
// behind wrote a lease every other host took for expired, and a remover
// whose clock ran ahead took every lease for expired and removed a backup
// under a restore. A store that gives no write time leaves it as written.
func (l *leaseDoc) onStoreClock(written time.Time) {
	if !written.IsZero() {
		l.Since, l.Until = written, written.Add(l.Until.Sub(l.Since))
	}
}

// BreakLeases ends every lease on dir/name, whoever holds it, and says
// whose it ended: an operator's way out when a holder on another host is
// known to be gone (on its own host a gone holder's lease no longer
// counts).
func (s *Storage) BreakLeases(ctx context.Context, dir, name string) ([]string, error) {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	prefix := backupPrefix(dir, name)
	objs, err := e.be.List(ctx, prefix+leasePrefix, false)
	if err != nil {
		return nil, fmt.Errorf("split storage: breaking the leases on %s/%s: %w", dir, name, err)
	}
	var ended []string
	for _, o := range objs {
		if err := e.be.Delete(ctx, o.Key); err != nil {
			return ended, fmt.Errorf("split storage: breaking the leases on %s/%s: %w", dir, name, err)
		}
		ended = append(ended, strings.TrimPrefix(o.Key, prefix+leasePrefix))
	}
	return ended, nil
}

// Remover is how retention and operators remove a backup of bs: the split
// storage's RemoveUnread (never under a reader's lease), another storage's
// RemoveBackup.
func Remover(bs backupstorage.BackupStorage) func(ctx context.Context, dir, name string) error {
	if s, ok := bs.(*Storage); ok {
		return s.RemoveUnread
	}
	return bs.RemoveBackup
}

// RemoveUnread is RemoveBackup for retention and operators: it refuses a
// backup under a current read lease (ErrInUse, naming who reads it).
func (s *Storage) RemoveUnread(ctx context.Context, dir, name string) error {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return err
	}
	if err := checkNotInUse(ctx, e, dir, name); err != nil {
		return err
	}
	return s.removeProven(ctx, e, dir, name)
}

// CheckUnread returns what RemoveUnread would refuse dir/name for (an error
// wrapping ErrInUse, naming who reads it), without removing anything: a dry
// run's decision is the real one's.
func (s *Storage) CheckUnread(ctx context.Context, dir, name string) error {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return err
	}
	if err := refuseLocked(ctx, e, dir, name, "removing"); err != nil {
		return err
	}
	if err := refusePromoting(ctx, e, dir, name); err != nil {
		return err
	}
	return checkNotInUse(ctx, e, dir, name)
}

// checkNotInUse refuses the removal of a backup under a current lease.
func checkNotInUse(ctx context.Context, e *env, dir, name string) error {
	held, gone, err := currentLeases(ctx, e.be, dir, name)
	for _, g := range gone {
		e.logger.Warningf("split storage: %s", g)
	}
	if err != nil {
		return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
	}
	if len(held) > 0 {
		return fmt.Errorf("split storage: backup %s/%s is not removed: %w: %s", dir, name, ErrInUse, strings.Join(held, "; "))
	}
	return nil
}

func isLeaseKey(prefix, key string) bool { return strings.HasPrefix(key, prefix+leasePrefix) }
