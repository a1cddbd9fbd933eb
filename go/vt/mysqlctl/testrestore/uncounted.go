package testrestore

import (
	"context"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// UncountedFunc says, for retention.KeepCount (vtfifo prune's --keep,
// vtbackup's --min-retention-count), why a backup does not count among the
// backups a retention keeps, "" when it does: its test restore failed, its
// record could not be read (nothing says whether it passed), or the checks
// before a restore's first byte prove it broken
// (fifobackupengine.CheckRestorable: its MANIFEST, or a base of its chain,
// damaged or missing) or could not read it. An older backup is removed on
// the strength of the newer ones counted, so only what is proven not
// broken counts: a retention keeps more, never fewer. Each backup is
// checked once.
func UncountedFunc(ctx context.Context) func(backupstorage.BackupHandle) string {
	seen := map[string]string{}
	return func(bh backupstorage.BackupHandle) string {
		if why, ok := seen[bh.Name()]; ok {
			return why
		}
		why := uncounted(ctx, bh)
		seen[bh.Name()] = why
		return why
	}
}

func uncounted(ctx context.Context, bh backupstorage.BackupHandle) string {
	rec, err := Load(ctx, bh)
	switch {
	case err != nil:
		return "its test restore record could not be used (" + errtext.Line(err) + "): nothing says whether it passed"
	case rec != nil && rec.Outcome == Failed:
		return "its own test restore failed"
	}
	switch err := fifobackupengine.CheckRestorable(ctx, bh); {
	case err == nil:
		return ""
	case unreadable.Is(err):
		return "it could not be checked (" + errtext.Line(err) + "), which says nothing about it, nor that it restores"
	case flagvalue.IsContradiction(err):
		return "restores pass over it: " + errtext.Line(err)
	default:
		return "it is broken: " + errtext.Line(err)
	}
}
