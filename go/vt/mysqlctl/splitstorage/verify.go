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
}

// Problem is one thing wrong with a stored backup.
type Problem struct {
	Backup string // dir/name
	File   string // "" for the backup itself
	Part   int    // 1-based; 0 when not about one part
	Key    string // object key, when about one object
	Msg    string
}

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

// VerifyParts checks a stored backup without restoring it: the completion
// marker, every file's index (ParseIndex), that every part the indexes list
// exists with the recorded size and that no other object is there, and, for
// the parts opts.Sample picks (all by default), the bytes: size and CRC32C
// against the index, streamed (no part is held in memory). It returns every
// problem found (up to MaxProblems), each a Problem, joined.
func (h *Handle) VerifyParts(ctx context.Context, opts VerifyPartsOptions) (VerifyPartsReport, error) {
	prefix := backupPrefix(h.dir, h.name)
	doc, err := readSmall(ctx, h.e.be, prefix+completeMarker)
	if errors.Is(err, ErrNotExist) {
		// A retired base keeps its completion marker in its retired one.
		if r, rerr := readRetired(ctx, h.e.be, prefix); rerr == nil {
			doc, err = r.Complete, nil
		}
	}
	return h.verifyAgainst(ctx, doc, err, opts)
}

// verifyAgainst is VerifyParts against the completion marker doc (or the
// error reading it): a copy checks its destination against the source's
// marker before it writes the marker there.
func (h *Handle) verifyAgainst(ctx context.Context, doc []byte, docErr error, opts VerifyPartsOptions) (VerifyPartsReport, error) {
	var rep VerifyPartsReport
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = 100
	}
	backup := h.dir + "/" + h.name
	var (
		mu       sync.Mutex
		problems []error
	)
	report := func(p Problem) bool {
		p.Backup = backup
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < opts.MaxProblems {
			problems = append(problems, p)
		}
		return len(problems) < opts.MaxProblems
	}
	result := func() (VerifyPartsReport, error) {
		mu.Lock()
		defer mu.Unlock()
		return rep, errors.Join(problems...)
	}

	prefix := backupPrefix(h.dir, h.name)
	if docErr != nil {
		report(Problem{Key: prefix + completeMarker, Msg: fmt.Sprintf("cannot read the completion marker: %v", docErr)})
		return result()
	}
	comp, err := ParseComplete(doc, h.dir, h.name)
	if err != nil {
		report(Problem{Key: prefix + completeMarker, Msg: err.Error()})
		return result()
	}
	rep.Files = comp.Files
	objs, err := h.e.be.List(ctx, prefix, false)
	if err != nil {
		report(Problem{Msg: fmt.Sprintf("cannot list the objects: %v", err)})
		return result()
	}
	sizes := map[string]int64{}
	for _, o := range objs {
		if !o.Dir {
			sizes[o.Key] = o.Size
		}
	}
	expected := map[string]bool{prefix + startedMarker: true, prefix + completeMarker: true, prefix + baseMarker: true, prefix + retiredMarker: true}
	type job struct {
		file string
		n    int
		want PartEntry
	}
	var jobs []job
	var totalParts int
	badIndex := map[string]bool{} // files whose parts cannot be judged
	for _, f := range comp.Files {
		key := IndexKey(h.dir, h.name, f)
		expected[key] = true
		doc, err := readSmall(ctx, h.e.be, key)
		if err != nil {
			badIndex[f] = true
			if !report(Problem{File: f, Key: key, Msg: fmt.Sprintf("cannot read the index: %v", err)}) {
				return result()
			}
			continue
		}
		idx, err := ParseIndex(doc, h.dir, h.name, f)
		if err != nil {
			badIndex[f] = true
			if !report(Problem{File: f, Key: key, Msg: err.Error()}) {
				return result()
			}
			continue
		}
		rep.Parts += len(idx.Parts)
		rep.Bytes += idx.Size
		totalParts += len(idx.Parts)
		for i, p := range idx.Parts {
			n := i + 1
			pk := PartKey(h.dir, h.name, f, n)
			expected[pk] = true
			got, ok := sizes[pk]
			switch {
			case !ok:
				if !report(Problem{File: f, Part: n, Key: pk, Msg: fmt.Sprintf("part missing: expected %d bytes, found no object", p.Size)}) {
					return result()
				}
				continue
			case got != p.Size:
				if !report(Problem{File: f, Part: n, Key: pk, Msg: fmt.Sprintf("size mismatch: expected %d bytes, found %d", p.Size, got)}) {
					return result()
				}
				continue
			}
			if opts.Sample == nil || opts.Sample(f, n) {
				jobs = append(jobs, job{f, n, p})
			}
		}
	}
	if len(badIndex) > 0 {
		// Already reported; their parts are neither counted nor stray.
	} else if comp.Parts != totalParts {
		report(Problem{Key: prefix + completeMarker, Msg: fmt.Sprintf("completion marker says %d parts, the indexes list %d", comp.Parts, totalParts)})
	} else if comp.Bytes != rep.Bytes {
		report(Problem{Key: prefix + completeMarker, Msg: fmt.Sprintf("completion marker says %d bytes, the indexes list %d", comp.Bytes, rep.Bytes)})
	}
	var extra []string
	for k := range sizes {
		if !expected[k] && !badIndex[partFile(prefix, k)] && !isSidecarKey(prefix, k) {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		if !report(Problem{Key: k, Msg: "object not listed in any index (left over or added by hand)"}) {
			return result()
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan job)
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				err := h.checkPart(ctx, j.file, j.n, j.want)
				if err != nil {
					if !report(Problem{File: j.file, Part: j.n, Key: PartKey(h.dir, h.name, j.file, j.n), Msg: err.Error()}) {
						cancel()
					}
					continue
				}
				mu.Lock()
				rep.PartsChecked++
				rep.BytesChecked += j.want.Size
				mu.Unlock()
				if opts.OnPart != nil {
					opts.OnPart(j.file, j.n, j.want.Size)
				}
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case ch <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if err := ctx.Err(); err != nil && len(problems) == 0 {
		report(Problem{Msg: err.Error()})
	}
	return result()
}

// partFile is the file a part key belongs to ("" if key is not a part).
func partFile(prefix, key string) string {
	rest := strings.TrimPrefix(key, prefix)
	if i := strings.LastIndex(rest, partInfix); i > 0 && len(rest) == i+len(partInfix)+8 {
		return rest[:i]
	}
	return ""
}

// checkPart streams part n of file and checks its size and CRC32C.
func (h *Handle) checkPart(ctx context.Context, file string, n int, want PartEntry) error {
	key := PartKey(h.dir, h.name, file, n)
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
	got, err := io.Copy(hsh, io.LimitReader(body, want.Size+1))
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
	Started time.Time // from the start marker; zero when unreadable
	Host    string
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
// backup still being taken is among them: look at Started before removing;
// so is a quarantined one, with its reason.
// RemoveBackup removes one.
func (s *Storage) ListIncomplete(ctx context.Context, dir string) ([]IncompleteBackup, error) {
	e, names, err := s.backupNames(ctx, dir)
	if err != nil {
		return nil, err
	}
	var out []IncompleteBackup
	for _, name := range names {
		prefix := backupPrefix(dir, name)
		if _, err := e.be.Stat(ctx, prefix+completeMarker); err == nil {
			continue
		} else if !errors.Is(err, ErrNotExist) {
			return nil, fmt.Errorf("split storage: listing backups in %s: %w", dir, err)
		}
		ib := IncompleteBackup{Name: name}
		if doc, err := readSmall(ctx, e.be, prefix+startedMarker); err == nil {
			var sd startedDoc
			if strictJSON(doc, &sd) == nil {
				ib.Started, ib.Host = sd.Started, sd.Host
			}
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
		objs, err := e.be.List(ctx, prefix, false)
		if err != nil {
			return nil, fmt.Errorf("split storage: listing backup %s/%s: %w", dir, name, err)
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
}

var _ PartVerifier = (*Handle)(nil)
