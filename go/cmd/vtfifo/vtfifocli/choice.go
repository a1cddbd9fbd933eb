package vtfifocli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// pickBackup finds the backup --backup names in the flags' directory, or the
// latest complete one; otherwise it says why on stderr and returns the exit
// status: exitUnreachable when the storage cannot be listed or holds no such
// backup, exitFailed when the backup named is there but incomplete or
// quarantined.
func (o *options) pickBackup(ctx context.Context, bs backupstorage.BackupStorage) (backupstorage.BackupHandle, int) {
	bhs, code := o.listComplete(ctx, bs)
	if code != exitOK {
		return nil, code
	}
	if o.backup == "" || o.backup == latestVerifiedValue {
		if len(bhs) == 0 {
			return nil, o.failf(exitUnreachable, "no complete backup in %s: check --keyspace and --shard (or --backup-dir) and the storage flags", o.where())
		}
		if o.backup == latestVerifiedValue {
			return o.latestVerified(ctx, bhs)
		}
		return o.latestNotFailed(ctx, bhs, o.dir()), exitOK
	}
	return o.named(ctx, bs, bhs, o.backup)
}

// listComplete lists the complete backups of the flags' directory, or
// fails (exitUnreachable) where the root does not exist or the listing
// fails.
func (o *options) listComplete(ctx context.Context, bs backupstorage.BackupStorage) ([]backupstorage.BackupHandle, int) {
	if code := o.rootMissing(); code != exitOK {
		return nil, code
	}
	bhs, err := bs.ListBackups(ctx, o.dir())
	if err != nil {
		return nil, o.failf(exitUnreachable, "cannot list the backups of %s: %v", o.where(), err)
	}
	return bhs, exitOK
}

// named is the backup of bhs called name, or, said on stderr, why there is
// none with pickBackup's exit status: also how a command takes a second
// backup by a flag of its own (listComplete, then named).
func (o *options) named(ctx context.Context, bs backupstorage.BackupStorage, bhs []backupstorage.BackupHandle, name string) (backupstorage.BackupHandle, int) {
	for _, h := range bhs {
		if h.Name() == name {
			return h, exitOK
		}
	}
	dir := o.dir()
	why, code := whyMissing(ctx, bs, dir, name)
	fail := ""
	if code == exitFailed {
		fail = "FAIL: "
	}
	return nil, o.failf(code, "%sbackup %s/%s in %s: %s", fail, dir, name, storageLocation(o), why)
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
// fail and that the command's restorable check finds nothing wrong with,
// saying on stderr which it passed over and why; one that could not be
// read is taken (nothing is proven: the command says what it could not
// read); the newest when every one was passed over (the operator asked
// for the latest; the note says so).
func (o *options) latestNotFailed(ctx context.Context, bhs []backupstorage.BackupHandle, dir string) backupstorage.BackupHandle {
	for i := len(bhs) - 1; i >= 0; i-- {
		if rec, err := testrestore.Load(ctx, bhs[i]); err == nil && rec != nil && rec.Outcome == testrestore.Failed {
			o.notef("skipping %s/%s: its test restore of %s failed (%s); name it with --backup to use it anyway",
				dir, bhs[i].Name(), rec.Started.Format("2006-01-02 15:04"), rec.Error)
			continue
		}
		err := o.restorable(ctx, bhs[i])
		if !passedOver(ctx, err) {
			return bhs[i]
		}
		tryAnyway := "; name it with --backup to try it anyway"
		if flagvalue.IsContradiction(err) {
			tryAnyway = "" // another backup's, copied there: read under this name, it never restores
		}
		o.notef("skipping %s/%s: %s%s", dir, bhs[i].Name(), errtext.Line(err), tryAnyway)
	}
	o.notef("every backup in %s was passed over (above): taking the newest, %s", dir, bhs[len(bhs)-1].Name())
	return bhs[len(bhs)-1]
}

// passedOver says whether err, the restorable check of a backup, proves
// that a restore passes over it: damaged, its chain broken, or another
// backup's copied or renamed there. Not one that could not be read, nor
// one this host refuses (another tool flavor: a contradiction of the
// host, not proof about the backup), nor an interrupted check.
func passedOver(ctx context.Context, err error) bool {
	var moved *splitstorage.MovedError
	switch {
	case err == nil, ctx.Err() != nil, unreadable.Is(err):
		return false
	case flagvalue.IsContradiction(err):
		return errors.As(err, &moved)
	}
	return true
}

// whyMissing says why a named backup is not among the complete ones, with
// the exit status that says it: 1 for one quarantined (it failed a check);
// 2 for one kept as the base of others (complete, but no backup of its own
// to restore); 3 for one that never completed (failed, killed or still
// running: nothing says it is damaged) or is not there.
func whyMissing(ctx context.Context, bs backupstorage.BackupStorage, dir, name string) (string, int) {
	if s, ok := has[incompleteLister](bs); ok {
		inc, err := s.ListIncomplete(ctx, dir)
		if err == nil {
			for _, b := range inc {
				switch {
				case b.Name != name:
				case len(b.RetiredFor) > 0:
					return fmt.Sprintf("removed from the list, kept as the base of %s; restore never picks it, restoring those reads it",
						strings.Join(b.RetiredFor, ", ")), exitUsage
				case b.Quarantined != "":
					return quarantinedText(b.Quarantined) + "; restore never picks it; `vtfifo release` puts it back, `vtfifo rm` removes it",
						exitFailed
				default:
					return fmt.Sprintf("incomplete: started %s on %s, last written %s, never completed (a failed or killed backup, or one still running: "+
						"nothing says it is damaged); restore never picks it; `vtfifo verify --remove-incomplete` removes it once it has been idle for --incomplete-min-age (a day)",
						b.Started.Format(time.RFC3339), b.Host, b.LastWrite.Format(time.RFC3339)), exitUnreachable
				}
			}
		}
	}
	return cmp.Or(othersThere(ctx, bs, dir, name), "no such backup (GetBackups does not list it)") + checkTheNames, exitUnreachable
}
