package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"

	logutilpb "vitess.io/vitess/go/vt/proto/logutil"
)

func sortStrings(s []string) []string { sort.Strings(s); return s }

// withTimeout applies --timeout to ctx.
func (o *options) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if o.timeout > 0 {
		return context.WithTimeout(ctx, o.timeout)
	}
	return context.WithCancel(ctx)
}

// openStorage opens the backup storage the flags name, logging to stderr.
func (o *options) openStorage(stderr io.Writer) (backupstorage.BackupStorage, logutil.Logger, error) {
	base, err := backupstorage.GetBackupStorage()
	if err != nil {
		return nil, nil, err
	}
	least := logLevels[o.logLevel]
	logger := logutil.NewCallbackLogger(func(ev *logutilpb.Event) {
		if ev.Level >= least || ev.Level == logutilpb.Level_CONSOLE {
			fmt.Fprintf(stderr, "%s\n", logutil.EventString(ev))
		}
	})
	return base.WithParams(backupstorage.Params{Logger: logger, Stats: backupstats.NoStats()}), logger, nil
}

// logLevels are --log-level's values: the least level printed.
var logLevels = map[string]logutilpb.Level{"info": logutilpb.Level_INFO, "warning": logutilpb.Level_WARNING, "error": logutilpb.Level_ERROR}

// pickBackup finds the backup --backup names in the flags' directory, or the
// latest complete one; otherwise it says why on stderr and returns the exit
// status: exitUnreachable when the storage cannot be listed or holds no such
// backup, exitFailed when the backup named is there but incomplete or
// quarantined.
func (o *options) pickBackup(ctx context.Context, bs backupstorage.BackupStorage) (backupstorage.BackupHandle, int) {
	dir := o.dir()
	if root, missing := missingRoot(o); missing {
		return nil, o.failf(exitUnreachable, "the storage root %s does not exist: check the storage flags", root)
	}
	bhs, err := bs.ListBackups(ctx, dir)
	if err != nil {
		return nil, o.failf(exitUnreachable, "cannot list the backups of %s: %v", o.where(), err)
	}
	if o.backup == "" || o.backup == latestVerifiedValue {
		if len(bhs) == 0 {
			return nil, o.failf(exitUnreachable, "no complete backup in %s: check --keyspace and --shard (or --backup-dir) and the storage flags", o.where())
		}
		if o.backup == latestVerifiedValue {
			return o.latestVerified(ctx, bhs)
		}
		return o.latestNotFailed(ctx, bhs, dir), exitOK
	}
	for _, h := range bhs {
		if h.Name() == o.backup {
			return h, exitOK
		}
	}
	why, there := o.whyMissing(ctx, bs, dir)
	if there {
		return nil, o.failf(exitFailed, "FAIL: backup %s/%s in %s: %s", dir, o.backup, storageLocation(o), why)
	}
	return nil, o.failf(exitUnreachable, "backup %s/%s in %s: %s", dir, o.backup, storageLocation(o), why)
}

// latestVerifiedValue is --backup's value for the newest backup whose latest
// test restore passed.
const latestVerifiedValue = "latest-verified"

// latestVerified is the newest of bhs whose latest test restore passed, or,
// when none did, exitFailed with the reason.
func (o *options) latestVerified(ctx context.Context, bhs []backupstorage.BackupHandle) (backupstorage.BackupHandle, int) {
	for i := len(bhs) - 1; i >= 0; i-- {
		if rec, err := testrestore.Load(ctx, bhs[i]); err == nil && rec != nil && rec.Outcome == testrestore.Passed {
			if i < len(bhs)-1 {
				o.notef("taking %s/%s, the newest backup that passed a test restore (%d newer ones did not)", o.dir(), bhs[i].Name(), len(bhs)-1-i)
			}
			return bhs[i], exitOK
		}
	}
	return nil, o.failf(exitFailed, "no backup in %s passed a test restore (%d complete ones): run vtfifo test-restore, or name one with --backup",
		o.where(), len(bhs))
}

// latestNotFailed is the newest of bhs whose latest test restore did not
// fail, saying on stderr which it passed over; the newest when every one
// failed (the operator asked for the latest; the note says so).
func (o *options) latestNotFailed(ctx context.Context, bhs []backupstorage.BackupHandle, dir string) backupstorage.BackupHandle {
	for i := len(bhs) - 1; i >= 0; i-- {
		rec, err := testrestore.Load(ctx, bhs[i])
		if err != nil || rec == nil || rec.Outcome != testrestore.Failed {
			return bhs[i]
		}
		o.notef("skipping %s/%s: its test restore of %s failed (%s); name it with --backup to use it anyway",
			dir, bhs[i].Name(), rec.Started.Format("2006-01-02 15:04"), rec.Error)
	}
	o.notef("every backup in %s failed its test restore: taking the newest, %s", dir, bhs[len(bhs)-1].Name())
	return bhs[len(bhs)-1]
}

// verify checks the backup the session's flags name, or with --all every
// complete backup of the shard (or lists or removes the incomplete ones),
// and returns the exit status.
func (s *session) verify(stdout, stderr io.Writer) int {
	o, ctx, bs := s.o, s.ctx, s.bs
	dir := o.dir()
	if o.listIncomplete || o.removeIncomplete {
		return o.incomplete(ctx, bs, dir, stdout, stderr)
	}
	var bhs []backupstorage.BackupHandle
	if o.all {
		if root, missing := missingRoot(o); missing {
			return o.failf(exitUnreachable, "the storage root %s does not exist: check the storage flags", root)
		}
		var err error
		if bhs, err = bs.ListBackups(ctx, dir); err != nil {
			return o.failf(exitUnreachable, "cannot list the backups of %s: %v", o.where(), err)
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
	if !o.all {
		if code := s.readsOnly(bhs[0], streamEngines); code >= 0 {
			return code
		}
	}
	code := exitOK
	var results []VerifyResult
	for _, bh := range bhs {
		if m, _, err := fifobackupengine.ReadAnyManifest(ctx, bh); o.all && err == nil && m.BackupMethod != "" && !slices.Contains(streamEngines, m.BackupMethod) {
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
		if !o.json {
			res.print(stdout)
		}
	}
	if o.json && len(results) > 0 {
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
	Seconds    float64  `json:"seconds"`
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
	if !r.OK {
		return
	}
	fmt.Fprintf(w, "OK: backup %s: %s (%v)\n", r.Backup, r.Summary, took)
}

// verifyOne checks one backup and prints OK or FAIL with every problem on
// stdout. A check the --timeout (or an interrupt) cut short says so on
// stderr and returns exitUnreachable: nothing says the backup is damaged.
func (s *session) verifyOne(bh backupstorage.BackupHandle, stderr io.Writer) (VerifyResult, int) {
	o, ctx := s.o, s.ctx
	where := o.dir() + "/" + bh.Name()
	o.notef("checking backup %s (%s storage)", where, backupstorage.BackupStorageImplementation)
	start := time.Now()
	prog := newProgress(o, stderr, o.prog+" "+where)
	var problems, unread []string
	summary := ""
	pv, isSplit := bh.(partVerifier)
	if isSplit {
		problems, unread, summary = s.verifyParts(bh, pv, prog, stderr)
	}
	if o.samplePct >= 100 {
		// Also when the listing found problems: decoding may find more
		// (and names the lane and offset).
		vr, err := fifobackupengine.Verify(ctx, bh, fifobackupengine.VerifyOptions{
			Compression: fifobackupengine.CompressionFromFlags(o.flags),
			OnRead:      prog.addLane,
			Logger:      s.logger,
			OnManifest:  prog.setLanes,
		})
		switch {
		case err != nil && isSplit && len(problems) == 0 && ctx.Err() == nil:
			// Decoding stops at the first part it cannot use, damaged or
			// not read: every part's bytes are read against their
			// checksums to name each damaged one and each not read, so
			// that damage is never hidden behind what could not be read.
			_, all := pv.VerifyParts(ctx, splitstorage.VerifyPartsOptions{Concurrency: o.concurrency, MaxProblems: 1 << 20})
			problems, unread = splitProblems(all)
			switch {
			case len(problems)+len(unread) > 0:
			case unreadable.Is(err):
				unread = []string{errText(err)}
			default:
				problems = []string{errText(err)}
			}
		case unreadable.Is(err):
			if len(unread) == 0 {
				unread = []string{errText(err)}
			}
		case err != nil:
			problems = append(problems, errText(err))
		case vr.Manifest.BackupMethod != "fifo":
			summary = fmt.Sprintf("Vitess's %s engine's stream in %d stored files, %d files, %s of data, every chunk checked",
				vr.Manifest.BackupMethod, len(vr.Manifest.Lanes), vr.Files, humanize.IBytes(uint64(vr.Bytes)))
		default:
			summary = fmt.Sprintf("%d lanes, %d files, %s of data in %s stored, every part and chunk checked",
				len(vr.Manifest.Lanes), vr.Files, humanize.IBytes(uint64(vr.Bytes)), humanize.IBytes(uint64(vr.Manifest.StoredBytes)))
		}
	}
	prog.stop()
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
		Seconds: took.Seconds()}
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

// verifyParts checks every part of a split storage backup: present, its
// recorded size, the indexes consistent, no stray objects; and the bytes
// of the parts --sample picks (all of them are read below, through the
// storage, in a full check). A sample always checks at least one part.
func (s *session) verifyParts(bh backupstorage.BackupHandle, pv partVerifier, prog *progress,
	stderr io.Writer) (problems, unread []string, summary string) {
	o, ctx := s.o, s.ctx
	popts := splitstorage.VerifyPartsOptions{Concurrency: o.concurrency}
	if o.samplePct >= 100 {
		popts.Sample = func(string, int) bool { return false }
		_, err := pv.VerifyParts(ctx, popts)
		problems, unread = splitProblems(err)
		return problems, unread, ""
	}
	seed := o.seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	o.notef("sampling %g%% of the parts (--sample-seed=%d)", o.samplePct, seed)
	popts.Sample = func(file string, part int) bool {
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s/%d", seed, file, part)
		return rand.New(rand.NewPCG(h.Sum64(), 0)).Float64()*100 < o.samplePct
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
			unread = append(unread, errText(err))
		} else if err != nil {
			problems = append(problems, errText(err))
		}
	}
	return problems, unread, summary
}

// splitProblems turns VerifyParts' joined problems into lines: proven
// damage, and what could not be read or reached (go/internal/unreadable).
func splitProblems(err error) (damage, unread []string) {
	if err == nil {
		return nil, nil
	}
	for _, e := range splitstorage.ProblemsOf(err) {
		if unreadable.Is(e) {
			unread = append(unread, errText(e))
		} else {
			damage = append(damage, errText(e))
		}
	}
	return damage, unread
}

func checkManifestOnly(ctx context.Context, bh backupstorage.BackupHandle) error {
	_, err := fifobackupengine.ReadManifest(ctx, bh)
	return err
}

// whyMissing says why a named backup is not among the complete ones, and
// whether it is there at all (incomplete, quarantined, or kept as a base).
func (o *options) whyMissing(ctx context.Context, bs backupstorage.BackupStorage, dir string) (string, bool) {
	if s, ok := bs.(incompleteLister); ok {
		inc, err := s.ListIncomplete(ctx, dir)
		if err == nil {
			for _, b := range inc {
				switch {
				case b.Name != o.backup:
				case len(b.RetiredFor) > 0:
					return fmt.Sprintf("removed from the list, kept as the base of %s; restore never picks it, restoring those reads it",
						strings.Join(b.RetiredFor, ", ")), true
				case b.Quarantined != "":
					return fmt.Sprintf("quarantined: %s; restore never picks it; `vtfifo release` puts it back, `vtfifo rm` removes it", b.Quarantined), true
				default:
					return fmt.Sprintf("incomplete: started %s on %s, never completed (a failed or killed backup, or one still running); restore never picks it; "+
						"remove it with --remove-incomplete",
						b.Started.Format(time.RFC3339), b.Host), true
				}
			}
		}
	}
	return "no such backup (GetBackups does not list it): check --backup, --keyspace and --shard", false
}

// incompleteLine describes an incomplete backup: when it started and on
// which host (its start marker), when it was last written to (the store's
// own time: its age), and its objects.
func incompleteLine(dir string, b splitstorage.IncompleteBackup) string {
	return fmt.Sprintf("%s/%s: started %s on %s, last written %s (%v ago), %d objects, %s", dir, b.Name, b.Started.Format(time.RFC3339), b.Host,
		b.LastWrite.Format(time.RFC3339), time.Since(b.LastWrite).Round(time.Second), b.Objects, humanize.IBytes(uint64(b.Bytes)))
}

func (o *options) incomplete(ctx context.Context, bs backupstorage.BackupStorage, dir string, stdout, stderr io.Writer) int {
	s, err := can[interface {
		incompleteLister
		backupstorage.BackupStorage
	}](bs, "list or remove incomplete backups (--list-incomplete, --remove-incomplete)")
	if err != nil {
		return o.failf(exitUsage, "%v", err)
	}
	inc, err := s.ListIncomplete(ctx, dir)
	if err != nil {
		fmt.Fprintf(stderr, "%s: cannot list the incomplete backups of %s: %s\n", o.prog, o.where(), errText(err))
		return exitUnreachable
	}
	failed := false
	for _, b := range inc {
		line := incompleteLine(dir, b)
		if b.Quarantined != "" {
			line += "; quarantined: " + b.Quarantined
		}
		if len(b.RetiredFor) > 0 {
			line += "; removed from the list, kept as the base of " + strings.Join(b.RetiredFor, ", ")
		}
		switch {
		case o.listIncomplete:
			fmt.Fprintf(stdout, "incomplete %s\n", line)
		case len(b.RetiredFor) > 0:
			fmt.Fprintf(stdout, "kept %s (it goes with the last of them)\n", line)
		case b.Quarantined != "":
			fmt.Fprintf(stdout, "kept %s (release it with `vtfifo release`, or remove it with `vtfifo rm`)\n", line)
		case len(b.Held) > 0:
			fmt.Fprintf(stdout, "kept %s: in use (%s)\n", line, strings.Join(b.Held, "; "))
		case time.Since(b.LastWrite) < o.minAge:
			fmt.Fprintf(stdout, "kept %s: written to less than --incomplete-min-age=%v ago (may still be running)\n", line, o.minAge)
		default:
			if err := s.RemoveBackup(ctx, dir, b.Name); err != nil {
				fmt.Fprintf(stderr, "FAIL removing %s: %s\n", line, errText(err))
				failed = true
				continue
			}
			fmt.Fprintf(stdout, "removed %s\n", line)
		}
	}
	if len(inc) == 0 {
		fmt.Fprintf(stdout, "no incomplete backup in %s\n", dir)
	}
	if failed {
		return 1
	}
	return 0
}
