package testrestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// ErrNoRecords is returned by Store for a storage that keeps no documents
// beside a backup (only the split storage does).
var ErrNoRecords = errors.New("only the split storage keeps verification records")

// sidecars is what the split storage's handles offer beyond BackupHandle.
type sidecars interface {
	PutSidecar(ctx context.Context, name string, doc []byte) error
	ReadSidecar(ctx context.Context, name string) ([]byte, error)
	Quarantine(ctx context.Context, reason string) error
	// Siblings lists the complete backups of the handle's directory.
	Siblings(ctx context.Context) ([]backupstorage.BackupHandle, error)
}

var _ sidecars = (*splitstorage.Handle)(nil)

// Store writes rec beside bh, replacing an older record.
func Store(ctx context.Context, bh backupstorage.BackupHandle, rec Record) error {
	sc, ok := bh.(sidecars)
	if !ok {
		return ErrNoRecords
	}
	doc, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return sc.PutSidecar(ctx, RecordName, doc)
}

// Quarantine takes a backup that failed its test restore out of the list
// restores choose from (see splitstorage.Handle.Quarantine), and returns
// the backup it quarantined for itself: bh, or the base of bh's chain the
// test restore found damaged (rec.DamagedBase), whose quarantine takes bh
// and every other backup that needs the base out with it. A damaged base
// that is no longer listed (retired, kept for its chain) no restore picks:
// bh is quarantined for itself.
func Quarantine(ctx context.Context, bh backupstorage.BackupHandle, rec Record) (string, error) {
	sc, ok := bh.(sidecars)
	if !ok {
		return "", ErrNoRecords
	}
	reason := fmt.Sprintf("test restore failed %s: %s", rec.Started.Format("2006-01-02T15:04:05Z"), rec.Error)
	if rec.DamagedBase == "" {
		return bh.Name(), sc.Quarantine(ctx, reason)
	}
	base, err := listedBase(ctx, sc, rec.DamagedBase)
	if err != nil {
		return "", fmt.Errorf("its base %s is damaged, and it could not be opened to be quarantined: %w", rec.DamagedBase, err)
	}
	if base == nil {
		return bh.Name(), sc.Quarantine(ctx, reason)
	}
	reason = fmt.Sprintf("found damaged by the test restore of %s (%s): %s", bh.Name(), rec.Started.Format("2006-01-02T15:04:05Z"), rec.Error)
	return rec.DamagedBase, base.Quarantine(ctx, reason)
}

// listedBase opens the base named name of bh's chain when it is listed
// among the complete backups (nil when it is not).
func listedBase(ctx context.Context, bh sidecars, name string) (sidecars, error) {
	listed, err := bh.Siblings(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range listed {
		if s.Name() == name {
			sc, _ := s.(sidecars)
			return sc, nil
		}
	}
	return nil, nil
}

// Load reads bh's record; nil when it has none.
func Load(ctx context.Context, bh backupstorage.BackupHandle) (*Record, error) {
	sc, ok := bh.(sidecars)
	if !ok {
		return nil, nil
	}
	doc, err := sc.ReadSidecar(ctx, RecordName)
	if errors.Is(err, splitstorage.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := ParseRecord(doc)
	if err != nil {
		return nil, err
	}
	// A record proves something of the backup it names only: one copied in
	// from another backup is no proof of this one.
	if want := bh.Directory() + "/" + bh.Name(); rec.Backup != want {
		return nil, fmt.Errorf("the test restore record of backup %s is backup %s's (moved from another backup): it proves nothing of this one", want, rec.Backup)
	}
	return &rec, nil
}

// PassedFunc reports, for retention.KeepProven, whether a backup's latest
// test restore passed (an unreadable record counts as not proven).
func PassedFunc(ctx context.Context) func(backupstorage.BackupHandle) bool {
	return func(bh backupstorage.BackupHandle) bool {
		rec, err := Load(ctx, bh)
		return err == nil && rec != nil && rec.Outcome == Passed
	}
}

// RecordName is the name of the verification record beside the MANIFEST.
const RecordName = "verification"

// Outcomes of a Record.
const (
	Passed = "passed"
	Failed = "failed"
)

// Record is what a test restore found: written as JSON beside the backup.
type Record struct {
	Version  int       `json:"version"`
	Backup   string    `json:"backup"`
	Outcome  string    `json:"outcome"`
	Error    string    `json:"error,omitempty"`
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
	// Phases are the run's phases in order with their seconds: the
	// restore's (download, prepare), then the server's start and the check.
	Phases []fifobackupengine.PhaseSeconds `json:"phases,omitempty"`
	// Work is what the restore had to do (its chain's streams, redo and
	// prepares): with Phases, the rates that predict other restores.
	Work *fifobackupengine.RestoreWork `json:"work,omitempty"`
	// Predicted is what the earlier test restores predicted for this one
	// before it ran (vtfifo test-restore): its phases say how close.
	Predicted *fifobackupengine.PredictedRestore `json:"predicted,omitempty"`
	Host      string                             `json:"host,omitempty"`
	// Tool prepared the files; Server is the throwaway mysqld's VERSION().
	Tool   string `json:"tool,omitempty"`
	Server string `json:"server,omitempty"`
	// Bytes restored; Tables checked with CHECK TABLE (Uncheckable: their
	// engine has no CHECK, counted only); Rows counted in all of them.
	Bytes        int64    `json:"bytes"`
	Tables       int      `json:"tables"`
	Uncheckable  int      `json:"uncheckable,omitempty"`
	TablesFailed []string `json:"tables_failed,omitempty"`
	// NeedsRebuild are the tables the server would neither check nor read
	// before a rebuild or upgrade ("Table rebuild required", "upgrade
	// required"), each with its message: an older server's format, kept as
	// the source had it; no damage, neither checked nor counted.
	NeedsRebuild []string `json:"needs_rebuild,omitempty"`
	Rows         int64    `json:"rows"`
	// DamagedBase names the base of the backup's chain that the restore
	// found damaged in its own stored data (fifobackupengine.DamagedBackup):
	// Quarantine takes it out of the list, and with it every backup that
	// needs it.
	DamagedBase string `json:"damaged_base,omitempty"`
}

// ParseRecord reads a stored record.
func ParseRecord(doc []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(doc, &r); err != nil {
		return r, fmt.Errorf("verification record: %w", err)
	}
	if r.Version != 1 || (r.Outcome != Passed && r.Outcome != Failed) {
		return r, fmt.Errorf("verification record: unknown version %d or outcome %q", r.Version, r.Outcome)
	}
	return r, nil
}

// Summary is the record in a few words, as `vtfifo ls` shows it.
func (r Record) Summary() string {
	s := fmt.Sprintf("%s %s", r.Outcome, r.Started.UTC().Format("2006-01-02T15:04Z"))
	switch {
	case r.Outcome == Passed:
		return s + fmt.Sprintf(" (%d tables, %d rows)", r.Tables, r.Rows)
	case r.DamagedBase != "":
		// Mended and released, the base is back; this record stays
		// until the next test restore of this backup.
		return s + " (its base " + r.DamagedBase + " was found damaged)"
	}
	return s
}

// Sample is the record as a timed restore, for the predictions; ok is
// false for a test restore that failed or did not record its work.
func (r Record) Sample() (fifobackupengine.RestoreSample, bool) {
	if r.Outcome != Passed || r.Work == nil {
		return fifobackupengine.RestoreSample{}, false
	}
	return r.sample(), true
}

// sample sums the record's phases by kind.
func (r Record) sample() fifobackupengine.RestoreSample {
	var s fifobackupengine.RestoreSample
	if r.Work != nil {
		s.Work = *r.Work
	}
	for _, p := range r.Phases {
		switch p.Phase {
		case fifobackupengine.PhaseDownload:
			s.Download += p.Seconds
		case fifobackupengine.PhasePrepare:
			s.Prepare += p.Seconds
		case PhaseStart:
			s.Start += p.Seconds
		}
	}
	return s
}

// recentSamples is how many of the latest test restores the predictions
// learn from: enough to outvote one slow run, few enough to follow a
// change of hosts.
const recentSamples = 10

// Rates are the restore rates of the latest passed test restores among
// recs (their records); ok is false when none can teach them.
func Rates(recs []Record) (fifobackupengine.RestoreRates, bool) {
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b Record) int { return b.Started.Compare(a.Started) })
	var samples []fifobackupengine.RestoreSample
	for _, r := range recs {
		if s, ok := r.Sample(); ok && len(samples) < recentSamples {
			samples = append(samples, s)
		}
	}
	return fifobackupengine.FitRestoreRates(samples)
}

// Served is how long the restore took until the server accepted
// connections: its download, prepare and start, as Predicted counts them.
func (r Record) Served() time.Duration {
	s := r.sample()
	return time.Duration((s.Download + s.Prepare + s.Start) * float64(time.Second))
}
