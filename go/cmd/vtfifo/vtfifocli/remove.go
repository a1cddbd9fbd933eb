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

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/retention"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// Remove is `vtfifo rm`: one backup, named with --backup (rm never picks
// one on its own), complete, quarantined or incomplete. An incomplete one
// started less than --incomplete-min-age ago may still be running: refused.
func Remove(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var minAge *time.Duration
	var dryRun, asJSON, breakLeases *bool
	s, code := openSession(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			minAge = fs.Duration("incomplete-min-age", 24*time.Hour, "an incomplete backup last written to less than this long ago (the store's own time) may still be running: rm refuses it")
			dryRun = fs.Bool("dry-run", false, "say what would be removed, remove nothing")
			breakLeases = fs.Bool("break-leases", false, "first end every lease on the backup, saying whose (a reader or copy on another host that "+
				"you know is gone; on its own host a gone holder's lease no longer counts)")
			asJSON = fs.Bool("json", false, "print one JSON object (backup, kind, action, kept_as_base_of) instead of a line")
			required := o.requireBackup(fs, "rm removes the backup it names, never one it picks")
			return func() error {
				if err := required(); err != nil {
					return err
				}
				if *minAge < 0 {
					return invalid("incomplete-min-age", minAge.String(), "a duration >= 0")
				}
				return nil
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	dir, name := s.o.dir(), s.o.backup
	kind, code := s.removable(dir, name, *minAge)
	if kind == "" {
		return code
	}
	if *breakLeases && !*dryRun {
		if code := s.breakLeases(dir, name); code >= 0 {
			return code
		}
	}
	res := RemoveResult{Backup: dir + "/" + name, Kind: kind, Action: "would remove"}
	remove := removeBackup
	if *dryRun {
		remove = checkRemovable
	}
	var err error
	res.KeptAsBaseOf, err = remove(s, dir, name)
	switch {
	case errors.Is(err, splitstorage.ErrInUse) && *dryRun:
		return s.o.failf(exitUnreachable, "would be refused: %v; %s", err, inUseHelp)
	case errors.Is(err, splitstorage.ErrInUse):
		return s.o.failf(exitUnreachable, "refused: %v; %s", err, inUseHelp)
	case errors.Is(err, splitstorage.ErrNotOurs):
		return s.o.failf(exitUsage, "refused: %v", err)
	case err != nil:
		return s.o.failf(exitUnreachable, "removing backup %s/%s in %s failed: %v; run rm again", dir, name, storageLocation(s.o), err)
	}
	if !*dryRun {
		res.Action = "removed"
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	res.print(stdout)
	return exitOK
}

// inUseHelp is what to do about a backup under a lease.
const inUseHelp = "wait for it to end (a lease ends by itself at its expiry, or as soon as its holder's process is gone from the host it runs on); " +
	"a holder on another host that you know is gone: rm --break-leases"

// breakLeases ends every lease on dir/name, saying whose; -1: go on.
func (s *session) breakLeases(dir, name string) int {
	lb, err := can[leaseBreaker](s.bs, "break leases (--break-leases)")
	if err != nil {
		return s.o.failf(exitUsage, "%v", err)
	}
	ended, err := lb.BreakLeases(s.ctx, dir, name)
	for _, h := range ended {
		s.o.notef("ended the lease on %s/%s of %s", dir, name, h)
	}
	if err != nil {
		return s.o.failf(exitUnreachable, "%v", err)
	}
	return -1
}

// RemoveResult is what rm did, or with --dry-run would do (--json prints it).
type RemoveResult struct {
	Backup string `json:"backup"`
	// Kind is complete backup, quarantined backup or incomplete backup.
	Kind string `json:"kind"`
	// Action is removed or would remove.
	Action string `json:"action"`
	// KeptAsBaseOf names the incremental backups whose base it is: it left
	// the list, and its objects go with the last of them.
	KeptAsBaseOf []string `json:"kept_as_base_of,omitempty"`
}

func (r RemoveResult) print(w io.Writer) {
	action := r.Action
	if len(r.KeptAsBaseOf) > 0 {
		action = removedFromList(r.KeptAsBaseOf)
	}
	fmt.Fprintf(w, "%s %s %s\n", action, r.Kind, r.Backup)
}

// removedFromList says what became of a removed base of incremental backups.
func removedFromList(dependents []string) string {
	return fmt.Sprintf("removed from the list (its objects stay as the base of %s, and go with the last of them):", strings.Join(dependents, ", "))
}

// removable says what kind of backup rm would remove (complete,
// quarantined, incomplete), or, "" with the exit status, why not: not
// there (exitUnreachable), or refused (exitFailed).
func (s *session) removable(dir, name string, minAge time.Duration) (string, int) {
	if root, missing := missingRoot(s.o); missing {
		return "", s.o.failf(exitUnreachable, "the storage root %s does not exist: check the storage flags", root)
	}
	bhs, err := s.bs.ListBackups(s.ctx, dir)
	if err != nil {
		return "", s.o.failf(exitUnreachable, "cannot list the backups of %s: %v", s.o.where(), err)
	}
	for _, bh := range bhs {
		if bh.Name() == name {
			return "complete backup", exitOK
		}
	}
	if sp, ok := s.bs.(incompleteLister); ok {
		inc, err := sp.ListIncomplete(s.ctx, dir)
		if err != nil {
			return "", s.o.failf(exitUnreachable, "cannot list the incomplete backups of %s: %v", s.o.where(), err)
		}
		for _, b := range inc {
			switch {
			case b.Name != name:
			case len(b.RetiredFor) > 0:
				return "", s.o.failf(exitUsage, "refused: backup %s/%s was removed from the list already and is kept as the base of %s: it goes when they do",
					dir, name, strings.Join(b.RetiredFor, ", "))
			case b.Quarantined != "":
				return "quarantined backup", exitOK
			case len(b.Held) > 0:
				return "", s.o.failf(exitUnreachable, "refused: backup %s/%s is incomplete and in use: %s; %s", dir, name, strings.Join(b.Held, "; "), inUseHelp)
			case time.Since(b.LastWrite) >= minAge:
				return "incomplete backup", exitOK
			default:
				return "", s.o.failf(exitUnreachable, "refused: backup %s/%s is incomplete, started on %s and last written %v ago: it may still be running "+
					"(--incomplete-min-age=%v)", dir, name, b.Host, time.Since(b.LastWrite).Round(time.Second), minAge)
			}
		}
	}
	return "", s.o.failf(exitUnreachable, "backup %s/%s in %s: no such backup: check --backup, --keyspace and --shard", dir, name, storageLocation(s.o))
}

// removeBackup removes one backup and returns, for the base of incremental
// backups in the split storage, which ones: it left the list, and is kept
// until they go.
func removeBackup(s *session, dir, name string) ([]string, error) {
	var deps []string
	if sp, ok := s.bs.(guardedRemover); ok {
		var err error
		if deps, err = sp.Dependents(s.ctx, dir, name); err != nil {
			return nil, err
		}
	}
	return deps, splitstorage.Remover(s.bs)(s.ctx, dir, name) // never under a reader's lease

}

// checkRemovable is removeBackup's decision without the removal (a dry
// run): the same refusal of a backup under a read lease.
func checkRemovable(s *session, dir, name string) ([]string, error) {
	sp, ok := s.bs.(guardedRemover)
	if !ok {
		return nil, nil
	}
	deps, err := sp.Dependents(s.ctx, dir, name)
	if err != nil {
		return nil, err
	}
	return deps, sp.CheckUnread(s.ctx, dir, name)
}

// Prune is `vtfifo prune`: removes the complete backups that are neither
// among the newest --keep nor younger than --keep-within.
func Prune(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var keep *int
	var within time.Duration
	var tiers retention.Tiers
	var dryRun, asJSON *bool
	s, code := openSession(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			keep = fs.Int("keep", 0, "how many of the newest complete backups are always kept (at least 1; required)")
			fs.Var(flagvalue.Age{P: &within, Allowed: "an age >= 0 such as 36h, 7d or 2w"}, "keep-within", "also keep every backup younger than this (e.g. 7d, 36h)")
			fs.IntVar(&tiers.Daily, "keep-daily", 0, "also keep the newest backup of each of the last N days that have one (UTC)")
			fs.IntVar(&tiers.Weekly, "keep-weekly", 0, "also keep the newest backup of each of the last N ISO weeks that have one")
			fs.IntVar(&tiers.Monthly, "keep-monthly", 0, "also keep the newest backup of each of the last N months that have one")
			dryRun = fs.Bool("dry-run", false, "print what would be removed, remove nothing")
			asJSON = fs.Bool("json", false, "print one JSON object (kept with why, removed, would_remove, failed) instead of lines")
			refuseBackup := o.refuseBackup(fs, "prune", "it chooses by --keep and --keep-within")
			return func() error {
				if err := refuseBackup(); err != nil {
					return err
				}
				if *keep < 1 {
					return invalid("keep", fmt.Sprint(*keep), "1 or more (the newest backup is never pruned)")
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
	failed := testrestore.FailedFunc(s.ctx)
	keepN := retention.KeepCount(bhs, *keep, failed)
	cands, tiered := retention.KeepTiers(bhs, retention.Candidates(bhs, keepN, within, time.Now()), tiers)
	for i, bh := range bhs {
		switch why, ok := tiered[bh.Name()]; {
		case ok:
			out.keep(dir+"/"+bh.Name(), why)
		case len(bhs)-i <= keepN && failed(bh):
			out.keep(dir+"/"+bh.Name(), fmt.Sprintf("newer than the oldest of the newest %d that did not fail a test restore (--keep); its own "+
				"test restore failed", *keep))
		case len(bhs)-i <= keepN:
			out.keep(dir+"/"+bh.Name(), fmt.Sprintf("one of the newest %d that did not fail a test restore (--keep)", *keep))
		case !slices.Contains(cands, bh):
			out.keep(dir+"/"+bh.Name(), "younger than --keep-within="+shortDuration(within))
		}
	}
	cands, proven := retention.KeepProven(bhs, cands, testrestore.PassedFunc(s.ctx))
	if proven != nil {
		out.keep(dir+"/"+proven.Name(), "the newest backup that passed a test restore")
	}
	code = s.prune(dir, cands, *dryRun, out)
	if r := out.PruneResult; len(r.Removed)+len(r.WouldRemove)+len(r.Failed) == 0 && out.text {
		fmt.Fprintf(stdout, "nothing to remove in %s: %d kept\n", dir, len(r.Kept))
	}
	if *asJSON {
		writeJSON(stdout, out.PruneResult)
	}
	return code
}

// PruneResult is what prune kept and why, removed (or with --dry-run would
// remove) and failed to remove (--json prints it).
type PruneResult struct {
	Kept        []PruneKept `json:"kept"`
	Removed     []string    `json:"removed,omitempty"`
	WouldRemove []string    `json:"would_remove,omitempty"`
	Failed      []string    `json:"failed,omitempty"`
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

func (o *pruneOutput) wouldRemove(where string) {
	o.WouldRemove = append(o.WouldRemove, where)
	if o.text {
		fmt.Fprintf(o.w, "would remove %s\n", where)
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
			out.keep(where, strings.TrimPrefix(errText(err), "split storage: backup "+where+" is not removed: "))
			continue
		case err != nil:
			out.Failed = append(out.Failed, where)
			code = s.o.failf(exitUnreachable, "removing %s failed: %v; the others go on, run prune again", where, err)
			continue
		}
		if dryRun {
			out.wouldRemove(where)
			continue
		}
		done := "removed"
		if len(deps) > 0 {
			done = removedFromList(deps)
		}
		out.removed(done, where)
	}
	return code
}

// Release is `vtfifo release`: a quarantined backup back among the complete
// ones that restores choose from.
func Release(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	s, code := openSession(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			return o.requireBackup(fs, "release puts back the quarantined backup it names")
		})
	if s == nil {
		return code
	}
	defer s.close()
	sp, err := can[releaser](s.bs, "release a quarantined backup")
	if err != nil {
		return s.o.failf(exitUsage, "%v", err)
	}
	dir, name := s.o.dir(), s.o.backup
	if err := sp.Release(s.ctx, dir, name); err != nil {
		switch {
		case errors.Is(err, splitstorage.ErrNotExist) && !s.exists(dir, name):
			return s.o.failf(exitUnreachable, "backup %s/%s in %s: no such backup: check --backup, --keyspace and --shard", dir, name, storageLocation(s.o))
		case errors.Is(err, splitstorage.ErrNotExist):
			return s.o.failf(exitFailed, "backup %s/%s in %s is not quarantined: restores may choose it already", dir, name, storageLocation(s.o))
		case errors.Is(err, splitstorage.ErrDamaged):
			return s.o.failf(exitFailed, "%v", err)
		}
		return s.o.failf(exitUnreachable, "%v", err)
	}
	fmt.Fprintf(stdout, "released %s/%s after verifying every part: restores may choose it again%s\n", dir, name, stillPassedOver(s, dir, name))
	return exitOK
}

// stillPassedOver says what, after a release, still passes the backup
// over: its failed test restore record, which release keeps (it is the
// backup's history), and which vtfifo's own picks and retention read.
func stillPassedOver(s *session, dir, name string) string {
	bhs, err := s.bs.ListBackups(s.ctx, dir)
	if err != nil {
		return fmt.Sprintf("; its test restore record could not be read (%v)", err)
	}
	for _, bh := range bhs {
		if bh.Name() != name {
			continue
		}
		rec, err := testrestore.Load(s.ctx, bh)
		if err != nil {
			return fmt.Sprintf("; its test restore record could not be read (%v)", err)
		}
		if rec == nil || rec.Outcome != testrestore.Failed {
			return ""
		}
		return fmt.Sprintf(" (Vitess's restores do now); but its test restore of %s failed, so vtfifo's commands that pick the newest backup "+
			"(restore, export, ... without --backup) and retention's proven rules still pass it over: run vtfifo test-restore --backup=%s to "+
			"record a new verdict", rec.Started.UTC().Format("2006-01-02 15:04"), name)
	}
	return ""
}
