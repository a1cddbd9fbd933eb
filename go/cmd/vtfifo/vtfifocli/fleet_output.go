package vtfifocli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

func writeFleetTable(w io.Writer, shards []ShardStatus, now time.Time) int {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEYSPACE/SHARD\tBACKUPS\tNEWEST\tAGE\tCHAIN\tRESTORE-TIME\tNEWEST-PROVEN\tAGE\tTEST-FAILED\tQUARANTINED\tINCOMPLETE\tNEWEST-LOCK\tCHECK")
	for _, sh := range shards {
		check := "ok"
		if len(sh.Problems) > 0 {
			check = "FAIL: " + strings.Join(sh.Problems, "; ")
		}
		if sh.NotInTopology {
			check += " (not in the topology)"
		}
		if sh.PassedOver > 0 {
			check += fmt.Sprintf(" (%d newer passed over by restores: vtfifo ls --keyspace=%s --shard=%s says why)", sh.PassedOver, sh.Keyspace, sh.Shard)
		}
		fmt.Fprintf(tw, "%s/%s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", sh.Keyspace, sh.Shard, sh.Backups, dash(sh.Newest),
			dash(ageIf(now, sh.Newest, sh.Time)), sh.ChainLength, predicted(sh.NewestPredictedRestore), dash(sh.NewestProven),
			dash(ageIf(now, sh.NewestProven, sh.NewestProvenTime)), sh.TestRestoreFailed, sh.Quarantined, sh.Incomplete, dash(lockDate(sh.NewestLockedUntil)), check)
	}
	if err := tw.Flush(); err != nil {
		return exitUnreachable
	}
	return exitOK
}

func ageIf(now time.Time, name string, t time.Time) string {
	if name == "" {
		return ""
	}
	return age(now, t)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writePrometheus prints the fleet in the Prometheus text format: times as
// Unix seconds (0: none), counts, and whether each shard passed the checks;
// for a shard that could not be read, only vtfifo_shard_read 0 (a zero
// count would say it has no backups).
func writePrometheus(w io.Writer, v fleetView) {
	shards, now := v.shards, v.at
	metric := func(name, help, kind string, value func(ShardStatus) float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
		for _, sh := range shards {
			if !sh.Unread {
				fmt.Fprintf(w, "%s{keyspace=%q,shard=%q} %g\n", name, sh.Keyspace, sh.Shard, value(sh))
			}
		}
	}
	fmt.Fprintf(w, "# HELP vtfifo_shard_read 1 when the shard's backups were listed; 0 when they could not be (its other metrics are left out).\n"+
		"# TYPE vtfifo_shard_read gauge\n")
	for _, sh := range shards {
		read := 1
		if sh.Unread {
			read = 0
		}
		fmt.Fprintf(w, "vtfifo_shard_read{keyspace=%q,shard=%q} %d\n", sh.Keyspace, sh.Shard, read)
	}
	unix := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return float64(t.Unix())
	}
	metric("vtfifo_backups", "Complete backups of the shard, as Vitess lists them (not those copied there by hand).", "gauge", func(s ShardStatus) float64 { return float64(s.Backups) })
	metric("vtfifo_backup_newest_timestamp_seconds", "When the shard's newest complete backup was taken (0: none).", "gauge",
		func(s ShardStatus) float64 { return unix(s.Time) })
	metric("vtfifo_backup_newest_proven_timestamp_seconds", "When the shard's newest backup that passed a test restore was taken (0: none).", "gauge",
		func(s ShardStatus) float64 { return unix(s.NewestProvenTime) })
	metric("vtfifo_backup_newest_locked_until_timestamp_seconds", "Until when the shard's newest backup is locked at the store (0: not locked).",
		"gauge", func(s ShardStatus) float64 {
			if s.NewestLockedUntil == nil {
				return 0
			}
			return unix(*s.NewestLockedUntil)
		})
	metric("vtfifo_backup_chain_length", "The newest backup's place after its chain's full backup (0: full).", "gauge",
		func(s ShardStatus) float64 { return float64(s.ChainLength) })
	metric("vtfifo_backup_newest_predicted_restore_seconds", "How long restoring the shard's newest backup should take, at the rates of "+
		"the storage's latest test restores (0: not predicted).", "gauge", func(s ShardStatus) float64 {
		if s.NewestPredictedRestore == nil {
			return 0
		}
		return s.NewestPredictedRestore.Total().Seconds()
	})
	metric("vtfifo_backups_test_restore_failed", "Complete backups whose latest test restore failed.", "gauge",
		func(s ShardStatus) float64 { return float64(s.TestRestoreFailed) })
	metric("vtfifo_backups_passed_over", "Complete backups newer than the newest a restore takes, which restores pass over (a damaged "+
		"MANIFEST, another backup's copied there).", "gauge", func(s ShardStatus) float64 { return float64(s.PassedOver) })
	metric("vtfifo_backups_quarantined", "Quarantined backups of the shard.", "gauge", func(s ShardStatus) float64 { return float64(s.Quarantined) })
	metric("vtfifo_backups_incomplete", "Backups started and never completed.", "gauge", func(s ShardStatus) float64 { return float64(s.Incomplete) })
	metric("vtfifo_backup_check_ok", "1 when the shard passed ls's checks (--max-age, --max-unproven-age).", "gauge", func(s ShardStatus) float64 {
		if len(s.Problems) > 0 {
			return 0
		}
		return 1
	})
	fmt.Fprintf(w, "# HELP vtfifo_ls_timestamp_seconds When vtfifo ls read the storage.\n# TYPE vtfifo_ls_timestamp_seconds gauge\n"+
		"vtfifo_ls_timestamp_seconds %d\n", now.Unix())
	writeRefreshMetrics(w, v.report)
}

// writeRefreshMetrics prints what reading the fleet cost: what a scrape
// interval or a refresh interval is chosen by.
func writeRefreshMetrics(w io.Writer, rep splitstorage.FleetReport) {
	for _, m := range []struct {
		name, help string
		value      float64
	}{
		{"vtfifo_fleet_refresh_requests", "Requests the last read of the fleet sent to the store.", float64(rep.Requests.Total())},
		{"vtfifo_fleet_refresh_seconds", "How long the last read of the fleet took.", rep.Took.Seconds()},
		{"vtfifo_fleet_shards_walked", "Shards whose backups the last read of the fleet walked (no summary, or a stale one).", float64(rep.Rebuilt)},
		{"vtfifo_fleet_shards_summarized", "Shards the last read of the fleet took from their summaries.", float64(rep.Read)},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %g\n", m.name, m.help, m.name, m.name, m.value)
	}
}

// lockDate is a lock's date for a table ("" for none).
func lockDate(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
