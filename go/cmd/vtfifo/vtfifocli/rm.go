package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// rmDoc is `vtfifo rm`'s help.
var rmDoc = commandDoc{"rm", "Remove one backup, named with --backup (complete, quarantined, or incomplete and old enough)",
	"Removes the backup --backup names: a complete one, a quarantined one, or an incomplete one last written more than\n" +
		"--incomplete-min-age ago (the store's own time; one written since may still be running: refused). rm never picks a backup itself.",
	"  vtfifo rm --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce --shard=0 \\\n" +
		"      --backup=2026-11-23.162035.zone1-0000000100"}

// Remove is `vtfifo rm`: one backup, named with --backup (rm never picks
// one on its own), complete, quarantined or incomplete. An incomplete one
// last written less than --incomplete-min-age ago may still be running:
// refused.
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
	case (errors.Is(err, splitstorage.ErrLocked) || flagvalue.IsContradiction(err)) && *dryRun:
		return s.o.failf(exitUsage, "would be refused: %v", err)
	case errors.Is(err, splitstorage.ErrNotOurs), errors.Is(err, splitstorage.ErrLocked), flagvalue.IsContradiction(err):
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
	fmt.Fprintf(w, "%s %s %s\n", removalText(r.Action, r.KeptAsBaseOf), r.Kind, r.Backup)
}

// removable says what kind of backup rm would remove (complete,
// quarantined, incomplete), or, "" with the exit status, why not: not
// there (exitUnreachable), or refused (exitFailed).
func (s *session) removable(dir, name string, minAge time.Duration) (string, int) {
	if code := s.o.rootMissing(); code != exitOK {
		return "", code
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
	if sp, ok := has[incompleteLister](s.bs); ok {
		inc, err := sp.ListIncomplete(s.ctx, dir)
		if err != nil {
			return "", s.o.failf(exitUnreachable, "cannot list the incomplete backups of %s: %v", s.o.where(), err)
		}
		for _, b := range inc {
			if b.Name != name {
				continue
			}
			switch {
			case len(b.RetiredFor) > 0:
				return "", s.o.failf(exitUsage, "refused: backup %s/%s was removed from the list already and is kept as the base of %s: it goes when they do",
					dir, name, strings.Join(b.RetiredFor, ", "))
			case b.Quarantined != "":
				return "quarantined backup", exitOK
			case len(b.Held) > 0:
				return "", s.o.failf(exitUnreachable, "refused: backup %s/%s is incomplete and in use: %s; %s", dir, name, strings.Join(b.Held, "; "), inUseHelp)
			}
			if age := s.judgingNow().Sub(b.LastWrite); age < minAge {
				return "", s.o.failf(exitUnreachable, "refused: backup %s/%s is incomplete, started on %s and last written %v ago: it may still be running "+
					"(--incomplete-min-age=%v)", dir, name, b.Host, age.Round(time.Second), minAge)
			}
			return "incomplete backup", exitOK
		}
	}
	return "", s.o.failf(exitUnreachable, "backup %s/%s in %s: %s", dir, name, storageLocation(s.o), noSuchBackup(s.ctx, s.bs, dir, name))
}
