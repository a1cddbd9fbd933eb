package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// releaseDoc is `vtfifo release`'s help.
var releaseDoc = commandDoc{"release", "Put a quarantined backup back among those restores choose from",
	"A backup that failed its test restore (vtbackup --fifo-backup-test-restore, or vtfifo test-restore\n" +
		"but with --quarantine-on-failure=false) is quarantined: restores no longer choose it and `verify --list-incomplete` shows\n" +
		"why. release verifies every part, then makes it complete again, for a failure that was the test's environment,\n" +
		"not the backup; it keeps the failed test record and says so (vtfifo's own picks skip such a backup until a test\n" +
		"restore passes).",
	"  vtfifo release --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce --shard=0 \\\n" +
		"      --backup=2026-11-23.162035.zone1-0000000100"}

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
	dependents, err := sp.Release(s.ctx, dir, name)
	if err != nil {
		switch {
		case errors.Is(err, splitstorage.ErrNotExist) && !s.exists(dir, name):
			return s.o.failf(exitUnreachable, "backup %s/%s in %s: %s", dir, name, storageLocation(s.o), noSuchBackup(s.ctx, s.bs, dir, name))
		case errors.Is(err, splitstorage.ErrNotExist) && len(dependents) > 0:
			// Released before (a release cut short, or an earlier version's):
			// the backups its quarantine took out came back now.
			fmt.Fprintf(stdout, "%s/%s is not quarantined (released before): restores may choose it already\n", dir, name)
			printReleased(s, stdout, dir, dependents)
			return exitOK
		case errors.Is(err, splitstorage.ErrNotExist):
			// Nothing to do, and nothing wrong with the backup: a request the
			// data refuses.
			return s.o.failf(exitUsage, "backup %s/%s in %s is not quarantined: restores may choose it already", dir, name, storageLocation(s.o))
		case errors.Is(err, splitstorage.ErrDamaged):
			return s.o.failf(exitFailed, "%v", err)
		}
		return s.fail(err) // nothing proven damaged: what could not be read, or a usage error
	}
	fmt.Fprintf(stdout, "released %s/%s after verifying every part: restores may choose it again%s\n", dir, name, stillPassedOver(s, dir, name))
	printReleased(s, stdout, dir, dependents)
	return exitOK
}

// printReleased names the backups a release put back with the one it named.
func printReleased(s *session, stdout io.Writer, dir string, dependents []string) {
	for _, d := range dependents {
		fmt.Fprintf(stdout, "released %s/%s too (the quarantine of its chain had taken it out), after verifying every part%s\n", dir, d,
			stillPassedOver(s, dir, d))
	}
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
