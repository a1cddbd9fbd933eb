package vtfifocli

import (
	"fmt"
	"io"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// asOfTime is ls --as-of: a time as --restore-from-backup-ts takes it
// (2006-01-02.150405, UTC) or RFC 3339.
type asOfTime struct{ t time.Time }

func (a *asOfTime) String() string {
	if a.t.IsZero() {
		return ""
	}
	return a.t.UTC().Format(time.RFC3339)
}

func (a *asOfTime) Set(v string) error {
	for _, layout := range []string{mysqlctl.BackupTimestampFormat, time.RFC3339} {
		if t, err := time.Parse(layout, v); err == nil {
			a.t = t
			return nil
		}
	}
	return invalid("as-of", v, "a time as --restore-from-backup-ts takes it (2006-01-02.150405, UTC) or RFC 3339 (2006-01-02T15:04:05Z)")
}

func (a *asOfTime) Type() string { return "time" }

// AsOfResult is ls --as-of's answer (--json prints it).
type AsOfResult struct {
	AsOf       string                        `json:"as_of"`
	Picked     string                        `json:"picked,omitempty"`
	PickedTime string                        `json:"picked_time,omitempty"`
	PassedOver []fifobackupengine.PassedOver `json:"passed_over,omitempty"`
}

// asOf prints which backup of the shard a restore to t would restore
// (--restore-from-backup-ts, RestoreFromBackup --backup-timestamp) and why
// each newer one is passed over; exitUnreachable when none would do.
func (s *session) asOf(t time.Time, asJSON bool, stdout io.Writer) int {
	bhs, code := s.shardBackups()
	if code != exitOK {
		return code
	}
	c := fifobackupengine.AsOf(s.ctx, bhs, t)
	res := AsOfResult{AsOf: t.UTC().Format(time.RFC3339), PassedOver: c.PassedOver}
	if c.Picked != nil {
		res.Picked, res.PickedTime = s.o.dir()+"/"+c.Picked.Name(), c.PickedTime.UTC().Format(time.RFC3339)
	}
	if asJSON {
		writeJSON(stdout, res)
	} else {
		for _, p := range c.PassedOver {
			fmt.Fprintf(stdout, "passed over %s/%s: %s\n", s.o.dir(), p.Backup, p.Why)
		}
		if c.Picked != nil {
			later := ""
			if c.PickedTime.After(t) {
				later = fmt.Sprintf(": later than %s, as Vitess compares this engine's backups by their start", res.AsOf)
			}
			fmt.Fprintf(stdout, "a restore to %s restores %s: its data is as of %s (%s)%s\n", res.AsOf, res.Picked, res.PickedTime, c.PickedWhy, later)
		}
	}
	if c.Picked == nil {
		return s.o.failf(exitUnreachable, "no complete backup in %s holds data as of %s or before: a restore to that time fails", s.o.where(), res.AsOf)
	}
	return exitOK
}
