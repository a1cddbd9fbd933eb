package tableimport

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"vitess.io/vitess/go/vt/logutil"
)

// Replica is a replica a copy through the binary log waits for.
type Replica struct {
	Name string // how it is named in messages (its address)
	DB   *sql.DB
}

// replicaPoll is how long one wait on a replica lasts before the copy says
// it is still waiting.
const replicaPoll = 10 * time.Second

// Replicas paces a copy by its replicas (Options.Pace): after each batch,
// it waits until every replica has applied all the primary has logged, so
// that none falls more than a batch behind. A replica that applies nothing
// for stall (stopped, broken) fails the copy, which is then undone. MariaDB
// waits with MASTER_GTID_WAIT on @@gtid_binlog_pos; MySQL 8 (written from
// its manual, not run here) with WAIT_FOR_EXECUTED_GTID_SET on
// @@gtid_executed.
func Replicas(primary *sql.DB, replicas []Replica, stall time.Duration, logger logutil.Logger) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var version, pos string
		if err := primary.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
			return err
		}
		position, wait := "SELECT @@GLOBAL.gtid_binlog_pos", "SELECT MASTER_GTID_WAIT(?, ?)"
		if !strings.Contains(version, "MariaDB") {
			position, wait = "SELECT @@GLOBAL.gtid_executed", "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)"
		}
		if err := primary.QueryRowContext(ctx, position).Scan(&pos); err != nil {
			return fmt.Errorf("reading the primary's position: %w", err)
		}
		for _, r := range replicas {
			if err := waitFor(ctx, r, wait, pos, stall, logger); err != nil {
				return err
			}
		}
		return nil
	}
}

// waitFor waits until r has applied pos, saying so every replicaPoll, for
// at most stall.
func waitFor(ctx context.Context, r Replica, wait, pos string, stall time.Duration, logger logutil.Logger) error {
	start := time.Now()
	for {
		poll := min(replicaPoll, stall-time.Since(start))
		if poll <= 0 {
			return replicaBehind{fmt.Errorf("replica %s has not applied the copy's last batch in %v (GTID position %s): is it stopped? the copy "+
				"waits for it (--replica)", r.Name, stall, pos)}
		}
		var res sql.NullInt64
		if err := r.DB.QueryRowContext(ctx, wait, pos, poll.Seconds()).Scan(&res); err != nil {
			return fmt.Errorf("waiting for replica %s: %w", r.Name, err)
		}
		if res.Valid && res.Int64 == 0 {
			return nil
		}
		logger.Infof("restore-table: waiting for replica %s to apply up to %s (%v so far)", r.Name, pos, time.Since(start).Round(time.Second))
	}
}
