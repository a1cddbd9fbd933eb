package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// lockDoc is `vtfifo lock`'s help.
var lockDoc = commandDoc{"lock", "Lock a backup, and the backups it needs, at the store until a date: no removal takes it before then",
	"Locks every object of the backup --backup names (a complete one) and of the backups it needs (an incremental\n" +
		"one's full and deltas, first and as long) until --until or for --for from now: S3 Object Lock retention,\n" +
		"GCS object retention, Azure immutability (the bucket or container must have them enabled), on local disk\n" +
		"read-only files our code will not remove. A lock extends, never shortens: an earlier date than the backup has\n" +
		"changes nothing. rm, prune, vtbackup's retention and vtctldclient RemoveBackup refuse a locked backup, naming\n" +
		"the date; ls and show print it. Run it again to finish a lock that was cut short, or to renew one.\n" +
		"--mode compliance cannot be undone by anyone, the store's administrators included, until the date.",
	"  vtfifo lock --backup-storage-implementation=split --split-storage-backend=s3 --split-storage-s3-bucket=backups \\\n" +
		"      --keyspace=commerce --shard=0 --backup=2026-11-23.162035.zone1-0000000100 --for=720h --mode=governance"}

// allowedLockMode is --mode's allowed values.
const allowedLockMode = "governance or compliance"

// LockResult is `vtfifo lock --json`.
type LockResult struct {
	Backup    string    `json:"backup"`
	Until     time.Time `json:"until"`
	Mode      string    `json:"mode"`
	LegalHold bool      `json:"legal_hold,omitempty"`
	Objects   int       `json:"objects"`
	// Bases are the backups it needs, locked with it, as long.
	Bases []string `json:"bases,omitempty"`
}

// lockFlags are `vtfifo lock`'s own flags.
type lockFlags struct {
	until      string
	forDur     time.Duration
	mode       string
	legalHold  bool
	asJSON     bool
	lockWanted splitstorage.Lock
}

func (f *lockFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.until, "until", "", "lock until this time: RFC 3339 (2026-12-31T00:00:00Z) or a UTC date (2026-12-31); one of --until and --for")
	fs.Var(flagvalue.Age{P: &f.forDur, Allowed: "an age > 0 such as 30d, 2w or 720h"}, "for", "lock for this long from now (30d, 2w, 720h); one of --until and --for")
	fs.StringVar(&f.mode, "mode", string(splitstorage.LockGovernance), "how strict: governance (a principal of the store allowed to bypass it "+
		"may shorten it) or compliance (no one can, until the date)")
	fs.BoolVar(&f.legalHold, "legal-hold", false, "also put the objects under legal hold (GCS: temporary hold), which keeps them whatever the date "+
		"until the store's administrator takes it off")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object (backup, until, mode, objects, bases)")
}

// check turns the flags into the lock asked for, or an error naming the
// flag; its date is set by dateByStoreClock once the storage is open.
func (f *lockFlags) check() error {
	var until time.Time
	switch {
	case (f.until == "") == (f.forDur == 0):
		return errors.New("give one of --until and --for: how long the backup is kept")
	case f.forDur < 0:
		return invalid("for", flagvalue.FormatAge(f.forDur), "an age > 0 such as 30d, 2w or 720h")
	case f.forDur == 0:
		var err error
		if until, err = time.Parse(time.RFC3339, f.until); err != nil {
			if until, err = time.Parse(time.DateOnly, f.until); err != nil {
				return invalid("until", f.until, "an RFC 3339 time (2026-12-31T00:00:00Z) or a UTC date (2026-12-31)")
			}
		}
	}
	mode := splitstorage.LockMode(f.mode)
	if mode != splitstorage.LockGovernance && mode != splitstorage.LockCompliance {
		return invalid("mode", f.mode, allowedLockMode)
	}
	f.lockWanted = splitstorage.Lock{Until: until.UTC().Truncate(time.Second), Mode: mode, LegalHold: f.legalHold}
	return nil
}

// dateByStoreClock dates the lock by the storage's clock (judgingNow), not
// this host's, which may be days off: --for runs from the storage's now (a
// lock cannot be shortened), and --until must be after it (a host whose
// clock ran ahead refused a date still to come; one behind wrote a lock
// that had already ended). An --until passed fails as a flag does (exit 2).
func (f *lockFlags) dateByStoreClock(s *session) int {
	now := s.judgingNow()
	if f.forDur > 0 {
		f.lockWanted.Until = now.Add(f.forDur).UTC().Truncate(time.Second)
		return -1
	}
	if !f.lockWanted.Until.After(now) {
		return s.o.failf(exitUsage, "%v", invalid("until", f.until, "a time in the future (the storage's clock says "+now.UTC().Format(time.RFC3339)+")"))
	}
	return -1
}

// LockBackup is `vtfifo lock`: a backup and the ones it needs locked at the
// store until a date.
func LockBackup(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var f lockFlags
	s, code := openSession(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			f.register(fs)
			required := o.requireBackup(fs, "lock locks the backup it names, never one it picks")
			return func() error {
				if err := required(); err != nil {
					return err
				}
				return f.check()
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	lk, err := can[backupLocker](s.bs, "lock a backup")
	if err != nil {
		return s.o.failf(exitUsage, "%v", err)
	}
	if code := f.dateByStoreClock(s); code >= 0 {
		return code
	}
	dir, name := s.o.dir(), s.o.backup
	res, err := lk.Lock(s.ctx, dir, name, f.lockWanted)
	if err != nil {
		if errors.Is(err, splitstorage.ErrNotOurs) && !s.exists(dir, name) {
			return s.o.failf(exitUnreachable, "backup %s/%s in %s: %s", dir, name, storageLocation(s.o), noSuchBackup(s.ctx, s.bs, dir, name))
		}
		if len(res.Bases) > 0 {
			err = fmt.Errorf("%w (its bases %s were locked first, as long; run lock again)", err, strings.Join(res.Bases, ", "))
		}
		return s.fail(err)
	}
	out := LockResult{Backup: res.Backup, Until: res.Lock.Until, Mode: string(res.Lock.Mode), LegalHold: res.Lock.LegalHold,
		Objects: res.Objects, Bases: res.Bases}
	if f.asJSON {
		writeJSON(stdout, out)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s/%s is %s: %d objects\n", dir, name, res.Lock, res.Objects)
	if len(res.Bases) > 0 {
		fmt.Fprintf(stdout, "the backups it needs are locked with it, as long: %s\n", strings.Join(res.Bases, ", "))
	}
	return exitOK
}

// lockHolding says what lock keeps bh now ("" when none does, or the
// storage locks nothing); an unreadable lock is left to the removal, which
// reads it again and refuses.
func lockHolding(ctx context.Context, bh backupstorage.BackupHandle) string {
	lr, ok := has[lockReader](bh)
	if !ok {
		return ""
	}
	bl, err := lr.LockState(ctx)
	if err != nil {
		return ""
	}
	return lockText(bl)
}

// lockText is what a listing says of a backup's lock: "" for none.
func lockText(bl splitstorage.BackupLock) string {
	if !bl.Holds() {
		return ""
	}
	return bl.Lock.String()
}
