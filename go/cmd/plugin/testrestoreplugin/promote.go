package testrestoreplugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// vtbackup's --fifo-backup-promote-to: once the new backup passed its test
// restore, it is promoted (splitstorage.Promote: copied to the protected
// storage, verified and locked there), as `vtfifo promote` does. The
// protected storage is vtbackup's own split storage with the flags given
// changed (another bucket or prefix, typically).
const (
	promotePrefix      = "fifo-backup-promote-"
	allowedPromoteTo   = "--split-storage-* flags that make another storage than vtbackup's own (e.g. --split-storage-s3-bucket=backups-protected)"
	allowedPromoteFor  = "24h..876000h (a day to 100 years)"
	allowedPromoteMode = "governance or compliance"
)

var promotion struct {
	to   []string
	for_ time.Duration
	mode string
	dst  splitstorage.Config // from to, once validated
}

func registerPromoteFlags(fs *pflag.FlagSet) {
	promotion.for_, promotion.dst = 0, splitstorage.Config{} // registering sets the defaults
	fs.StringArrayVar(&promotion.to, promotePrefix+"to", nil, "with --"+testRestorePrefix+": once the new backup passed its test restore, promote "+
		"it: copy it (with the backups it needs) to the storage these --split-storage-* flags make of vtbackup's own (repeatable, e.g. "+
		"--"+promotePrefix+"to=--split-storage-s3-bucket=backups-protected), verify it there and lock it there for --"+promotePrefix+"lock-for; "+
		"until that finishes no removal takes it from vtbackup's storage; a promotion cut short fails vtbackup, and vtfifo promote resumes it")
	flagvalue.Document(promotePrefix+"to", allowedPromoteTo)
	fs.Var(flagvalue.Duration{P: &promotion.for_, Allowed: allowedPromoteFor}, promotePrefix+"lock-for",
		"how long a promoted backup is locked at the protected storage, from the promotion (required with --"+promotePrefix+"to)")
	flagvalue.Document(promotePrefix+"lock-for", allowedPromoteFor)
	fs.StringVar(&promotion.mode, promotePrefix+"lock-mode", string(splitstorage.LockGovernance), "how strict the promoted backup's lock is: "+
		"governance (a principal of the store allowed to bypass it may shorten it) or compliance (no one can, until the date)")
	flagvalue.Document(promotePrefix+"lock-mode", allowedPromoteMode)
}

// validatePromoteFlags checks the promotion's flags: the protected storage
// is one, and another than vtbackup's own.
func validatePromoteFlags() error {
	var p flagvalue.Problems
	if m := promotion.mode; m != string(splitstorage.LockGovernance) && m != string(splitstorage.LockCompliance) {
		p.Invalid(promotePrefix+"lock-mode", m, allowedPromoteMode)
	}
	if len(promotion.to) == 0 {
		if promotion.for_ != 0 {
			p.Add("--%slock-for is set without --%sto: nothing is promoted", promotePrefix, promotePrefix)
		}
		return problems(p)
	}
	if !testRestore {
		p.Add("--%sto needs --%s: only a backup whose test restore passed is promoted", promotePrefix, testRestorePrefix)
	}
	if promotion.for_ < 24*time.Hour || promotion.for_ > 100*365*24*time.Hour {
		p.Invalid(promotePrefix+"lock-for", promotion.for_, allowedPromoteFor)
	}
	for _, f := range promotion.to {
		if !strings.HasPrefix(f, "--split-storage-") {
			p.Invalid(promotePrefix+"to", f, allowedPromoteTo)
		}
	}
	if len(p) == 0 {
		own := splitstorage.FlagConfig()
		dst, err := splitstorage.ConfigFromArgs(append(own.Args(), promotion.to...))
		switch {
		case err != nil:
			p.Add("invalid value %q for --%sto: %v: allowed values are %s", strings.Join(promotion.to, " "), promotePrefix, err, allowedPromoteTo)
		case dst.SameStore(own):
			p.Add("invalid value %q for --%sto: it names vtbackup's own storage, %s: allowed values are %s", strings.Join(promotion.to, " "),
				promotePrefix, own.Location(), allowedPromoteTo)
		}
		promotion.dst = dst
	}
	return problems(p)
}

// promoteNewBackup promotes the backup name of dir, which passed its test
// restore, when --fifo-backup-promote-to asks.
func promoteNewBackup(ctx context.Context, dir, name string) error {
	if len(promotion.to) == 0 || name == "" {
		return nil
	}
	bs, err := backupstorage.GetBackupStorage()
	if err != nil {
		return err
	}
	defer bs.Close()
	dst, err := splitstorage.New(promotion.dst)
	if err != nil {
		return fmt.Errorf("--%sto: %w", promotePrefix, err)
	}
	defer dst.Close()
	src, ok := bs.(*splitstorage.Storage)
	if !ok {
		return fmt.Errorf("--%sto: vtbackup's storage is not the split storage", promotePrefix)
	}
	// The lock runs from the destination's clock: this host's may be off,
	// and a lock cannot be shortened.
	now, err := dst.Now(ctx)
	if err != nil {
		logutil.NewConsoleLogger().Warningf("the promotion's lock runs from this host's clock: %v", err)
		now = time.Now()
	}
	l := splitstorage.Lock{Until: now.Add(promotion.for_).UTC().Truncate(time.Second), Mode: splitstorage.LockMode(promotion.mode)}
	rep, err := src.Promote(ctx, dst, dir, name, l, splitstorage.CopyOptions{})
	if err != nil {
		return fmt.Errorf("the backup %s/%s passed its test restore, but its promotion failed (vtfifo promote --backup=%s resumes it; until "+
			"then no removal takes it): %w", dir, name, name, err)
	}
	logutil.NewConsoleLogger().Infof("promoted %s/%s to %s: copied %v, verified there, %s there", dir, name, rep.Destination, rep.Copied, rep.Lock.Lock)
	return nil
}

func problems(p flagvalue.Problems) error {
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("invalid flags: %s", strings.Join(p, "; "))
}
