package testrestore

import (
	"context"
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// The operator's flags are not the backup: a prepare that fails for a
// --fifo-backup-prepare-flags that does not fit the files (another page
// size: "Data structure corruption" in mariabackup's words), a server that
// exits at start for a --mysqld-flags that does not (a page size, a log
// file geometry, a plugin this host lacks), or checks that fail under one,
// say nothing about the backup. A failure with them is a verdict only once
// the backup fails without them as well; where it passes without them, the
// flags are a usage error (exit 2) and nothing is recorded.
//
// The run without them restores the backup again, into a scratch
// directory of its own: the files the first run left are not the
// backup's (a prepare or a server under the operator's flags may have
// changed them before it failed: applied part of the redo, rebuilt its redo
// log, upgraded tables, written recovery), and a verdict is only ever on
// the backup. So does what it finds: its record starts afresh (the tables
// the first run found failing are the flags' doing until the run without
// them fails them too), and where its verdict is the one given, the record
// is its own.

// runUnlessFlagsMisfit is run; where it failed with a verdict under the
// operator's flags (those of a prepare it began, those of a server it
// started), it runs the backup again without them to tell the flags from
// the backup.
func runUnlessFlagsMisfit(ctx context.Context, bh backupstorage.BackupHandle, opts Options, srv *server, rec *Record) error {
	prepared, onPhase := false, opts.OnPhase
	opts.OnPhase = func(phase string) {
		prepared = prepared || phase == fifobackupengine.PhasePrepare
		if onPhase != nil {
			onPhase(phase)
		}
	}
	served, err := run(ctx, bh, opts, srv, rec)
	if err == nil || (noVerdictIn(err) && !fifobackupengine.UnderPrepareFlags(err)) || ctx.Err() != nil {
		return err
	}
	names, flags, bare := withoutOperatorFlags(opts, prepared, served)
	if flags == "" {
		return err
	}
	bare.OnPhase = onPhase
	opts.Logger.Warningf("test restore failed with %s: restoring the backup again and starting it without them, so that a flag is not taken "+
		"for the backup", flags)
	again := Record{Version: rec.Version, Backup: rec.Backup, Started: rec.Started, Host: rec.Host}
	servedBare, errBare := run(ctx, bh, bare, srv, &again)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errBare == nil:
		return flagvalue.Contradiction(fmt.Errorf("%w; without %s the backup restores, starts and passes every check: those flags "+
			"do not fit this backup or this host, and nothing says the backup is damaged; correct them or leave them out", err, flags))
	case noVerdictIn(errBare) || (served && !servedBare):
		// The restore that passed once failed the second time, which says
		// nothing the first did not.
		return unreadable.Host(fmt.Errorf("%w; without %s the run could not be made (%v), so nothing tells the flags from the backup",
			err, flags, errBare), "it failed only under the operator's "+names+", and could not be run without them")
	}
	*rec = again // the verdict, and what it found, are the run's without them
	return fmt.Errorf("%v (and without %s: %w)", err, flags, errBare)
}

// withoutOperatorFlags says which of the operator's flags a failed run
// went through (its --fifo-backup-prepare-flags where it began a prepare,
// but for those that give it a keyring; its --mysqld-flags where it started
// a server): their names, and their names and values ("" where none), and
// opts without them.
func withoutOperatorFlags(opts Options, prepared, served bool) (names, flags string, bare Options) {
	var n, f []string
	bare = opts
	// The options that give the prepare its keyring stay: an encrypted
	// backup fails without them whatever its state.
	if keyring, others := fifobackupengine.KeyringPrepareFlags(opts.Restore.Config.PrepareFlags); prepared && others != "" {
		n, f = append(n, "--fifo-backup-prepare-flags"), append(f, fmt.Sprintf("--fifo-backup-prepare-flags=%q", fifobackupengine.RedactedFlags(others)))
		bare.Restore.Config.PrepareFlags = keyring
	}
	if served && len(opts.MysqldFlags) > 0 {
		n, f = append(n, "--mysqld-flags"), append(f, fmt.Sprintf("--mysqld-flags=%q", strings.Join(opts.MysqldFlags, " ")))
		bare.MysqldFlags = nil
	}
	return strings.Join(n, " and "), strings.Join(f, " and "), bare
}
