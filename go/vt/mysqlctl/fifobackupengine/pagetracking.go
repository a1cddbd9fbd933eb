package fifobackupengine

import (
	"context"
	"strings"
)

// How an incremental backup found the pages it copied (Manifest.IncrementalScan).
const (
	// ScanPageTracking: Percona XtraBackup was given --page-tracking, so a
	// delta reads only the pages the server's component_mysqlbackup recorded
	// as changed. The tool itself scans instead where the tracking cannot
	// serve this delta (xtrabackup.cc: tracking started after the base, a
	// tracking LSN of 0, the component call failing) and says so in its log
	// ("using the full scan for incremental backup").
	ScanPageTracking = "page-tracking"
	// ScanFull: every page of every tablespace read and compared with the
	// base's LSN (mariabackup always; PXB without the component, or forced).
	ScanFull = "full-scan"
)

// pageTrackingSince is the first Percona XtraBackup with --page-tracking.
var pageTrackingSince = [4]int{8, 0, 27, 0}

// mysqlbackupComponent is the server component page tracking needs.
const mysqlbackupComponent = "file://component_mysqlbackup"

// scanPlan is how this backup's tool finds changed pages: the options it is
// given and, for a delta, what the MANIFEST records.
type scanPlan struct {
	args []string
	mode string // "" for a full backup
}

// planScan passes --page-tracking on every backup (a full one starts the
// tracking its next delta reads) where the server has component_mysqlbackup,
// and forces a full scan of a delta where the tracking cannot be trusted:
// with --lock-ddl=REDUCED, which Percona's documentation says page tracking
// does not support.
func (b *backupRun) planScan(ctx context.Context, query queryRows, optionFile []optionLine) scanPlan {
	delta := b.base != nil
	full := scanPlan{}
	if delta {
		full.mode = ScanFull
	}
	if b.mariadb || b.tool.Flavor != FlavorXtrabackup || compareVersions([4]int{b.tool.Major, b.tool.Minor, b.tool.Patch, b.tool.Build}, pageTrackingSince) < 0 {
		return full
	}
	if lockDDLReduced(b.cfg.BackupFlags, optionFile) {
		if delta {
			b.logger.Infof("fifo backup: --lock-ddl=REDUCED: the delta scans every page (page tracking does not support the reduced lock)")
			full.args = []string{"--incremental-force-scan"}
		}
		return full
	}
	rows, err := query(ctx, "SELECT component_urn FROM mysql.component WHERE component_urn = '"+mysqlbackupComponent+"'")
	if err != nil || len(rows) == 0 {
		if delta {
			b.logger.Infof("fifo backup: the delta scans every page: the server has no %s (INSTALL COMPONENT '%s' lets deltas read only changed pages)",
				mysqlbackupComponent, mysqlbackupComponent)
		}
		return full
	}
	plan := scanPlan{args: []string{"--page-tracking"}}
	if delta {
		plan.mode = ScanPageTracking
	}
	return plan
}

// lockDDLReduced reports whether the tool will take the reduced DDL lock,
// from the engine's extra flags or the tool's own option groups.
func lockDDLReduced(flags string, optionFile []optionLine) bool {
	for _, f := range strings.Fields(strings.ToLower(strings.ReplaceAll(flags, "_", "-"))) {
		if strings.Trim(f, `"'`) == "--lock-ddl=reduced" {
			return true
		}
	}
	reduced := false
	for _, o := range optionFile {
		if o.Name == "lock-ddl" {
			reduced = strings.EqualFold(o.Value, "reduced")
		}
	}
	return reduced
}
