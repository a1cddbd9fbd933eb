package testrestore

import (
	"context"
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// The operator's --mysqld-flags are not the backup: a server that exits at
// start for a flag that does not fit the files (another page size, a log
// file geometry, a plugin this host lacks), or checks that fail under one,
// say nothing about the backup. A failure with them is a verdict only once
// the backup fails without them as well; where it passes without them, the
// flags are a usage error (exit 2) and nothing is recorded.
//
// The run without them restores the backup again, into a scratch
// directory of its own: the files the first server left are not the
// backup's (a server under the operator's flags may have changed them
// before it failed: rebuilt its redo log, upgraded tables, written
// recovery), and a verdict is only ever on the backup.

// runUnlessFlagsMisfit is run; where its server failed with a verdict
// under the operator's --mysqld-flags, it runs the backup again without
// them to tell the flags from the backup.
func runUnlessFlagsMisfit(ctx context.Context, bh backupstorage.BackupHandle, opts Options, srv *server, rec *Record) error {
	served, err := run(ctx, bh, opts, srv, rec)
	if !served || err == nil || len(opts.MysqldFlags) == 0 || noVerdictIn(err) || ctx.Err() != nil {
		return err
	}
	flags := strings.Join(opts.MysqldFlags, " ")
	opts.Logger.Warningf("test restore failed with --mysqld-flags=%q: restoring the backup again and starting it without them, so that a flag "+
		"is not taken for the backup", flags)
	bare, again := opts, *rec
	bare.MysqldFlags = nil
	servedBare, errBare := run(ctx, bh, bare, srv, &again)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errBare == nil:
		return flagvalue.Contradiction(fmt.Errorf("%w; without --mysqld-flags=%q the backup restores, starts and passes every check: those flags "+
			"do not fit this backup or this host, and nothing says the backup is damaged; correct them or leave them out", err, flags))
	case noVerdictIn(errBare) || !servedBare:
		// Not served: the restore that passed once failed the second time,
		// which says nothing the first did not.
		return unreadable.Host(fmt.Errorf("%w; without --mysqld-flags=%q the run could not be made (%v), so nothing tells the flags from the backup",
			err, flags, errBare), "it failed only under the operator's --mysqld-flags, and could not be run without them")
	}
	return fmt.Errorf("%w (and without --mysqld-flags=%q: %v)", err, flags, errBare)
}
