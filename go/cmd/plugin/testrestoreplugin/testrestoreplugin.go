// Package testrestoreplugin is vtbackup's --fifo-backup-test-restore: after
// the backup, once vtbackup's own mysqld has stopped, it proves the new
// backup restorable (testrestore.Run, as `vtfifo test-restore` does), stores
// the verification record beside it, and on a failed test quarantines it,
// so that no restore ever chooses it, and fails vtbackup, as a failed backup
// does. vtbackup's pruning (--min-retention-*) of a split storage is done
// here, counting only the backups proven not broken, and with a test
// restore only after it passed.
package testrestoreplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/cmd/plugin"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/retention"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

var (
	testRestore      bool
	testRestoreFlags testrestore.Flags
)

const testRestorePrefix = "fifo-backup-test-restore"

// Plugin declares and validates the flags; Wrap does the work.
var Plugin = plugin.Plugin{
	Name: "test restore",
	RegisterFlags: func(fs *pflag.FlagSet) {
		flagvalue.BoolVar(fs, &testRestore, testRestorePrefix, false, "after the backup, prove it restorable: restore and prepare it into a scratch "+
			"directory, start a throwaway mysqld, CHECK TABLE every table; the record is stored beside the backup, and a backup that fails is quarantined "+
			"(no restore chooses it) and vtbackup exits 1; old backups are pruned (--min-retention-*) only after the new one passed (split storage only)")
		testRestoreFlags.Register(fs, testRestorePrefix+"-")
		registerPromoteFlags(fs)
	},
	ValidateFlags: func(fs *pflag.FlagSet) error {
		if err := testRestoreFlags.Validate(); err != nil {
			return err
		}
		if err := validatePromoteFlags(); err != nil {
			return err
		}
		if testRestore && backupstorage.BackupStorageImplementation != splitstorage.Name {
			return fmt.Errorf("invalid value %q for --backup-storage-implementation with --%s: allowed values are %s (the record is stored beside the backup)",
				backupstorage.BackupStorageImplementation, testRestorePrefix, splitstorage.Name)
		}
		return nil
	},
}

// Wrap makes cmd (vtbackup's) test-restore the backup its RunE took, and
// prune a split storage by the rule vtfifo prune keeps.
func Wrap(cmd *cobra.Command) {
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if !testRestore && backupstorage.BackupStorageImplementation != splitstorage.Name {
			return run(c, args) // stock vtbackup, its own pruning included
		}
		ctx := c.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		dir, err := backupDir(c.Flags())
		if err != nil {
			return err
		}
		check, err := newBackupCheck(ctx, dir)
		if err != nil {
			return err
		}
		// vtbackup prunes right after its backup, counting every backup it
		// lists, a broken one included, toward --min-retention-count; and a
		// backup that then fails its test would have cost the good ones.
		// Its pruning is held back and done here, once the new backup
		// passed its test where there is one, counting only what is proven
		// not broken.
		keepFor, err := c.Flags().GetDuration("min-retention-time")
		if err != nil {
			return err
		}
		keep, err := c.Flags().GetInt("min-retention-count")
		if err != nil {
			return err
		}
		if err := c.Flags().Set("min-retention-time", "0"); err != nil {
			return err
		}
		if err := run(c, args); err != nil {
			return err
		}
		if err := check(); err != nil {
			return err
		}
		return prune(ctx, dir, keep, keepFor)
	}
}

// newBackupCheck is what runs between vtbackup's backup and its pruning:
// with --fifo-backup-test-restore, the new backup's test restore and
// promotion; else nothing.
func newBackupCheck(ctx context.Context, dir string) (func() error, error) {
	if !testRestore {
		return func() error { return nil }, nil
	}
	before, err := backupNames(ctx, dir)
	if err != nil {
		return nil, err
	}
	return func() error {
		tested, err := testNewBackup(ctx, dir, before)
		if err != nil {
			return err
		}
		return promoteNewBackup(ctx, dir, tested)
	}, nil
}

// prune is vtbackup's pruning (retention.Candidates) over a split storage,
// after the test where there is one.
func prune(ctx context.Context, dir string, keep int, keepFor time.Duration) error {
	if keepFor == 0 {
		return nil // vtbackup's "pruning disabled"
	}
	bs, err := backupstorage.GetBackupStorage()
	if err != nil {
		return err
	}
	defer bs.Close()
	bhs, err := bs.ListBackups(ctx, dir)
	if err != nil {
		return fmt.Errorf("pruning %s: %w", dir, err)
	}
	logger := logutil.NewConsoleLogger()
	logger.Infof("pruning %s here, not by vtbackup (whose \"Pruning of old backups is disabled\" above means its own pass was held back for this "+
		"one): --min-retention-count=%d counting only the backups proven not broken, --min-retention-time=%v", dir, keep, keepFor)
	// --min-retention-count counts only the backups proven not broken, as
	// vtfifo prune's --keep does (retention.KeepCount).
	uncounted := testrestore.UncountedFunc(ctx)
	keepN := retention.KeepCount(bhs, keep, func(bh backupstorage.BackupHandle) bool { return uncounted(bh) != "" })
	for _, bh := range bhs[len(bhs)-keepN:] {
		if why := uncounted(bh); why != "" {
			logger.Infof("not counting %s/%s toward --min-retention-count=%d: %s", dir, bh.Name(), keep, why)
		}
	}
	cands, proven := retention.KeepProven(bhs, retention.Candidates(bhs, keepN, keepFor, time.Now()), testrestore.PassedFunc(ctx))
	if proven != nil {
		logger.Infof("keeping %s/%s: the newest backup that passed a test restore", dir, proven.Name())
	}
	remove := splitstorage.Remover(bs)
	for _, bh := range cands {
		logger.Infof("removing old backup %s/%s (--min-retention-count=%d counting only backups proven not broken, --min-retention-time=%v)", dir,
			bh.Name(), keep, keepFor)
		err := remove(ctx, dir, bh.Name())
		switch {
		case errors.Is(err, splitstorage.ErrInUse):
			// Someone reads it: the next run prunes it.
			logger.Infof("keeping %s/%s for now: %v", dir, bh.Name(), err)
		case err != nil:
			return fmt.Errorf("pruning %s: removing %s: %w", dir, bh.Name(), err)
		}
	}
	return nil
}

func backupDir(fs *pflag.FlagSet) (string, error) {
	ks, err := fs.GetString("init-keyspace")
	if err != nil {
		return "", err
	}
	shard, err := fs.GetString("init-shard")
	if err != nil {
		return "", err
	}
	return ks + "/" + shard, nil
}

func backupNames(ctx context.Context, dir string) ([]string, error) {
	bs, err := backupstorage.GetBackupStorage()
	if err != nil {
		return nil, err
	}
	defer bs.Close()
	bhs, err := bs.ListBackups(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("--%s: listing the backups in %s: %w", testRestorePrefix, dir, err)
	}
	var names []string
	for _, bh := range bhs {
		names = append(names, bh.Name())
	}
	return names, nil
}

// testNewBackup test-restores the newest backup of dir that is not in
// before, and returns its name once it passed; vtbackup may have taken
// none (--min-backup-interval): "".
func testNewBackup(ctx context.Context, dir string, before []string) (string, error) {
	bs, err := backupstorage.GetBackupStorage()
	if err != nil {
		return "", err
	}
	defer bs.Close()
	bhs, err := bs.ListBackups(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("--%s: listing the backups in %s: %w", testRestorePrefix, dir, err)
	}
	logger := logutil.NewConsoleLogger()
	var bh backupstorage.BackupHandle
	for _, h := range bhs {
		if !slices.Contains(before, h.Name()) {
			bh = h // sorted oldest first: the last new one is the newest
		}
	}
	if bh == nil {
		logger.Infof("test restore: vtbackup took no new backup in %s, nothing to test", dir)
		return "", nil
	}
	rec, err := testrestore.Run(ctx, bh, testRestoreFlags.Options(logger))
	if why := unreadable.NoVerdict(err); why != "" {
		return "", fmt.Errorf("%w; %s", err, why)
	}
	if err != nil {
		return "", err
	}
	doc, _ := json.Marshal(rec)
	logger.Infof("test restore: %s: %s", rec.Summary(), doc)
	if err := testrestore.Store(ctx, bh, rec); err != nil {
		return "", fmt.Errorf("test restore of %s/%s: storing its record: %w", dir, bh.Name(), err)
	}
	if rec.Outcome == testrestore.Passed {
		return bh.Name(), nil
	}
	which, err := testrestore.Quarantine(ctx, bh, rec)
	if err != nil {
		return "", fmt.Errorf("test restore of %s/%s failed (%s), and the backup could not be quarantined: %w", dir, bh.Name(), rec.Error, err)
	}
	if which != bh.Name() {
		return "", fmt.Errorf("test restore of %s/%s failed: its base %s is damaged, and is quarantined with every backup that needs it, this one "+
			"among them (no restore chooses them; `vtfifo repair`, then `vtfifo release --backup=%s`, puts them back): %s", dir, bh.Name(), which, which,
			rec.Error)
	}
	return "", fmt.Errorf("test restore of %s/%s failed, the backup is quarantined (no restore chooses it; `vtfifo release` puts it back): %s", dir,
		bh.Name(), rec.Error)
}
