package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// verify checks the backup the session's flags name, or with --all every
// complete backup of the shard (or lists or removes the incomplete ones),
// and returns the exit status.
func (s *verifyRun) verify(stdout, stderr io.Writer) int {
	o, ctx, bs := s.o, s.ctx, s.bs
	dir := o.dir()
	if s.f.listIncomplete || s.f.removeIncomplete {
		return s.incomplete(dir, stdout, stderr)
	}
	var bhs []backupstorage.BackupHandle
	if s.f.all {
		var code int
		if bhs, code = o.listComplete(ctx, bs); code != exitOK {
			return code
		}
		if len(bhs) == 0 {
			return o.failf(exitUnreachable, "no complete backup in %s: check --keyspace and --shard (or --backup-dir) and the storage flags", o.where())
		}
	} else {
		bh, code := o.pickBackup(ctx, bs)
		if bh == nil {
			return code
		}
		bhs = []backupstorage.BackupHandle{bh}
	}
	if !s.f.all {
		if code := s.readsOnly(bhs[0], streamEngines); code >= 0 {
			return code
		}
	}
	code := exitOK
	var results []VerifyResult
	for _, bh := range bhs {
		if m, _, err := fifobackupengine.ReadAnyManifest(ctx, bh); s.f.all && err == nil && m.BackupMethod != "" && !slices.Contains(streamEngines, m.BackupMethod) {
			fmt.Fprintf(stdout, "SKIP: backup %s/%s: taken by Vitess's %s engine (in the %s storage): vtfifo verifies %s backups only\n", dir, bh.Name(),
				m.BackupMethod, s.origin(bh), strings.Join(streamEngines, " and "))
			continue
		}
		res, c := s.verifyOne(bh, stderr)
		code = worse(code, c)
		if res.Backup == "" {
			break // stopped: out of time or interrupted
		}
		results = append(results, res)
		if !s.f.json {
			res.print(stdout)
		}
	}
	if s.f.json && len(results) > 0 {
		writeJSON(stdout, results)
	}
	return code
}

// worse is the status of a run of checks: damage found anywhere (1) before
// what could not be read (3).
func worse(a, b int) int {
	if a == exitFailed || b == exitFailed {
		return exitFailed
	}
	return max(a, b)
}

// VerifyResult is what verify found in one backup (--json prints them).
type VerifyResult struct {
	Backup   string   `json:"backup"`
	OK       bool     `json:"ok"`
	Summary  string   `json:"summary,omitempty"`
	Problems []string `json:"problems,omitempty"`
	// Unreadable are the objects that could not be read or reached (a
	// permission, a timeout): not damage, and not checked.
	Unreadable []string `json:"unreadable,omitempty"`
	// Unlisted are the objects in the backup's directory that it does not
	// list (left over, or put there by hand): a restore never reads them,
	// so they are no problem of the backup, and no command removes those
	// the split storage does not write.
	Unlisted []string `json:"unlisted,omitempty"`
	// NotChecked says why the backup was not checked at all: what is
	// there is another backup's, copied or renamed here (a usage error).
	NotChecked string  `json:"not_checked,omitempty"`
	Seconds    float64 `json:"seconds"`
}

func (r VerifyResult) print(w io.Writer) {
	took := time.Duration(r.Seconds * float64(time.Second)).Round(time.Millisecond)
	if len(r.Problems) > 0 {
		fmt.Fprintf(w, "FAIL: backup %s: %d problem(s) (%v):\n", r.Backup, len(r.Problems), took)
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	if len(r.Unreadable) > 0 {
		fmt.Fprintf(w, "FAIL: backup %s: %d could not be read or reached, so were not checked (nothing says they are damaged):\n", r.Backup, len(r.Unreadable))
		for _, p := range r.Unreadable {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	if r.NotChecked != "" {
		fmt.Fprintf(w, "NOT CHECKED: %s\n", r.NotChecked)
	}
	if r.OK {
		fmt.Fprintf(w, "OK: backup %s: %s (%v)\n", r.Backup, r.Summary, took)
	}
	for _, k := range r.Unlisted {
		fmt.Fprintf(w, "  note: %s is in the backup's directory but not part of the backup (left over, or put there by hand): no restore reads it\n", k)
	}
}

// verifyOne checks one backup and prints OK or FAIL with every problem on
// stdout: its own objects (verifyOwn), then what a restore of it reads
// before it (verifyChain). A check the --timeout (or an interrupt) cut
// short says so on stderr and returns exitUnreachable: nothing says the
// backup is damaged.
func (s *verifyRun) verifyOne(bh backupstorage.BackupHandle, stderr io.Writer) (VerifyResult, int) {
	o, ctx := s.o, s.ctx
	where := o.dir() + "/" + bh.Name()
	start := time.Now()
	own := s.verifyOwn(bh, stderr)
	if own.NotChecked != "" {
		return own.VerifyResult, own.code
	}
	problems, unread, summary := own.Problems, own.Unreadable, own.Summary
	if len(problems)+len(unread) == 0 && ctx.Err() == nil {
		var bases int
		problems, unread, bases = s.verifyChain(bh, stderr)
		if bases > 0 {
			summary += fmt.Sprintf("; and the %d backups of its chain before it, each verified whole as well", bases)
		}
	}
	took := time.Since(start).Round(time.Millisecond)
	if err := ctx.Err(); err != nil {
		why := "interrupted"
		if errors.Is(err, context.DeadlineExceeded) {
			why = fmt.Sprintf("out of time (--timeout=%v)", o.timeout)
		}
		return VerifyResult{}, o.failf(exitUnreachable, "the check of backup %s in %s stopped after %v, %s: it is not known whether the backup is damaged",
			where, storageLocation(o), took, why)
	}
	slices.Sort(problems)
	slices.Sort(unread)
	res := VerifyResult{Backup: where, OK: len(problems)+len(unread) == 0, Summary: summary, Problems: problems, Unreadable: unread,
		Unlisted: own.Unlisted, Seconds: took.Seconds()}
	switch {
	case len(problems) > 0:
		res.Summary = ""
		return res, exitFailed
	case len(unread) > 0:
		res.Summary = ""
		return res, exitUnreachable
	}
	return res, exitOK
}

// ownResult is what verifyOwn found in a backup's own objects.
type ownResult struct {
	VerifyResult
	code int // with NotChecked: the status
}

// verifyOwn checks one backup's own objects: every part, lane and chunk
// (or --sample's share of the parts), once a run (verifyChain asks again
// for every base of a chain).
func (s *verifyRun) verifyOwn(bh backupstorage.BackupHandle, stderr io.Writer) ownResult {
	if res, ok := s.checked[bh.Name()]; ok {
		return res
	}
	o, ctx := s.o, s.ctx
	where := o.dir() + "/" + bh.Name()
	o.notef("checking backup %s (%s storage)", where, backupstorage.BackupStorageImplementation)
	start := time.Now()
	prog := newProgress(o, stderr, o.prog+" "+where)
	defer prog.stop()
	var res ownResult
	pv, isSplit := has[partVerifier](bh)
	if isSplit {
		if err := pv.CheckPlace(ctx); err != nil && ctx.Err() == nil {
			return ownResult{VerifyResult{Backup: where, NotChecked: errtext.Line(err), Seconds: time.Since(start).Seconds()}, failureStatus(err)}
		}
		res.Problems, res.Unreadable, res.Unlisted, res.Summary = s.verifyParts(bh, pv, prog, stderr)
	}
	if s.f.samplePct >= 100 {
		s.decodeLanes(bh, pv, isSplit, prog, &res.VerifyResult)
	}
	if ctx.Err() == nil {
		if s.checked == nil {
			s.checked = map[string]ownResult{}
		}
		s.checked[bh.Name()] = res
	}
	return res
}

// decodeLanes reads every lane of bh as a restore would, decompressed,
// every xbstream chunk and its CRC32 checked, into res.
func (s *verifyRun) decodeLanes(bh backupstorage.BackupHandle, pv partVerifier, isSplit bool, prog *progress, res *VerifyResult) {
	ctx := s.ctx
	// Also when the listing found problems: decoding may find more (and
	// names the lane and offset).
	vr, err := fifobackupengine.Verify(ctx, bh, fifobackupengine.VerifyOptions{
		Compression: fifobackupengine.CompressionFromFlags(s.o.flags),
		OnRead:      prog.addLane,
		Logger:      s.logger,
		OnManifest:  prog.setLanes,
	})
	switch {
	case err != nil && isSplit && len(res.Problems) == 0 && ctx.Err() == nil:
		// Decoding stops at the first part it cannot use, damaged or not
		// read: every part's bytes are read against their checksums to
		// name each damaged one and each not read, so that damage is
		// never hidden behind what could not be read.
		_, all := pv.VerifyParts(ctx, splitstorage.VerifyPartsOptions{Concurrency: s.f.concurrency, MaxProblems: 1 << 20})
		res.Problems, res.Unreadable = splitProblems(all)
		switch {
		case len(res.Problems)+len(res.Unreadable) > 0:
		case unreadable.Is(err):
			res.Unreadable = []string{errtext.Line(err)}
		default:
			res.Problems = []string{errtext.Line(err)}
		}
	case unreadable.Is(err):
		if len(res.Unreadable) == 0 {
			res.Unreadable = []string{errtext.Line(err)}
		}
	case err != nil:
		res.Problems = append(res.Problems, errtext.Line(err))
	case vr.Manifest.BackupMethod != "fifo":
		res.Summary = fmt.Sprintf("Vitess's %s engine's stream in %d stored files, %d files, %s of data, every chunk checked",
			vr.Manifest.BackupMethod, len(vr.Manifest.Lanes), vr.Files, humanize.IBytes(uint64(vr.Bytes)))
	default:
		res.Summary = fmt.Sprintf("%d lanes, %d files, %s of data in %s stored, every part and chunk checked",
			len(vr.Manifest.Lanes), vr.Files, humanize.IBytes(uint64(vr.Bytes)), humanize.IBytes(uint64(vr.Manifest.StoredBytes)))
	}
}

// verifyChain checks what a restore of bh reads before bh itself: every
// base of its chain there, its MANIFEST whole and following
// (ChainBases), and its own objects verified as bh's were (verifyOwn),
// so that OK on a delta means its restore reads nothing damaged. A base's
// problem is bh's too, named after the base.
func (s *verifyRun) verifyChain(bh backupstorage.BackupHandle, stderr io.Writer) (problems, unread []string, bases int) {
	chain, err := fifobackupengine.ChainBases(s.ctx, bh)
	switch {
	case unreadable.Is(err):
		return nil, []string{errtext.Line(err)}, 0
	case err != nil:
		return []string{errtext.Line(err)}, nil, 0
	}
	for _, base := range chain {
		own := s.verifyOwn(base, stderr)
		if s.ctx.Err() != nil {
			return nil, nil, 0
		}
		if own.NotChecked != "" {
			unread = append(unread, fmt.Sprintf("its base %s was not checked: %s", base.Name(), own.NotChecked))
		}
		for _, p := range own.Problems {
			problems = append(problems, fmt.Sprintf("its base %s is damaged: %s", base.Name(), p))
		}
		for _, u := range own.Unreadable {
			unread = append(unread, fmt.Sprintf("its base %s could not be read: %s", base.Name(), u))
		}
	}
	return problems, unread, len(chain)
}

// verifyParts checks every part of a split storage backup: present, its
// recorded size, the indexes consistent (the objects it does not list are
// returned, unlisted, never judged); and the bytes
// of the parts --sample picks (all of them are read below, through the
// storage, in a full check). A sample always checks at least one part.
func (s *verifyRun) verifyParts(bh backupstorage.BackupHandle, pv partVerifier, prog *progress,
	stderr io.Writer) (problems, unread, unlisted []string, summary string) {
	o, ctx := s.o, s.ctx
	popts := splitstorage.VerifyPartsOptions{Concurrency: s.f.concurrency}
	if s.f.samplePct >= 100 {
		popts.Sample = func(string, int) bool { return false }
		rep, err := pv.VerifyParts(ctx, popts)
		problems, unread = splitProblems(err)
		return problems, unread, rep.Unlisted, ""
	}
	seed := s.f.seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	o.notef("sampling %g%% of the parts (--sample-seed=%d)", s.f.samplePct, seed)
	popts.Sample = func(file string, part int) bool {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s/%d", seed, file, part)
		return rand.New(rand.NewPCG(h.Sum64(), 0)).Float64()*100 < s.f.samplePct
	}
	popts.OnPart = func(_ string, _ int, n int64) { prog.add(n, 1) }
	rep, err := pv.VerifyParts(ctx, popts)
	problems, unread = splitProblems(err)
	if len(problems)+len(unread) == 0 && rep.PartsChecked == 0 && rep.Parts > 0 {
		// The sample picked none: one part, chosen by the seed, is read,
		// so that an OK always rests on bytes read back.
		target, n := uint64(seed)%uint64(rep.Parts), uint64(0)
		popts.Sample = func(string, int) bool { n++; return n-1 == target }
		rep, err = pv.VerifyParts(ctx, popts)
		problems, unread = splitProblems(err)
	}
	prog.setTotal(rep.Bytes)
	summary = fmt.Sprintf("%d files, %d of %d parts checked (%s of %s), every part's size checked; lanes not decoded (sample)",
		len(rep.Files), rep.PartsChecked, rep.Parts, humanize.IBytes(uint64(rep.BytesChecked)), humanize.IBytes(uint64(rep.Bytes)))
	// The MANIFEST must still parse as restore would parse it.
	if len(problems)+len(unread) == 0 {
		if err := checkManifestOnly(ctx, bh); unreadable.Is(err) {
			unread = append(unread, errtext.Line(err))
		} else if err != nil {
			problems = append(problems, errtext.Line(err))
		}
	}
	return problems, unread, rep.Unlisted, summary
}

// splitProblems turns VerifyParts' joined problems into lines: proven
// damage, and what could not be read or reached (go/internal/unreadable).
func splitProblems(err error) (damage, unread []string) {
	if err == nil {
		return nil, nil
	}
	d, u := splitstorage.SplitProblems(err)
	for _, e := range d {
		damage = append(damage, errtext.Line(e))
	}
	for _, e := range u {
		unread = append(unread, errtext.Line(e))
	}
	return damage, unread
}

func checkManifestOnly(ctx context.Context, bh backupstorage.BackupHandle) error {
	_, err := fifobackupengine.ReadManifest(ctx, bh)
	return err
}

// incompleteLine describes an incomplete backup: when it started and on
// which host (its start marker), when it was last written to (the store's
// own time: its age), and its objects.
func incompleteLine(dir string, b splitstorage.IncompleteBackup, now time.Time) string {
	return fmt.Sprintf("%s/%s: started %s on %s, last written %s (%v ago), %d objects, %s", dir, b.Name, b.Started.Format(time.RFC3339), b.Host,
		b.LastWrite.Format(time.RFC3339), now.Sub(b.LastWrite).Round(time.Second), b.Objects, humanize.IBytes(uint64(b.Bytes)))
}

func (s *verifyRun) incomplete(dir string, stdout, stderr io.Writer) int {
	o, ctx := s.o, s.ctx
	bs, err := can[interface {
		incompleteLister
		backupstorage.BackupStorage
	}](s.bs, "list or remove incomplete backups (--list-incomplete, --remove-incomplete)")
	if err != nil {
		return o.failf(exitUsage, "%v", err)
	}
	inc, err := bs.ListIncomplete(ctx, dir)
	if err != nil {
		fmt.Fprintf(stderr, "%s: cannot list the incomplete backups of %s: %s\n", o.prog, o.where(), errtext.Line(err))
		return exitUnreachable
	}
	failed, locked := false, false
	now := hostNow()
	if s.f.removeIncomplete && len(inc) > 0 {
		now = s.judgingNow()
	}
	for _, b := range inc {
		line := incompleteLine(dir, b, now)
		if b.Quarantined != "" {
			line += "; " + oneLine(quarantinedText(b.Quarantined), b.Name)
		}
		if len(b.RetiredFor) > 0 {
			line += "; removed from the list, kept as the base of " + strings.Join(b.RetiredFor, ", ")
		}
		switch {
		case s.f.listIncomplete:
			fmt.Fprintf(stdout, "incomplete %s\n", line)
		case len(b.RetiredFor) > 0:
			fmt.Fprintf(stdout, "kept %s (it goes with the last of them)\n", line)
		case b.Quarantined != "":
			fmt.Fprintf(stdout, "kept %s (release it with `vtfifo release`, or remove it with `vtfifo rm`)\n", line)
		case len(b.Held) > 0:
			fmt.Fprintf(stdout, "kept %s: in use (%s)\n", line, strings.Join(b.Held, "; "))
		case now.Sub(b.LastWrite) < s.f.minAge:
			fmt.Fprintf(stdout, "kept %s: written to less than --incomplete-min-age=%v ago (may still be running)\n", line, s.f.minAge)
		default:
			if err := bs.RemoveBackup(ctx, dir, b.Name); errors.Is(err, splitstorage.ErrLocked) {
				fmt.Fprintf(stderr, "refused removing %s: %s\n", line, errtext.Line(err))
				locked = true
				continue
			} else if err != nil {
				fmt.Fprintf(stderr, "FAIL removing %s: %s\n", line, errtext.Line(err))
				failed = true
				continue
			}
			fmt.Fprintf(stdout, "removed %s\n", line)
		}
	}
	if len(inc) == 0 {
		fmt.Fprintf(stdout, "no incomplete backup in %s\n", dir)
	}
	switch {
	case failed:
		return 1
	case locked:
		return 2 // a removal no retry makes before the lock's date
	}
	return 0
}

// verifyDoc is `vtfifo verify`'s help.
var verifyDoc = commandDoc{"verify", "Check a backup without restoring it (every part, lane and chunk)",
	"Reads a backup as restore would and writes nothing: every part's size and checksum (split storage),\n" +
		"every lane decompressed, every xbstream chunk and its CRC32; for an incremental backup also its chain, as\n" +
		"its restore reads it (each base there, following it, and read whole in the same way: a base's damage is the\n" +
		"delta's, named after the base).\n" +
		"Prints OK, or what is wrong and where.\n" +
		"A backup of Vitess's xtrabackup engine (an adopted fleet's, docs/migration.md) is read too: its stream,\n" +
		"from its stripes, every chunk checked. The same as fifoverify.",
	"  vtfifo verify --backup-storage-implementation=split --split-storage-backend=s3 --split-storage-s3-bucket=b \\\n" +
		"      --keyspace=commerce --shard=0 [--backup=NAME] [--sample=5%]"}

// Verify is `vtfifo verify` and fifoverify: it checks a backup where it is
// stored (see docs/reliability.md) and returns the exit status.
func Verify(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var f verifyFlags
	s, code := openSession(ctx, prog, args, stdout, stderr, f.register)
	if s == nil {
		return code
	}
	defer s.close()
	return (&verifyRun{session: s, f: &f}).verify(stdout, stderr)
}

// verifyRun is a verify of the session's backups with verify's own flags.
type verifyRun struct {
	*session
	f *verifyFlags
	// checked is what verifyOwn found in each backup, by name.
	checked map[string]ownResult
}

// verifyFlags are verify's own flags.
type verifyFlags struct {
	sample      string
	samplePct   float64
	seed        int64
	concurrency int
	// all: verify every complete backup of the shard.
	all bool
	// json: print the results as JSON.
	json             bool
	listIncomplete   bool
	removeIncomplete bool
	minAge           time.Duration
}

// register declares verify's own flags and returns their check.
func (f *verifyFlags) register(fs *pflag.FlagSet, o *options) func() error {
	fs.StringVar(&f.sample, "sample", "100%", "share of parts to download and check, e.g. 5%; below 100% the lanes are not decompressed (a lane "+
		"cannot be decoded from a sample) but every part's presence and size is still checked; needs the split storage")
	fs.BoolVar(&f.json, "json", false, "print the results as one JSON array (backup, ok, summary, problems, unreadable, unlisted, seconds) instead of OK/FAIL lines")
	fs.BoolVar(&f.all, "all", false, "check every complete backup of the shard, oldest first (one OK or FAIL line each), instead of one")
	fs.Int64Var(&f.seed, "sample-seed", 0, "seed of the --sample choice; 0 picks one (printed, to repeat a run)")
	o.registerProgressFlags(fs)
	fs.IntVar(&f.concurrency, "concurrency", 4, "parts downloaded at once by --sample, 1..64")
	fs.BoolVar(&f.listIncomplete, "list-incomplete", false, "list the backups that were started and never completed (split storage), then exit")
	fs.BoolVar(&f.removeIncomplete, "remove-incomplete", false, "remove the backups of the split storage that were started and never completed, "+
		"last written to more than --incomplete-min-age ago and held by no lease (a running copy holds one), then exit; a directory the split "+
		"storage cannot prove it wrote is never touched")
	fs.DurationVar(&f.minAge, "incomplete-min-age", 24*time.Hour, "with --remove-incomplete: only backups last written to at least this long ago, "+
		"by the store's own clock (a backup still running is incomplete too)")
	return func() error { return f.validate(o) }
}

// validate checks verify's own flags.
func (f *verifyFlags) validate(o *options) error {
	pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(f.sample), "%"), 64)
	if err != nil || pct <= 0 || pct > 100 {
		return invalid("sample", f.sample, "a percentage in (0%, 100%], e.g. 5%")
	}
	f.samplePct = pct
	if err := o.validateProgress(); err != nil {
		return err
	}
	if f.concurrency < 1 || f.concurrency > 64 {
		return invalid("concurrency", strconv.Itoa(f.concurrency), "1..64")
	}
	if f.minAge < 0 {
		return invalid("incomplete-min-age", f.minAge.String(), "a duration >= 0")
	}
	if f.listIncomplete && f.removeIncomplete {
		return fmt.Errorf("--list-incomplete and --remove-incomplete are exclusive")
	}
	if f.all && (o.backup != "" || f.listIncomplete || f.removeIncomplete) {
		return fmt.Errorf("--all checks every complete backup: leave out --backup, --list-incomplete and --remove-incomplete")
	}
	if impl := backupstorage.BackupStorageImplementation; impl != splitstorage.Name && (f.samplePct < 100 || f.listIncomplete || f.removeIncomplete) {
		return fmt.Errorf("--sample below 100%%, --list-incomplete and --remove-incomplete need --backup-storage-implementation=split (it is %s)", impl)
	}
	return nil
}
