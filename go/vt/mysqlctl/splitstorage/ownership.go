package splitstorage

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// Ownership. The storage lists as its own, counts, judges by age and
// removes only a backup directory it can prove it wrote: one whose start
// marker is a start document of this storage (startedDoc: a random token, a
// start time, a part size in range; since layout 1 it also names the
// storage and its layout), or, once its start marker is gone, whose
// completion marker names it. Never a file-name pattern: a root set one
// level off holds directories whose names look like ours (a tablet's
// binary logs end in .index, a fifo backup in Vitess's file storage has a
// lanes.index), and another storage may share the root. A directory it
// cannot prove is someone else's: no command touches it.
//
// A root is proven ours by its root identity (rootMarker, written before
// the first backup's start marker, by a backup or a copy), or, for a root
// written before the identity existed, by a backup it can prove; an empty
// root is one too (nothing in it to misjudge).

const (
	rootMarker = ".split-storage"
	// storageID and layoutVersion are what this storage's start markers
	// and root identity name.
	storageID     = "split"
	layoutVersion = 1
)

// ErrNotSplitRoot is returned (wrapped) by CheckRoot for a root that holds
// objects, none of them provably this storage's.
var ErrNotSplitRoot = errors.New("not a split storage root")

// ErrNotOurs is returned (wrapped, and marked as a request the data
// contradicts: flagvalue.Contradiction) by RemoveBackup for a directory
// this storage cannot prove it wrote, and by StartBackup and CopyBackup
// for one that holds another's objects.
var ErrNotOurs = errors.New("not the split storage's")

type rootDoc struct {
	Storage string    `json:"storage"`
	Layout  int       `json:"layout"`
	Created time.Time `json:"created"`
}

// claimRoot writes the root identity unless it is there.
func claimRoot(ctx context.Context, be backend.Backend) error {
	doc, _ := json.Marshal(rootDoc{Storage: storageID, Layout: layoutVersion, Created: time.Now().UTC()})
	err := be.Put(ctx, rootMarker, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{IfNotExists: true, CRC32C: crc32c(doc)})
	if err != nil && !errors.Is(err, ErrExists) {
		return fmt.Errorf("split storage: writing the root identity %s in %s: %w", rootMarker, be, err)
	}
	return nil
}

// parseStarted decodes a start marker and checks it is one this storage
// writes.
func parseStarted(doc []byte) (startedDoc, error) {
	var sd startedDoc
	if err := strictJSON(doc, &sd); err != nil {
		return sd, fmt.Errorf("not a start marker of the split storage: %w", err)
	}
	tok, err := hex.DecodeString(sd.Token)
	switch {
	case err != nil || len(tok) != 16:
		return sd, errors.New("not a start marker of the split storage: no 16-byte token")
	case sd.Started.IsZero():
		return sd, errors.New("not a start marker of the split storage: no start time")
	case sd.PartSize < 1 || sd.PartSize > MaxPartSize:
		return sd, fmt.Errorf("not a start marker of the split storage: part size %d", sd.PartSize)
	case sd.Storage != "" && sd.Storage != storageID:
		return sd, fmt.Errorf("not a start marker of the split storage: it names storage %q", sd.Storage)
	}
	return sd, nil
}

// proveBackup says whether dir/name is a backup this storage wrote, and
// its start document when its start marker proves it. An error is one
// reading the proof: it never passes for "not ours", nor for "ours".
func proveBackup(ctx context.Context, be backend.Backend, dir, name string) (bool, startedDoc, error) {
	prefix := backupPrefix(dir, name)
	doc, err := readSmall(ctx, be, prefix+startedMarker)
	switch {
	case err == nil:
		sd, perr := parseStarted(doc)
		if perr == nil {
			return true, sd, nil
		}
	case !errors.Is(err, ErrNotExist):
		return false, startedDoc{}, fmt.Errorf("reading the start marker of %s/%s: %w", dir, name, err)
	}
	doc, err = readSmall(ctx, be, prefix+completeMarker)
	switch {
	case errors.Is(err, ErrNotExist):
		return false, startedDoc{}, nil
	case err != nil:
		return false, startedDoc{}, fmt.Errorf("reading the completion marker of %s/%s: %w", dir, name, err)
	}
	_, perr := ParseComplete(doc, dir, name)
	return perr == nil, startedDoc{}, nil
}

// CheckRoot returns an error wrapping ErrNotSplitRoot, naming the root,
// when the storage's root holds objects but neither its root identity nor
// a backup this storage can prove it wrote: a root one level off, or
// another storage's. Commands that list, judge or remove refuse such a
// root. With a legacy storage configured the root may hold only its
// backups (a shared root, before the first split backup): it is accepted,
// and still nothing unproven is touched.
func (s *Storage) CheckRoot(ctx context.Context) error {
	e, err := s.env(ctx)
	if err != nil {
		return err
	}
	if _, err := e.be.Stat(ctx, rootMarker); err == nil || e.cfg.Legacy != "" {
		return nil
	} else if !errors.Is(err, ErrNotExist) {
		return fmt.Errorf("split storage: reading the root identity of %s: %w", e.be, err)
	}
	top, err := e.be.List(ctx, "", true)
	if err != nil {
		return fmt.Errorf("split storage: listing %s: %w", e.be, err)
	}
	if len(top) == 0 {
		return nil
	}
	// A root older than its identity: one proven backup is enough (the
	// walk stops there).
	proven := false
	if err := s.eachBackupDir(ctx, func(string) bool { proven = true; return false }); err != nil {
		return err
	}
	if !proven {
		return fmt.Errorf("split storage: %s is %w: it holds objects, but neither the root identity %s nor a backup the split storage wrote "+
			"(a root one level off, or another storage's): nothing in it is touched; check the storage flags (root, bucket, prefix)",
			e.be, ErrNotSplitRoot, rootMarker)
	}
	return nil
}

// notAnothersDirectory refuses to write backup dir/name where its
// directory holds objects this storage cannot prove it wrote (its own read
// leases aside): another storage's backup of that name on a shared root,
// whose files a later removal of ours would take with it.
func notAnothersDirectory(ctx context.Context, be backend.Backend, dir, name string) error {
	foreign, err := othersObjects(ctx, be, dir, name)
	if err != nil || len(foreign) == 0 {
		return err
	}
	return flagvalue.Contradiction(fmt.Errorf("%s/%s in %s holds %d objects the split storage did not write (%s, ...): another storage's "+
		"backup of that name; nothing was written: %w", dir, name, be, len(foreign), foreign[0], ErrNotOurs))
}

// othersObjects names the objects under backup dir/name (relative to it,
// read leases aside) when this storage cannot prove it wrote that backup
// (proveBackup); none where there are none or it is its own.
func othersObjects(ctx context.Context, be backend.Backend, dir, name string) ([]string, error) {
	prefix := backupPrefix(dir, name)
	objs, err := be.List(ctx, prefix, false)
	if err != nil {
		return nil, err
	}
	var foreign []string
	for _, o := range objs {
		if !o.Dir && !isLeaseKey(prefix, o.Key) {
			foreign = append(foreign, strings.TrimPrefix(o.Key, prefix))
		}
	}
	if len(foreign) == 0 {
		return nil, nil
	}
	if ours, _, err := proveBackup(ctx, be, dir, name); ours || err != nil {
		return nil, err
	}
	return foreign, nil
}

// CheckOwn says, for a backup name no listing of this storage holds, what
// is there: where objects by that name are not a backup this storage wrote
// (another tool's, or put there by hand: no command reads, locks or
// removes them), an error wrapping ErrNotOurs that names them (the caller
// names the backup); nil where there is nothing, or the backup is its own.
func (s *Storage) CheckOwn(ctx context.Context, dir, name string) error {
	e, err := s.backupEnv(ctx, dir, name)
	if err != nil {
		return err
	}
	foreign, err := othersObjects(ctx, e.be, dir, name)
	if err != nil || len(foreign) == 0 {
		return err
	}
	return notOurs(fmt.Sprintf("not a backup the split storage wrote: it holds %s and no start or completion marker of the split storage's: "+
		"another tool's backup (a Vitess storage's is listed with --%s) or put there by hand; it is left as it is", foreignObjects(foreign), flagLegacy))
}

// notOurs is a line that says what is not the split storage's: it wraps
// ErrNotOurs without saying it again.
type notOurs string

func (e notOurs) Error() string { return string(e) }
func (e notOurs) Unwrap() error { return ErrNotOurs }

// backupMarkers are a backup's own '.'-leading objects (layout.go).
var backupMarkers = map[string]bool{startedMarker: true, completeMarker: true, baseMarker: true, retiredMarker: true, quarantineMarker: true,
	sealMarker: true, promotingMarker: true, promotedMarker: true}

// ownKey says whether key, an object under a backup's prefix, is of a kind
// this storage writes there: a marker, a sidecar, a read lease, a lock
// record, or a file's part or index. In a directory proven the storage's
// (proveBackup) those are the backup's, listed or left over. Any other
// object was put there by someone else (by hand, another tool): no
// command removes, locks, copies or judges it.
func ownKey(prefix, key string) bool {
	rel, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return false
	}
	if isRecordKey(prefix, key) {
		return true
	}
	file := partFile(prefix, key)
	if f, isIndex := strings.CutSuffix(rel, indexSuffix); isIndex {
		file = f
	}
	return file != "" && checkName("file name", file, false) == nil
}

// isRecordKey says whether key, under a backup's prefix, is one of the
// storage's records of the backup, which no index lists: a marker, a
// sidecar, a read lease or a lock record.
func isRecordKey(prefix, key string) bool {
	rel, ok := strings.CutPrefix(key, prefix)
	return ok && (backupMarkers[rel] || isSidecarKey(prefix, key) || isLeaseKey(prefix, key) || isLockRecordKey(prefix, key))
}

// foreignObjects names the objects of a backup's directory that are not the
// storage's (ownKey), for a line: how many, and the first few.
func foreignObjects(rels []string) string {
	const shown = 5
	sorted := slices.Sorted(slices.Values(rels))
	noun := "objects"
	if len(sorted) == 1 {
		noun = "object"
	}
	s := fmt.Sprintf("%d %s (%s", len(sorted), noun, strings.Join(sorted[:min(shown, len(sorted))], ", "))
	if len(sorted) > shown {
		s += fmt.Sprintf(", and %d more", len(sorted)-shown)
	}
	return s + ")"
}

// partFile is the file a part key belongs to ("" if key is not a part).
func partFile(prefix, key string) string {
	rest := strings.TrimPrefix(key, prefix)
	i := strings.LastIndex(rest, partInfix)
	if i <= 0 || len(rest) != i+len(partInfix)+8 {
		return ""
	}
	for _, c := range rest[i+len(partInfix):] {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return rest[:i]
}

// newestWrite is the latest write time the store reports among objs: how
// old a backup is, whatever its markers say.
func newestWrite(objs []backend.ObjectInfo) time.Time {
	var t time.Time
	for _, o := range objs {
		if !o.Dir && o.Modified.After(t) {
			t = o.Modified
		}
	}
	return t
}
