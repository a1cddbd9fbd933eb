package splitstorage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
)

// The fleet's summaries: one small document per backup directory, so that
// a view of every shard costs about one request per shard, not a few per
// backup. A summary is .fleet/summaries/<dir>/<generation>: never
// replaced, each generation created only if absent (two refreshes that
// race save one; the loser's answer is as good, only not kept). It holds
// what the caller's Build made from a walk of the shard, and the change
// marks (changes.go) that walk covered. A summary is used only while every
// mark of its directory is one it covered and it is younger than
// FleetOptions.MaxAge; else the shard is walked again and a new
// generation saved, and the view says why. Marks and generations a new
// summary covers are then deleted.
const (
	summariesPrefix = fleetPrefix + "summaries/"
	summaryVersion  = 1
	// DefaultFleetWorkers is how many shards a refresh reads or walks at once.
	DefaultFleetWorkers = 32
)

// FleetOptions say how Fleet reads the summaries and makes new ones.
type FleetOptions struct {
	// Build walks dir (a backup directory with a backup this storage
	// wrote) and returns its summary document. An error is the shard's,
	// nothing is saved.
	Build func(ctx context.Context, dir string) ([]byte, error)
	// MaxAge: a summary older than this (give or take a quarter, by
	// directory, so they do not all expire at once) is rebuilt, which is
	// what catches changes made outside this storage (objects deleted by
	// hand, backups of a legacy storage). 0: no limit.
	MaxAge time.Duration
	// Rebuild walks every shard whatever its summary.
	Rebuild bool
	// Workers is how many shards are read or walked at once (0: DefaultFleetWorkers).
	Workers int
	// Dirs are backup directories to read besides those of the root (the
	// topology's shards: one may hold only a legacy storage's backups).
	Dirs []string
}

// FleetShard is one backup directory that holds a backup of this storage.
type FleetShard struct {
	Dir string
	// Doc is its summary document, as Build made it.
	Doc []byte
	// Built is when the summary was made.
	Built time.Time
	// Rebuilt is why it was walked in this refresh ("": its summary was
	// read), and whether the new summary was saved.
	Rebuilt string
	// Err says why it could not be read or walked (Doc is then nil).
	Err error
}

// FleetReport is what a refresh did and cost.
type FleetReport struct {
	// Shards were read from their summaries (Read), walked (Rebuilt), or
	// could not be (Failed).
	Shards, Read, Rebuilt, Failed int
	Requests                      backend.Requests
	Took                          time.Duration
}

// summaryDoc is the stored summary.
type summaryDoc struct {
	Version int       `json:"version"`
	Dir     string    `json:"dir"`
	Built   time.Time `json:"built"`
	// Ours is false for a directory that holds no backup of this storage,
	// nor of its legacy storage (nothing is shown for it).
	Ours bool `json:"ours"`
	// Covered are the change marks seen before the walk, by name.
	Covered []string        `json:"covered"`
	Doc     json.RawMessage `json:"doc,omitempty"`
	// SealKey and Tag seal the summary (the rest of it, Tag empty) with
	// the signing key, when the storage has one: a summary edited or
	// forged in the store is walked again, not believed.
	SealKey string `json:"seal_key,omitempty"`
	Tag     []byte `json:"tag,omitempty"`
}

func summaryContext(dir string) string { return "vtfifo fleet summary " + dir }

// seal tags sum with the storage's signing key (none: as it is).
func (sum *summaryDoc) seal(e *env) error {
	if e.seals == nil {
		return nil
	}
	sum.SealKey, sum.Tag = e.seals.CurrentID(), nil
	body, _ := json.Marshal(sum)
	tag, err := e.seals.Tag(sum.SealKey, summaryContext(sum.Dir), body)
	sum.Tag = tag
	return err
}

// checkSeal says why sum's seal does not stand ("": it does, or the
// storage has no signing key).
func (sum summaryDoc) checkSeal(e *env) string {
	if e.seals == nil {
		return ""
	}
	if sum.Tag == nil {
		return "its summary is not sealed"
	}
	tag := sum.Tag
	sum.Tag = nil
	body, _ := json.Marshal(sum)
	if err := e.seals.CheckTag(sum.SealKey, summaryContext(sum.Dir), body, tag); err != nil {
		return "its summary's seal does not check: " + err.Error()
	}
	return ""
}

// NotSaved separates, in FleetShard.Rebuilt, why a shard was walked from
// why its new summary could not be saved.
const NotSaved = "; not saved: "

// The names this storage gives summaries and change marks: nothing else
// under .fleet/ is read, or removed.
var (
	summaryName    = regexp.MustCompile(`^[0-9]{16}$`)
	changeMarkName = regexp.MustCompile(`^[0-9]{20}-[0-9a-f]{12}\.(begin|end)$`)
)

// errCorruptSummary: a summary that is not one this storage wrote is
// walked again, and replaced.
var errCorruptSummary = errors.New("corrupt summary")

// fleetDir is what the listings say of one backup directory.
type fleetDir struct {
	dir       string
	summaries []backend.ObjectInfo // by generation, oldest first
	marks     []backend.ObjectInfo
	// listed is when the marks were listed, by the store's clock, which
	// their write times are on (a host clock ahead took a change in
	// flight for abandoned).
	listed time.Time
}

// Fleet returns every backup directory that holds a backup of this
// storage, each from its summary when that is current, else walked (Build)
// and summarized again. It costs the listings of the root and of each
// keyspace, a listing of .fleet/, and a GET per summary not already read
// by this Storage: a walk only where a summary is missing or stale.
func (s *Storage) Fleet(ctx context.Context, opts FleetOptions) ([]FleetShard, FleetReport, error) {
	start := time.Now()
	ctx, meter := backend.Metered(ctx)
	e, err := s.env(ctx)
	if err != nil {
		return nil, FleetReport{}, err
	}
	dirs, err := s.fleetDirs(ctx, e, opts.Dirs)
	if err != nil {
		return nil, FleetReport{}, err
	}
	s.keepSummaries(dirs) // a long-running exporter holds only what the store still has
	out := make([]*FleetShard, len(dirs))
	var g errgroup.Group
	g.SetLimit(cmp.Or(opts.Workers, DefaultFleetWorkers))
	for i, d := range dirs {
		g.Go(func() error {
			out[i] = s.fleetShard(ctx, e, d, opts, start)
			return nil
		})
	}
	_ = g.Wait()
	rep := FleetReport{}
	var shards []FleetShard
	for _, sh := range out {
		if sh == nil {
			continue
		}
		shards = append(shards, *sh)
		switch {
		case sh.Err != nil:
			rep.Failed++
		case sh.Rebuilt != "":
			rep.Rebuilt++
		default:
			rep.Read++
		}
	}
	rep.Shards, rep.Requests, rep.Took = len(shards), meter.Requests(), time.Since(start)
	return shards, rep, nil
}

// fleetDirs lists the keyspace/shard directories of the root (the root's
// listing and each keyspace's), with extra, and what .fleet/ holds for each.
func (s *Storage) fleetDirs(ctx context.Context, e *env, extra []string) ([]fleetDir, error) {
	keyspaces, err := e.be.List(ctx, "", true)
	if err != nil {
		return nil, fmt.Errorf("split storage: listing %s: %w", e.be, err)
	}
	var (
		mu   sync.Mutex
		dirs = map[string]*fleetDir{}
		g    errgroup.Group
	)
	g.SetLimit(listWorkers)
	for _, ks := range keyspaces {
		if !ks.Dir || checkName("keyspace", strings.TrimSuffix(ks.Key, "/"), false) != nil {
			continue
		}
		g.Go(func() error {
			shards, err := e.be.List(ctx, ks.Key, true)
			if err != nil {
				return fmt.Errorf("split storage: listing %s in %s: %w", ks.Key, e.be, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, sh := range shards {
				if d := strings.TrimSuffix(sh.Key, "/"); sh.Dir && checkName("directory", d, true) == nil {
					dirs[d] = &fleetDir{dir: d}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, d := range extra {
		if _, ok := dirs[d]; !ok && checkName("directory", d, true) == nil {
			dirs[d] = &fleetDir{dir: d}
		}
	}
	wctx, clock := backend.WatchClock(ctx)
	objs, err := e.be.List(wctx, fleetPrefix, false)
	if err != nil {
		return nil, fmt.Errorf("split storage: listing the fleet's summaries %s in %s: %w", fleetPrefix, e.be, err)
	}
	listed := storeNow(clock)
	for _, d := range dirs {
		d.listed = listed
	}
	for _, o := range objs {
		d, ok := dirs[fleetObjectDir(o.Key)]
		switch {
		case !ok:
		case strings.HasPrefix(o.Key, summariesPrefix) && summaryName.MatchString(markName(o.Key)):
			d.summaries = append(d.summaries, o)
		case strings.HasPrefix(o.Key, changesPrefix) && changeMarkName.MatchString(markName(o.Key)):
			d.marks = append(d.marks, o)
		}
	}
	out := make([]fleetDir, 0, len(dirs))
	for _, d := range dirs {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
	return out, nil
}

// fleetObjectDir is the backup directory a summary or a change mark is
// of ("" for any other key).
func fleetObjectDir(key string) string {
	rest, ok := strings.CutPrefix(key, summariesPrefix)
	if !ok {
		if rest, ok = strings.CutPrefix(key, changesPrefix); !ok {
			return ""
		}
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return ""
	}
	return rest[:i]
}

// fleetShard reads d's summary, or walks d when it is missing or stale;
// nil when d holds no backup of this storage.
func (s *Storage) fleetShard(ctx context.Context, e *env, d fleetDir, opts FleetOptions, now time.Time) *FleetShard {
	why := "no summary yet"
	if n := len(d.summaries); n > 0 && !opts.Rebuild {
		sum, err := s.readSummary(ctx, e, d.summaries[n-1])
		switch {
		case errors.Is(err, ErrNotExist):
			why = "its summary was removed while read"
		case errors.Is(err, errCorruptSummary):
			why = err.Error()
		case err != nil:
			return &FleetShard{Dir: d.dir, Err: fmt.Errorf("cannot read its summary %s: %w", d.summaries[n-1].Key, err)}
		default:
			if why = cmp.Or(sum.checkSeal(e), sum.stale(d, opts.MaxAge, now)); why == "" {
				if !sum.Ours {
					return nil
				}
				return &FleetShard{Dir: d.dir, Doc: sum.Doc, Built: sum.Built}
			}
		}
	} else if opts.Rebuild {
		why = "asked to rebuild"
	}
	return s.rebuild(ctx, e, d, opts, why)
}

// stale says why sum no longer stands for d ("": it does).
func (sum summaryDoc) stale(d fleetDir, maxAge time.Duration, now time.Time) string {
	covered := make(map[string]bool, len(sum.Covered))
	for _, c := range sum.Covered {
		covered[c] = true
	}
	for _, m := range d.marks {
		if !covered[markName(m.Key)] {
			return "changed since its summary (" + markName(m.Key) + ")"
		}
	}
	if limit := jittered(maxAge, d.dir); limit > 0 && now.Sub(sum.Built) > limit {
		return fmt.Sprintf("its summary is older than %s", limit.Round(time.Minute))
	}
	return ""
}

// jittered is maxAge less up to a quarter, by dir: summaries made together
// expire over a quarter of maxAge, not in one refresh.
func jittered(maxAge time.Duration, dir string) time.Duration {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dir))
	return maxAge - time.Duration(float64(maxAge/4)*float64(h.Sum32())/float64(1<<32))
}

func markName(key string) string { return key[strings.LastIndexByte(key, '/')+1:] }

// rebuild walks d (Build) and saves the summary, covering the marks seen
// before the walk: a begin with its end (that change is in the store
// before the walk lists it), or one abandoned; a begin still in flight is
// left uncovered, so the next refresh walks d again.
func (s *Storage) rebuild(ctx context.Context, e *env, d fleetDir, opts FleetOptions, why string) *FleetShard {
	covered := coveredMarks(d.marks, d.listed)
	built := time.Now().UTC()
	_, names, err := s.backupNames(ctx, d.dir)
	if err != nil {
		return &FleetShard{Dir: d.dir, Err: err}
	}
	ours, err := holdsOwnBackup(ctx, e, d.dir, names)
	if err == nil && !ours {
		ours, err = s.holdsLegacyBackup(ctx, e, d.dir)
	}
	if err != nil {
		return &FleetShard{Dir: d.dir, Err: fmt.Errorf("cannot list its backups: split storage: listing backups in %s: %w", d.dir, err)}
	}
	sum := summaryDoc{Version: summaryVersion, Dir: d.dir, Built: built, Ours: ours, Covered: covered}
	if ours {
		if sum.Doc, err = opts.Build(ctx, d.dir); err != nil {
			return &FleetShard{Dir: d.dir, Err: err}
		}
	}
	if err := s.saveSummary(ctx, e, d, sum); err != nil {
		why += NotSaved + err.Error()
	}
	if !ours {
		return nil
	}
	return &FleetShard{Dir: d.dir, Doc: sum.Doc, Built: built, Rebuilt: why}
}

// coveredMarks are the names of the marks a walk starting at now covers.
func coveredMarks(marks []backend.ObjectInfo, now time.Time) []string {
	names := map[string]bool{}
	for _, m := range marks {
		names[markName(m.Key)] = true
	}
	var out []string
	for _, m := range marks {
		n := markName(m.Key)
		id, isBegin := strings.CutSuffix(n, beginSuffix)
		if isBegin && !names[id+endSuffix] && (m.Modified.IsZero() || now.Sub(m.Modified) < changeAbandoned) {
			continue // in flight
		}
		out = append(out, n)
	}
	return out
}

// saveSummary creates the next generation of d's summary, then deletes
// the marks it covers and the generations before it. A generation another
// refresh created first wins; this one's answer is as good.
func (s *Storage) saveSummary(ctx context.Context, e *env, d fleetDir, sum summaryDoc) error {
	gen := int64(1)
	if n := len(d.summaries); n > 0 {
		last, err := strconv.ParseInt(markName(d.summaries[n-1].Key), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: not a summary generation", d.summaries[n-1].Key)
		}
		gen = last + 1
	}
	if err := sum.seal(e); err != nil {
		return err
	}
	doc, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	key := fmt.Sprintf("%s%s/%016d", summariesPrefix, d.dir, gen)
	err = e.be.Put(ctx, key, bytes.NewReader(doc), int64(len(doc)), backend.PutOptions{IfNotExists: true, CRC32C: crc32c(doc)})
	if errors.Is(err, ErrExists) {
		return nil
	}
	if err != nil {
		return err
	}
	s.cacheSummary(backend.ObjectInfo{Key: key, Size: int64(len(doc))}, sum)
	covered := map[string]bool{}
	for _, c := range sum.Covered {
		covered[c] = true
	}
	for _, m := range d.marks {
		if covered[markName(m.Key)] {
			_ = e.be.Delete(ctx, m.Key)
		}
	}
	for _, o := range d.summaries {
		_ = e.be.Delete(ctx, o.Key)
		s.forgetSummary(o.Key)
	}
	return nil
}

// readSummary reads and checks a summary; one this Storage read or wrote
// before (same key and size: a generation is never replaced) is not read
// again.
func (s *Storage) readSummary(ctx context.Context, e *env, o backend.ObjectInfo) (summaryDoc, error) {
	if sum, ok := s.cachedSummary(o); ok {
		return sum, nil
	}
	doc, err := readSmall(ctx, e.be, o.Key)
	if err != nil {
		return summaryDoc{}, err
	}
	var sum summaryDoc
	if err := strictJSON(doc, &sum); err != nil {
		return summaryDoc{}, fmt.Errorf("%w %s: %v", errCorruptSummary, o.Key, err)
	}
	if sum.Version != summaryVersion || sum.Dir != fleetObjectDir(o.Key) {
		return summaryDoc{}, fmt.Errorf("%w %s: version %d of directory %q", errCorruptSummary, o.Key, sum.Version, sum.Dir)
	}
	s.cacheSummary(backend.ObjectInfo{Key: o.Key, Size: int64(len(doc))}, sum)
	return sum, nil
}

func (s *Storage) cachedSummary(o backend.ObjectInfo) (summaryDoc, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.summaries[o.Key]
	return c.doc, ok && c.size == o.Size
}

func (s *Storage) cacheSummary(o backend.ObjectInfo, sum summaryDoc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.summaries == nil {
		s.summaries = map[string]cachedSummary{}
	}
	s.summaries[o.Key] = cachedSummary{size: o.Size, doc: sum}
}

// keepSummaries forgets the summaries read before that are no longer
// the newest of their directory.
func (s *Storage) keepSummaries(dirs []fleetDir) {
	newest := map[string]bool{}
	for _, d := range dirs {
		if n := len(d.summaries); n > 0 {
			newest[d.summaries[n-1].Key] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for key := range s.summaries {
		if !newest[key] {
			delete(s.summaries, key)
		}
	}
}

func (s *Storage) forgetSummary(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.summaries, key)
}

type cachedSummary struct {
	size int64
	doc  summaryDoc
}
