package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/retention"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// pruneDoc is `vtfifo prune`'s help.
var pruneDoc = commandDoc{"prune", "Remove the complete backups beyond the newest --keep and older than --keep-within",
	"Keeps the newest --keep complete backups (at least 1; one whose test restore failed, or whose MANIFEST or chain\n" +
		"of bases is damaged, missing or could not be read, does not count), every backup younger than --keep-within, the newest of\n" +
		"each of the last --keep-daily days, --keep-weekly weeks and --keep-monthly months, and the newest that passed a\n" +
		"test restore, saying why each is kept; removes the other complete ones, oldest first, never one being read.\n" +
		"--dry-run takes the same decisions and prints what it would remove.",
	"  vtfifo prune --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce --shard=0 \\\n" +
		"      --keep=7 --keep-within=168h --dry-run"}

// Prune is `vtfifo prune`: removes the complete backups that are neither
// among the newest --keep nor younger than --keep-within.
func Prune(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var keep *int
	var within time.Duration
	var tiers retention.Tiers
	var dryRun, asJSON *bool
	var renew time.Duration
	s, code := openSession(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			keep = fs.Int("keep", 0, "how many of the newest complete backups are always kept (at least 1; required)")
			fs.Var(flagvalue.Age{P: &within, Allowed: "an age >= 0 such as 36h, 7d or 2w"}, "keep-within", "also keep every backup younger than this (e.g. 7d, 36h)")
			fs.IntVar(&tiers.Daily, "keep-daily", 0, "also keep the newest backup of each of the last N days that have one (UTC)")
			fs.IntVar(&tiers.Weekly, "keep-weekly", 0, "also keep the newest backup of each of the last N ISO weeks that have one")
			fs.IntVar(&tiers.Monthly, "keep-monthly", 0, "also keep the newest backup of each of the last N months that have one")
			fs.DurationVar(&renew, "renew-locks", 0, "after pruning, lock every backup kept (and the backups it needs) until this long from now, "+
				"extending their locks (as vtfifo lock does): a kept backup is never unlocked by the calendar; run it as often as the locks need; "+
				"0: no lock is touched")
			dryRun = fs.Bool("dry-run", false, "print what would be removed, remove nothing")
			asJSON = fs.Bool("json", false, "print one JSON object (kept with why, removed, would_remove, failed) instead of lines")
			refuseBackup := o.refuseBackup(fs, "prune", "it chooses by --keep and --keep-within")
			return func() error {
				if err := refuseBackup(); err != nil {
					return err
				}
				if !fs.Changed("keep") {
					return errors.New("--keep is required: how many of the newest complete backups are always kept (1 or more; the newest backup is never pruned)")
				}
				if *keep < 1 {
					return invalid("keep", fmt.Sprint(*keep), "1 or more (the newest backup is never pruned)")
				}
				if renew != 0 && (renew < 24*time.Hour || renew > 100*365*24*time.Hour) {
					return invalid("renew-locks", renew.String(), "0 (none) or 24h..876000h (a day to 100 years)")
				}
				for _, f := range []struct {
					name string
					n    int
				}{{"keep-daily", tiers.Daily}, {"keep-weekly", tiers.Weekly}, {"keep-monthly", tiers.Monthly}} {
					if f.n < 0 {
						return invalid(f.name, fmt.Sprint(f.n), "0 or more")
					}
				}
				return nil
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	dir := s.o.dir()
	bhs, code := s.shardBackups()
	if code != exitOK {
		return code
	}
	out := &pruneOutput{w: stdout, text: !*asJSON}
	uncounted, now := testrestore.UncountedFunc(s.ctx), s.judgingNow()
	keepN := retention.KeepCount(bhs, *keep, func(bh backupstorage.BackupHandle) bool { return uncounted(bh) != "" })
	cands, tiered := retention.KeepTiers(bhs, retention.Candidates(bhs, keepN, within, now), tiers)
	undated := "" // the oldest backup whose name carries no time: retention stops there
	for i, bh := range bhs {
		if _, dated := retention.Dated(bh); !dated && undated == "" {
			undated = bh.Name()
		}
		switch why, ok := tiered[bh.Name()]; {
		case ok:
			out.keep(dir+"/"+bh.Name(), why)
		case len(bhs)-i <= keepN && uncounted(bh) != "":
			out.keep(dir+"/"+bh.Name(), fmt.Sprintf("newer than the oldest of the newest %d that did not fail a test restore (--keep); %s", *keep,
				uncounted(bh)))
		case len(bhs)-i <= keepN:
			out.keep(dir+"/"+bh.Name(), fmt.Sprintf("one of the newest %d that did not fail a test restore (--keep)", *keep))
		case !slices.Contains(cands, bh) && undated == bh.Name():
			out.keep(dir+"/"+bh.Name(), "its name carries no time (Vitess names a backup <date>.<time>.<tablet alias>): its age is not known")
		case !slices.Contains(cands, bh) && undated != "":
			out.keep(dir+"/"+bh.Name(), "newer than "+undated+", whose age is not known")
		case !slices.Contains(cands, bh):
			out.keep(dir+"/"+bh.Name(), "younger than --keep-within="+shortDuration(within))
		}
	}
	cands, proven := retention.KeepProven(bhs, cands, testrestore.PassedFunc(s.ctx))
	if proven != nil {
		out.keep(dir+"/"+proven.Name(), "the newest backup that passed a test restore")
	}
	code = s.prune(dir, cands, *dryRun, out)
	if renew > 0 && !*dryRun {
		code = max(code, s.renewLocks(dir, cands, bhs, now.Add(renew), out))
	}
	if r := out.PruneResult; len(r.Removed)+len(r.WouldRemove)+len(r.Failed) == 0 && out.text {
		fmt.Fprintf(stdout, "nothing to remove in %s: %d kept\n", dir, len(r.Kept))
	}
	if *asJSON {
		writeJSON(stdout, out.PruneResult)
	}
	return code
}

// PruneResult is what prune kept and why, removed (or with --dry-run would
// remove) and failed to remove, and the locks it renewed (--json prints it).
type PruneResult struct {
	Kept        []PruneKept `json:"kept"`
	Removed     []string    `json:"removed,omitempty"`
	WouldRemove []string    `json:"would_remove,omitempty"`
	Failed      []string    `json:"failed,omitempty"`
	Renewed     []string    `json:"renewed,omitempty"`
}

// PruneKept is a backup prune kept, with why.
type PruneKept struct {
	Backup string `json:"backup"`
	Why    string `json:"why"`
}

// pruneOutput records prune's decisions and prints them as lines unless
// --json.
type pruneOutput struct {
	PruneResult
	w    io.Writer
	text bool
}

func (o *pruneOutput) keep(where, why string) {
	o.Kept = append(o.Kept, PruneKept{Backup: where, Why: why})
	if o.text {
		fmt.Fprintf(o.w, "keeping %s: %s\n", where, why)
	}
}

func (o *pruneOutput) removed(done, where string) {
	o.Removed = append(o.Removed, where)
	if o.text {
		fmt.Fprintf(o.w, "%s %s\n", done, where)
	}
}

func (o *pruneOutput) wouldRemove(where string, deps []string) {
	o.WouldRemove = append(o.WouldRemove, where)
	if o.text {
		fmt.Fprintf(o.w, "%s %s\n", removalText("would remove", deps), where)
	}
}

// prune removes cands (or with dryRun says it would), going on past a
// failure, which it reports.
func (s *session) prune(dir string, cands []backupstorage.BackupHandle, dryRun bool, out *pruneOutput) int {
	code := exitOK
	remove := removeBackup
	if dryRun {
		remove = checkRemovable
	}
	for _, bh := range cands {
		where := dir + "/" + bh.Name()
		deps, err := remove(s, dir, bh.Name())
		switch {
		case errors.Is(err, splitstorage.ErrInUse):
			out.keep(where, strings.TrimPrefix(errtext.Line(err), "split storage: backup "+where+" is not removed: "))
			continue
		case errors.Is(err, splitstorage.ErrLocked):
			// Retention would remove it; its lock says no one may: kept,
			// and the request fails as one that cannot succeed before the date.
			out.keep(where, "locked: "+errtext.Line(err))
			code = s.o.failf(exitUsage, "refused: %v", err)
			continue
		case flagvalue.IsContradiction(err):
			// What is there says no removal can be proven (objects or files
			// the backup does not name): kept, and said.
			out.keep(where, errtext.Line(err))
			code = s.o.failf(exitUsage, "refused: %v", err)
			continue
		case err != nil:
			out.Failed = append(out.Failed, where)
			code = s.o.failf(exitUnreachable, "removing %s failed: %v; the others go on, run prune again", where, err)
			continue
		}
		if dryRun {
			out.wouldRemove(where, deps)
			continue
		}
		out.removed(removalText("removed", deps), where)
	}
	return code
}

// renewLocks locks every backup of bhs that retention kept (not among
// cands) until until, its chain with it: retention keeps, the
// lock holds.
func (s *session) renewLocks(dir string, cands, bhs []backupstorage.BackupHandle, until time.Time, out *pruneOutput) int {
	lk, err := can[backupLocker](s.bs, "renew the locks of the backups kept")
	if err != nil {
		return s.o.failf(exitUsage, "%v", err)
	}
	l := splitstorage.Lock{Until: until.UTC().Truncate(time.Second), Mode: splitstorage.LockGovernance}
	code := exitOK
	for _, bh := range bhs {
		if slices.Contains(cands, bh) || s.fromLegacy(bh) {
			continue
		}
		res, err := lk.Lock(s.ctx, dir, bh.Name(), l)
		if err != nil {
			code = max(code, s.o.failf(failureStatus(err), "renewing the lock of %s/%s failed: %v; run prune again", dir, bh.Name(), err))
			continue
		}
		out.Renewed = append(out.Renewed, dir+"/"+bh.Name())
		if out.text {
			fmt.Fprintf(out.w, "%s/%s is %s\n", dir, bh.Name(), res.Lock)
		}
	}
	return code
}
