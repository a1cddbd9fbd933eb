package testrestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// The operator's --mysqld-flags are not the backup: a server that exits at
// start for a flag that does not fit the files (another page size, a log
// file geometry, a plugin this host lacks), or checks that fail under one,
// say nothing about the backup. A failure with them is a verdict only once
// the same files fail without them as well; where they pass without them,
// the flags are a usage error (exit 2) and nothing is recorded.
//
// The second run starts on the files the first left (mysqld stopped, or
// exited at start): the same directory a run without the flags would have
// had, less what the first server changed before it failed.

// serveUnlessFlagsMisfit is serve; where it failed with a verdict under
// the operator's --mysqld-flags, it serves the same files again without
// them to tell the flags from the backup.
func serveUnlessFlagsMisfit(ctx context.Context, srv *server, opts Options, rec *Record) error {
	err := serve(ctx, srv, opts, rec)
	if err == nil || len(opts.MysqldFlags) == 0 || noVerdictIn(err) || ctx.Err() != nil {
		return err
	}
	flags := strings.Join(opts.MysqldFlags, " ")
	opts.Logger.Warningf("test restore failed with --mysqld-flags=%q: starting the same files again without them, so that a flag is not taken "+
		"for the backup", flags)
	bare, again := opts, *rec
	bare.MysqldFlags = nil
	errBare := serve(ctx, srv, bare, &again)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errBare == nil:
		return flagvalue.Contradiction(fmt.Errorf("%w; without --mysqld-flags=%q the same files start and pass every check: those flags do not fit "+
			"this backup or this host, and nothing says the backup is damaged; correct them or leave them out", err, flags))
	case noVerdictIn(errBare):
		return unreadable.Host(fmt.Errorf("%w; without --mysqld-flags=%q the run could not be made (%v), so nothing tells the flags from the backup",
			err, flags, errBare), "it failed only under the operator's --mysqld-flags, and could not be run without them")
	}
	return fmt.Errorf("%w (and without --mysqld-flags=%q: %v)", err, flags, errBare)
}
