package splitstorage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Change marks keep the fleet's summaries (fleet.go) honest without a walk
// of the fleet: every write, copy, lock or removal of a backup's own
// '.'-leading object (its markers, sidecars and lock records: what the
// fleet view is made of; never a part, an index or a read lease) is
// bracketed by two small objects under .fleet/changes/<dir>/:
// <id>.begin before the request, <id>.end after it. A summary lists the
// marks it saw before its listing of the shard (fleet.go); a mark it does
// not list says the summary may be stale. A begin without its end is a
// change still in flight, or one whose writer died: the shard is rebuilt
// on every refresh until its end comes or it is changeAbandoned old.
const (
	fleetPrefix     = ".fleet/"
	changesPrefix   = fleetPrefix + "changes/"
	beginSuffix     = ".begin"
	endSuffix       = ".end"
	changeAbandoned = time.Hour
)

// changeMarking is the wrapper that writes the marks around the requests
// that change a backup directory's view. It goes outermost, so the marks
// are retried and rate limited as any other request.
type changeMarking struct {
	backend.Backend
}

var (
	_ backend.Backend      = changeMarking{}
	_ backend.ServerCopier = changeMarking{}
	_ backend.Locker       = changeMarking{}
	_ backend.Unwrapper    = changeMarking{}
)

// Unwrap returns the backend wrapped.
func (c changeMarking) Unwrap() backend.Backend { return c.Backend }

func (c changeMarking) Put(ctx context.Context, key string, r io.ReadSeeker, size int64, opts backend.PutOptions) error {
	return c.marked(ctx, "put", key, func() error { return c.Backend.Put(ctx, key, r, size, opts) })
}

func (c changeMarking) Delete(ctx context.Context, key string) error {
	return c.marked(ctx, "delete", key, func() error { return c.Backend.Delete(ctx, key) })
}

// CopyFrom passes a server-side copy to the backend wrapped, when it makes them.
func (c changeMarking) CopyFrom(ctx context.Context, src backend.Backend, key string, size int64, opts backend.PutOptions) (bool, error) {
	sc, ok := c.Backend.(backend.ServerCopier)
	if !ok {
		return false, nil
	}
	copied := false
	err := c.marked(ctx, "copy", key, func() error {
		var err error
		copied, err = sc.CopyFrom(ctx, src, key, size, opts)
		return err
	})
	return copied, err
}

// LockOf passes through: reading a lock changes nothing.
func (c changeMarking) LockOf(ctx context.Context, key string) (backend.Lock, error) {
	lk, ok := backend.LockerOf(c.Backend)
	if !ok {
		return backend.Lock{}, backend.ErrNoLocks
	}
	return lk.LockOf(ctx, key)
}

func (c changeMarking) Lock(ctx context.Context, key string, l backend.Lock) error {
	lk, ok := backend.LockerOf(c.Backend)
	if !ok {
		return backend.ErrNoLocks
	}
	return c.marked(ctx, "lock", key, func() error { return lk.Lock(ctx, key, l) })
}

// marked runs req, a request on key, between the two marks when key is one
// the fleet view is made of. A begin that cannot be written fails the
// request before it is sent (the summary could otherwise go stale
// unseen); an end that cannot be written (the process cancelled, the
// store gone) leaves the begin, which keeps the shard walked until it is
// abandoned: slower, never wrong.
func (c changeMarking) marked(ctx context.Context, op, key string, req func() error) error {
	dir, ok := changedDir(key)
	if !ok {
		return req()
	}
	id := changeID(time.Now())
	doc, _ := json.Marshal(changeMarkDoc{Op: op, Key: key})
	put := func(suffix string) error {
		k := changesPrefix + dir + "/" + id + suffix
		return c.Backend.Put(ctx, k, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{IfNotExists: true, CRC32C: crc32c(doc)})
	}
	if err := put(beginSuffix); err != nil {
		return fmt.Errorf("split storage: recording the change of %s for the fleet view, before changing it: %w", key, err)
	}
	err := req()
	// The end says the request is over, done or not (a refused create,
	// a delete of what was gone): a walk after it sees what it left.
	_ = put(endSuffix)
	return err
}

// changeMarkDoc is what a mark holds: which request on which key (for
// people reading the store; the fleet view reads only the marks' names).
type changeMarkDoc struct {
	Op  string `json:"op"`
	Key string `json:"key"`
}

// changeID names one change: its time (so that marks list in order) and
// random bits (so that two at the same nanosecond differ).
func changeID(t time.Time) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%020d-%s", t.UnixNano(), hex.EncodeToString(r[:]))
}

// changedDir returns the backup directory whose fleet view a write of key
// changes: key is <dir>/<backup>/<.marker> with a '.'-leading marker that is
// not a read lease.
func changedDir(key string) (string, bool) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", false
	}
	rel := key[i+1:]
	if !strings.HasPrefix(rel, ".") || strings.HasPrefix(rel, leasePrefix) {
		return "", false
	}
	j := strings.LastIndexByte(key[:i], '/')
	if j <= 0 {
		return "", false
	}
	dir := key[:j]
	if checkName("directory", dir, true) != nil || checkName("backup name", key[j+1:i], false) != nil {
		return "", false
	}
	return dir, true
}
