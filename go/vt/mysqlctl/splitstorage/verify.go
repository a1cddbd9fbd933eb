package splitstorage

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"golang.org/x/sync/errgroup"

	stats "vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
)

// VerifyPartsOptions configures Handle.VerifyParts.
type VerifyPartsOptions struct {
	// Sample picks the parts whose bytes are downloaded and checked (size and
	// CRC32C); nil checks every part. Every part's presence and size is
	// checked against the listing whatever Sample says.
	Sample func(file string, part int) bool
	// OnPart is called after each downloaded part with its size (progress).
	// It is called from several goroutines.
	OnPart func(file string, part int, size int64)
	// Concurrency is the number of parts downloaded at once (default 4).
	Concurrency int
	// MaxProblems stops after this many problems (default 100).
	MaxProblems int
}

// VerifyPartsReport says what VerifyParts looked at.
type VerifyPartsReport struct {
	Files        []string // from the completion marker
	Parts        int      // parts the indexes list
	Bytes        int64    // bytes the indexes list
	PartsChecked int      // parts downloaded and checked
	BytesChecked int64
	// Unlisted are the keys of the objects in the backup's directory that
	// no index or record of it names (left over, or put there by hand): not
	// the backup's, so never a problem of it.
	Unlisted []string
	Requests backend.Requests // what the verification sent to the store
}

// Problem is one thing wrong with a stored backup.
type Problem struct {
	Backup string // dir/name
	File   string // "" for the backup itself
	Part   int    // 1-based; 0 when not about one part
	Key    string // object key, when about one object
	Msg    string
	// Err is the error of a read or a check that failed, when the problem
	// is one (Unwrap): an access error there, a later format or a key this
	// host lacks, says nothing about damage.
	Err error
}

func (p Problem) Unwrap() error { return p.Err }

func (p Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "backup %s", p.Backup)
	if p.File != "" {
		fmt.Fprintf(&b, ", file %s", p.File)
	}
	if p.Part > 0 {
		fmt.Fprintf(&b, ", part %d", p.Part)
	}
	if p.Key != "" {
		fmt.Fprintf(&b, " (%s)", p.Key)
	}
	return b.String() + ": " + p.Msg
}

// SplitProblems sorts a verification's problems (ProblemsOf) into proven
// damage and what could not be read or reached (go/internal/unreadable),
// which is none.
func SplitProblems(verr error) (damage, unread []error) {
	for _, e := range ProblemsOf(verr) {
		if unreadable.Is(e) {
			unread = append(unread, e)
		} else {
			damage = append(damage, e)
		}
	}
	return damage, unread
}

// VerifyParts checks a stored backup without restoring it: the completion
// marker, every file's index (ParseIndex), that every part the indexes list
// exists with the recorded size (any other object there is noted in the
// report's Unlisted, not judged), and, for
// the parts opts.Sample picks (all by default), the bytes: size and CRC32C
// against the index, streamed (no part is held in memory). It returns every
// problem found (up to MaxProblems), each a Problem, joined.
func (h *Handle) VerifyParts(ctx context.Context, opts VerifyPartsOptions) (VerifyPartsReport, error) {
	ctx, meter := backend.Metered(ctx)
	doc, err := savedComplete(ctx, h.e.be, backupPrefix(h.dir, h.name), false)
	rep, err := h.verifyAgainst(ctx, doc, err, opts)
	rep.Requests = meter.Requests()
	return rep, err
}

// savedComplete reads the completion marker of the backup at prefix, or
// the one a retired base keeps in its retired marker, or with quarantined
// the one a quarantined backup keeps in its quarantine marker.
func savedComplete(ctx context.Context, be backend.Backend, prefix string, quarantined bool) ([]byte, error) {
	doc, err := readSmall(ctx, be, prefix+completeMarker)
	if !errors.Is(err, ErrNotExist) {
		return doc, err
	}
	if r, rerr := readRetired(ctx, be, prefix); rerr == nil {
		return r.Complete, nil
	}
	if quarantined {
		if q, qerr := readQuarantine(ctx, be, prefix); qerr == nil {
			return q.Complete, nil
		}
	}
	return nil, err
}

// verifyAgainst is VerifyParts against the completion marker doc (or the
// error reading it): a copy checks its destination against the source's
// marker before it writes the marker there.
func (h *Handle) verifyAgainst(ctx context.Context, doc []byte, docErr error, opts VerifyPartsOptions) (VerifyPartsReport, error) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = 100
	}
	prefix := backupPrefix(h.dir, h.name)
	v := &partsVerifier{h: h, opts: opts, prefix: prefix, badIndex: map[string]bool{},
		expected: map[string]bool{}}
	if docErr != nil {
		v.report(Problem{Key: prefix + completeMarker, Msg: fmt.Sprintf("cannot read the completion marker: %v", docErr), Err: docErr})
		return v.result()
	}
	comp, err := ParseComplete(doc, h.dir, h.name)
	if err != nil {
		v.report(Problem{Key: prefix + completeMarker, Msg: err.Error(), Err: err})
		return v.result()
	}
	v.rep.Files = comp.Files
	if err := h.checkSealWith(ctx, doc); err != nil {
		v.report(Problem{Key: prefix + sealMarker, Msg: err.Error(), Err: err})
		return v.result()
	}
	if v.listObjects(ctx) && v.checkIndexes(ctx, comp) {
		v.noteUnlisted()
		v.checkBytes(ctx)
	}
	return v.result()
}

// partsVerifier is one verifyAgainst: what it found, shared by the
// goroutines that check parts' bytes.
type partsVerifier struct {
	h      *Handle
	opts   VerifyPartsOptions
	prefix string

	sizes    map[string]int64 // every object under prefix
	expected map[string]bool  // the indexes and parts the backup should have
	badIndex map[string]bool  // files whose parts cannot be judged
	jobs     []partJob        // the parts whose bytes are checked

	mu       sync.Mutex
	rep      VerifyPartsReport
	problems []error
}

// partJob is one part whose bytes are checked.
type partJob struct {
	file      string
	n         int
	want      PartEntry
	sealKey   string // the index's (seal.go)
	blockSize int64
}

// report records p; false once MaxProblems are recorded (stop looking).
func (v *partsVerifier) report(p Problem) bool {
	p.Backup = v.h.dir + "/" + v.h.name
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.problems) < v.opts.MaxProblems {
		v.problems = append(v.problems, p)
	}
	return len(v.problems) < v.opts.MaxProblems
}

func (v *partsVerifier) result() (VerifyPartsReport, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rep, errors.Join(v.problems...)
}

func (v *partsVerifier) listObjects(ctx context.Context) bool {
	objs, err := v.h.e.be.List(ctx, v.prefix, false)
	if err != nil {
		v.report(Problem{Msg: fmt.Sprintf("cannot list the objects: %v", err), Err: err})
		return false
	}
	v.sizes = map[string]int64{}
	for _, o := range objs {
		if !o.Dir {
			v.sizes[o.Key] = o.Size
		}
	}
	return true
}

// checkIndexes reads every file's index, checks its parts are there with
// their sizes, and the totals against the completion marker.
func (v *partsVerifier) checkIndexes(ctx context.Context, comp Complete) bool {
	h := v.h
	totalParts := 0
	for _, f := range comp.Files {
		key := IndexKey(h.dir, h.name, f)
		v.expected[key] = true
		doc, err := readSmall(ctx, h.e.be, key)
		if err != nil {
			v.badIndex[f] = true
			if !v.report(Problem{File: f, Key: key, Msg: fmt.Sprintf("cannot read the index: %v", err), Err: err}) {
				return false
			}
			continue
		}
		idx, err := ParseIndex(doc, h.dir, h.name, f)
		if err == nil {
			err = h.checkIndexSeal(ctx, f, doc)
		}
		if err != nil {
			v.badIndex[f] = true
			if !v.report(Problem{File: f, Key: key, Msg: err.Error(), Err: err}) {
				return false
			}
			continue
		}
		v.rep.Parts += len(idx.Parts)
		v.rep.Bytes += idx.Size
		totalParts += len(idx.Parts)
		if !v.checkParts(f, idx) {
			return false
		}
	}
	switch {
	case len(v.badIndex) > 0:
		// Already reported; their parts are neither counted nor stray.
	case comp.Parts != totalParts:
		v.report(Problem{Key: v.prefix + completeMarker, Msg: fmt.Sprintf("completion marker says %d parts, the indexes list %d", comp.Parts, totalParts)})
	case comp.Bytes != v.rep.Bytes:
		v.report(Problem{Key: v.prefix + completeMarker, Msg: fmt.Sprintf("completion marker says %d bytes, the indexes list %d", comp.Bytes, v.rep.Bytes)})
	}
	return true
}

// checkParts checks that every part of file f's index is stored with its
// size, and queues those the sample picks for a check of their bytes.
func (v *partsVerifier) checkParts(f string, idx Index) bool {
	for i, p := range idx.Parts {
		n := i + 1
		pk := PartKey(v.h.dir, v.h.name, f, n)
		v.expected[pk] = true
		got, ok := v.sizes[pk]
		switch {
		case !ok:
			if !v.report(Problem{File: f, Part: n, Key: pk, Msg: fmt.Sprintf("part missing: expected %d bytes, found no object", p.Size)}) {
				return false
			}
			continue
		case got != p.Size:
			if !v.report(Problem{File: f, Part: n, Key: pk, Msg: fmt.Sprintf("size mismatch: expected %d bytes, found %d", p.Size, got)}) {
				return false
			}
			continue
		}
		if v.opts.Sample == nil || v.opts.Sample(f, n) {
			v.jobs = append(v.jobs, partJob{f, n, p, idx.SealKey, idx.BlockSize})
		}
	}
	return true
}

// noteUnlisted records the objects of the backup's directory that neither
// an index nor its records name: left over, or put there by hand or by
// another tool. A restore never reads them, so they say nothing of the
// backup: they are noted, never a problem.
func (v *partsVerifier) noteUnlisted() {
	for k := range v.sizes {
		if !v.expected[k] && !v.badIndex[partFile(v.prefix, k)] && !isRecordKey(v.prefix, k) {
			v.rep.Unlisted = append(v.rep.Unlisted, k)
		}
	}
	sort.Strings(v.rep.Unlisted)
}

// checkBytes reads the queued parts, opts.Concurrency at once, each
// streamed against its size and CRC32C.
func (v *partsVerifier) checkBytes(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var g errgroup.Group
	g.SetLimit(v.opts.Concurrency)
	for _, j := range v.jobs {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil
			}
			if err := v.h.checkPart(ctx, j); err != nil {
				if !v.report(Problem{File: j.file, Part: j.n, Key: PartKey(v.h.dir, v.h.name, j.file, j.n), Msg: err.Error(), Err: err}) {
					cancel()
				}
				return nil
			}
			v.mu.Lock()
			v.rep.PartsChecked++
			v.rep.BytesChecked += j.want.Size
			v.mu.Unlock()
			if v.opts.OnPart != nil {
				v.opts.OnPart(j.file, j.n, j.want.Size)
			}
			return nil
		})
	}
	_ = g.Wait()
	v.mu.Lock()
	none := len(v.problems) == 0
	v.mu.Unlock()
	if err := ctx.Err(); err != nil && none {
		v.report(Problem{Msg: err.Error(), Err: err})
	}
}

// checkPart streams part n of file and checks its size and CRC32C.
func (h *Handle) checkPart(ctx context.Context, j partJob) error {
	file, n, want := j.file, j.n, j.want
	key := PartKey(h.dir, h.name, file, n)
	tagger, err := h.readTagger(j.sealKey, file, n)
	if err != nil {
		return err
	}
	start := time.Now()
	body, err := h.e.be.Get(ctx, key, 0, -1)
	if err != nil {
		if errors.Is(err, ErrNotExist) {
			return fmt.Errorf("part missing: expected %d bytes, found no object", want.Size)
		}
		return fmt.Errorf("download: %w", err)
	}
	defer body.Close()
	hsh := crc32.New(castagnoli)
	var sink io.Writer = hsh
	var tags *tagSink
	if tagger != nil {
		tags = &tagSink{h: h, t: tagger, file: file, n: n, want: want, blockSize: j.blockSize}
		sink = io.MultiWriter(hsh, tags)
	}
	got, err := io.Copy(sink, io.LimitReader(body, want.Size+1))
	if err == nil && tags != nil && got == want.Size {
		err = tags.close()
	}
	if errors.Is(err, ErrForged) {
		return err
	}
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if got != want.Size {
		more := ""
		if got > want.Size {
			more = " or more"
		}
		return fmt.Errorf("size mismatch: expected %d bytes, found %d%s", want.Size, got, more)
	}
	if c := hsh.Sum32(); c != want.CRC32C {
		return fmt.Errorf("checksum mismatch: expected crc32c %08x, found %08x", want.CRC32C, c)
	}
	h.e.stats.Scope(stats.Operation("Part:Verify")).TimedIncrementBytes(int(want.Size), time.Since(start))
	return nil
}

// IncompleteBackup is a backup that was started and never completed (no
// completion marker): a crashed or killed backup, or one still running.
type IncompleteBackup struct {
	Name    string
	Started time.Time // from the start marker (only a backup it proves is listed)
	Host    string
	// LastWrite is the newest write time the store reports among its
	// objects: its age, whatever its markers say (a copy carries its
	// source's start marker; a marker's clock is the writer's).
	LastWrite time.Time
	// Held names the current leases on it (a copy writing it, a reader):
	// a cleanup keeps it while there is one.
	Held    []string
	Objects int
	Bytes   int64
	// Quarantined is why the backup was quarantined after it completed
	// (Handle.Quarantine); empty for one that never completed.
	Quarantined string
	// RetiredFor lists the backups a removed backup is kept for as their
	// base (see chain.go); it goes when they do.
	RetiredFor []string
}

// ListIncomplete returns the backups in dir that have no completion marker
// (never listed by ListBackups, never restored from), sorted by name. A
// backup still being taken or copied is among them: look at LastWrite and
// Held before removing; so is a quarantined one, with its reason. Only a
// backup this storage can prove it wrote is listed (ownership.go): another
// storage's backup (Vitess's file storage's MANIFEST and files, even a
// fifo backup's lanes.index) or a directory that is not a backup (a root
// one level off: a tablet's binary logs) never is. RemoveBackup removes one.
func (s *Storage) ListIncomplete(ctx context.Context, dir string) ([]IncompleteBackup, error) {
	e, names, err := s.backupNames(ctx, dir)
	if err != nil {
		return nil, err
	}
	states, err := s.statesOf(ctx, e, dir, names)
	if err != nil {
		return nil, err
	}
	return incompleteAmong(ctx, e, dir, names, states)
}

// incompleteAmong describes the backups among names (dir's) without a
// completion marker (states says which have one) that this storage can
// prove it wrote.
func incompleteAmong(ctx context.Context, e *env, dir string, names []string, states []listedState) ([]IncompleteBackup, error) {
	var out []IncompleteBackup
	for i, name := range names {
		if states[i] != stateIncomplete {
			continue
		}
		prefix := backupPrefix(dir, name)
		ours, sd, err := proveBackup(ctx, e.be, dir, name)
		if err != nil {
			return nil, fmt.Errorf("split storage: listing backups in %s: %w", dir, err)
		}
		if !ours {
			continue
		}
		objs, err := e.be.List(ctx, prefix, false)
		if err != nil {
			return nil, fmt.Errorf("split storage: listing backup %s/%s: %w", dir, name, err)
		}
		ib := IncompleteBackup{Name: name, Started: sd.Started, Host: sd.Host, LastWrite: newestWrite(objs)}
		if ib.Held, _, err = currentLeases(ctx, e.be, dir, name); err != nil {
			return nil, fmt.Errorf("split storage: listing backups in %s: %w", dir, err)
		}
		if r, err := readRetired(ctx, e.be, prefix); err == nil {
			if ib.RetiredFor, err = dependents(ctx, e, dir, names, name); err != nil {
				return nil, fmt.Errorf("split storage: listing backups in %s: %w", dir, err)
			}
			if len(ib.RetiredFor) == 0 {
				ib.RetiredFor = r.Dependents
			}
		}
		if q, err := readQuarantine(ctx, e.be, prefix); err == nil {
			ib.Quarantined = q.Reason
		} else if !errors.Is(err, ErrNotExist) {
			ib.Quarantined = "unreadable quarantine marker: " + err.Error()
		}
		for _, o := range objs {
			if !o.Dir {
				ib.Objects++
				ib.Bytes += o.Size
			}
		}
		out = append(out, ib)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// PartVerifier is what a BackupHandle of this storage offers beyond
// backupstorage.BackupHandle (tools type-assert to it).
type PartVerifier interface {
	backupstorage.BackupHandle
	VerifyParts(ctx context.Context, opts VerifyPartsOptions) (VerifyPartsReport, error)
	// CheckPlace fails, a contradiction, for a backup copied or renamed
	// here outside vtfifo: what its objects say is another backup's.
	CheckPlace(ctx context.Context) error
}

var _ PartVerifier = (*Handle)(nil)
