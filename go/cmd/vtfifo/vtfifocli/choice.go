package vtfifocli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

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
