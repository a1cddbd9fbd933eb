package splitstorage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// A read lease is a small object, .reading-<holder>, that a process reading
// a backup for long (a restore, a copy, an export, a test restore) puts
// beside it: RemoveUnread refuses the backup while a lease is current, so
// that retention on another host (vtfifo rm and prune, the test-restore
// plugin's pruning) does not remove it under the reader. Vitess's own
// RemoveBackup (vtctld, stock vtbackup pruning) does not look at leases: a
// scheduled backup must not fail because someone reads an old one. A lease
// ends when its reader releases it, or at its expiry if the reader died.

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
}

// Hold puts a read lease on the complete backup dir/name for ttl, saying
// what reads it (no secret: it is stored).
func (s *Storage) Hold(ctx context.Context, dir, name, what string, ttl time.Duration) (*Lease, error) {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	var r [4]byte
	_, _ = rand.Read(r[:])
	holder := fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(r[:]))
	now := time.Now().UTC()
	doc, err := json.Marshal(leaseDoc{Holder: holder, What: what, Since: now, Until: now.Add(ttl)})
	if err != nil {
		return nil, err
	}
	key := backupPrefix(dir, name) + leasePrefix + holder
	if err := e.be.Put(ctx, key, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{CRC32C: crc32c(doc)}); err != nil {
		return nil, fmt.Errorf("split storage: holding backup %s/%s for reading: %w", dir, name, err)
	}
	return &Lease{be: e.be, key: key}, nil
}

// Release ends the lease (a nil lease does nothing).
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	return l.be.Delete(context.WithoutCancel(ctx), l.key)
}

// currentLeases says who holds a current read lease on dir/name, one line
// each; expired leases are not counted.
func currentLeases(ctx context.Context, be backend.Backend, dir, name string) ([]string, error) {
	prefix := backupPrefix(dir, name)
	objs, err := be.List(ctx, prefix+leasePrefix, false)
	if err != nil {
		return nil, err
	}
	var out []string
	now := time.Now()
	for _, o := range objs {
		doc, err := readSmall(ctx, be, o.Key)
		if err != nil {
			continue // released meanwhile
		}
		var l leaseDoc
		if json.Unmarshal(doc, &l) != nil || now.After(l.Until) {
			continue
		}
		out = append(out, fmt.Sprintf("%s by %s since %s (until %s)", l.What, l.Holder, l.Since.Format(time.RFC3339), l.Until.Format(time.RFC3339)))
	}
	return out, nil
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
	if err := checkNotInUse(ctx, e.be, dir, name); err != nil {
		return err
	}
	return s.removeChained(ctx, e, dir, name)
}

// CheckUnread returns what RemoveUnread would refuse dir/name for (an error
// wrapping ErrInUse, naming who reads it), without removing anything: a dry
// run's decision is the real one's.
func (s *Storage) CheckUnread(ctx context.Context, dir, name string) error {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return err
	}
	return checkNotInUse(ctx, e.be, dir, name)
}

// checkNotInUse refuses the removal of a backup under a current lease.
func checkNotInUse(ctx context.Context, be backend.Backend, dir, name string) error {
	held, err := currentLeases(ctx, be, dir, name)
	if err != nil {
		return fmt.Errorf("split storage: removing backup %s/%s: %w", dir, name, err)
	}
	if len(held) > 0 {
		return fmt.Errorf("split storage: backup %s/%s is not removed: %w: %s", dir, name, ErrInUse, strings.Join(held, "; "))
	}
	return nil
}

func isLeaseKey(prefix, key string) bool { return strings.HasPrefix(key, prefix+leasePrefix) }
