package tableimport

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"vitess.io/vitess/go/vt/logutil"
)

// An import is durable once InnoDB's checkpoint has passed it. Until then,
// MariaDB 10.11's crash recovery replays redo written before the import onto
// the imported tablespace: after a crash a partitioned table came back
// empty, a plain one without the writes made after the import, an
// instant-ALTERed one corrupted (TestImportDurableRealMariaDB; a plain
// export and import by hand does the same, FLUSH TABLES ... FOR EXPORT does
// not help, a clean restart or a checkpoint does).

// checkpointLock serialises the imports that move the server's flushing
// setting, so that one never puts back what another set.
const checkpointLock = "vtfifo_import_checkpoint"

// defaultDurableTimeout bounds the wait for the checkpoint.
const defaultDurableTimeout = 10 * time.Minute

// errNoLSNStatus: the server shows no Innodb_lsn_* status (MySQL 8).
var errNoLSNStatus = errors.New("no Innodb_lsn_current status")

// makeDurable returns once the checkpoint has passed everything written so
// far: it reads the current LSN, has the page cleaner flush every dirty page
// (innodb_max_dirty_pages_pct=0, the server's own value recorded first and
// put back after, settings.go) and waits for Innodb_lsn_last_checkpoint to
// reach that LSN. On a server without those status variables (MySQL 8, not
// run here) it returns errNoLSNStatus.
func makeDurable(ctx context.Context, conn *sql.Conn, timeout time.Duration, logger logutil.Logger) error {
	target, err := lsnStatus(ctx, conn, "Innodb_lsn_current")
	if err != nil {
		return err
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", checkpointLock, int(timeout.Seconds())).Scan(&got); err != nil {
		return fmt.Errorf("taking the lock %s: %w", checkpointLock, err)
	}
	if got.Int64 != 1 {
		return fmt.Errorf("another import held the lock %s for %v (its checkpoint wait): run the restore again when it is done", checkpointLock, timeout)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK(?)", checkpointLock)
	flushing, err := flushAll(ctx, conn, logger)
	if err != nil {
		return err
	}
	defer flushing.restore(ctx, conn, logger)
	deadline := time.Now().Add(timeout)
	for {
		done, err := lsnStatus(ctx, conn, "Innodb_lsn_last_checkpoint")
		switch {
		case err != nil:
			return err
		case done >= target:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("InnoDB's checkpoint did not pass the import in %v (at LSN %d, the import ended at %d): a crash now could lose the table",
				timeout, done, target)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lsnStatus reads one of MariaDB's Innodb_lsn_* status variables.
func lsnStatus(ctx context.Context, conn *sql.Conn, name string) (uint64, error) {
	var n, v string
	err := conn.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&n, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, errNoLSNStatus
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(v, 10, 64)
}
