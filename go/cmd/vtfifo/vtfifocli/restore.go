package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// Restore is `vtfifo restore`: a backup restored into a directory, with no
// Vitess process, topology or tablet; with --prepare a data directory mysqld
// starts on.
func Restore(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var targetDir, defaultsFile *string
	var prepare, asJSON *bool
	s, bh, code := openBackupOf(ctx, streamEngines, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			targetDir = fs.String("target-dir", "", "directory to restore into: it must not exist or be empty (required)")
			prepare = fs.Bool("prepare", false, "run the tool's --prepare (xtrabackup or mariabackup, --fifo-backup-tool-path) so mysqld starts on the directory")
			defaultsFile = fs.String("defaults-file", "", "option file for the tool's --prepare (its --defaults-file); empty reads none (the tool reads the "+
				"backup's backup-my.cnf)")
			asJSON = fs.Bool("json", false, "print one JSON object (backup, target, files, bytes, position, chain, tool) instead of a line")
			o.registerProgressFlags(fs)
			return func() error {
				if err := targetDirFlag(*targetDir); err != nil {
					return err
				}
				if *defaultsFile != "" && !*prepare {
					return errors.New("--defaults-file needs --prepare")
				}
				return o.validateProgress()
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	dir, _ := filepath.Abs(*targetDir)
	where := s.o.dir() + "/" + bh.Name()
	prog2 := newProgress(s.o, stderr, prog+" "+where)
	cfg := fifobackupengine.FlagConfig()
	cfg.Progress = 0 // the command shows its own (--progress)
	var times fifobackupengine.PhaseTimes
	rep, err := fifobackupengine.RestoreToDir(s.ctx, bh, dir, fifobackupengine.RestoreDirOptions{
		Config: cfg, Prepare: *prepare, DefaultsFile: *defaultsFile,
		OnManifest: prog2.setLanes,
		OnRead:     prog2.addLane,
		OnPhase:    func(phase string) { times.Begin(phase); prog2.phase(phase) },
		Logger:     s.logger,
	})
	prog2.stop()
	if err != nil {
		return s.fail(err)
	}
	res := RestoreResult{Backup: where, Target: dir, Files: rep.Files, Bytes: rep.Bytes, Position: rep.Manifest.Position.String(), Tool: rep.Tool,
		Phases: times.Done()}
	if len(rep.Chain) > 1 {
		res.Chain = rep.Chain
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	res.print(stdout)
	return 0
}

// RestoreResult is what restore did (--json prints it).
type RestoreResult struct {
	Backup string `json:"backup"`
	Target string `json:"target"`
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
	// Position is the backup's replication position (of the last backup of
	// Chain, for an incremental one).
	Position string `json:"position"`
	// Chain is what an incremental backup's restore applied, full first.
	Chain []string `json:"chain,omitempty"`
	// Tool prepared the directory; empty: extracted only.
	Tool string `json:"tool,omitempty"`
	// Phases are the restore's phases in order with their seconds.
	Phases []fifobackupengine.PhaseSeconds `json:"phases,omitempty"`
}

func (r RestoreResult) print(w io.Writer) {
	what := "extracted (not prepared: run the tool's --prepare, or restore with --prepare)"
	if r.Tool != "" {
		what = "prepared with " + r.Tool + "; start it with mysqld --datadir=" + r.Target
	}
	if len(r.Chain) > 1 {
		what = fmt.Sprintf("incremental: its chain %s applied in order; %s", strings.Join(r.Chain, ", "), what)
	}
	fmt.Fprintf(w, "OK: backup %s restored into %s: %d files, %s, position %s; %s%s\n",
		r.Backup, r.Target, r.Files, humanize.IBytes(uint64(r.Bytes)), r.Position, what, phasesText(r.Phases))
}

// phasesText is "; took download 3.2s, prepare 0.4s", or "" for none.
func phasesText(phases []fifobackupengine.PhaseSeconds) string {
	if len(phases) == 0 {
		return ""
	}
	return "; took " + fifobackupengine.FormatPhases(phases)
}

// TestRestore is `vtfifo test-restore`: the backup restored, prepared and
// started by a throwaway mysqld that checks every table; the outcome is
// stored beside the backup (split storage), where `vtfifo ls` shows it.
func TestRestore(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var tr testrestore.Flags
	var record, quarantine, asJSON *bool
	s, bh, code := openBackupOf(ctx, streamEngines, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			tr.Register(fs, "")
			record = fs.Bool("record", true, "store the verification record beside the backup (split storage)")
			quarantine = fs.Bool("quarantine-on-failure", false, "when the test fails, quarantine the backup: restores no longer choose it (vtfifo "+
				"release puts it back)")
			asJSON = fs.Bool("json", false, "print one JSON object (the record, where it was stored, whether the backup was quarantined) instead of a line")
			o.registerProgressFlags(fs)
			return func() error {
				if err := tr.Validate(); err != nil {
					return err
				}
				if *quarantine && !*record {
					return errors.New("--quarantine-on-failure needs --record")
				}
				return o.validateProgress()
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	where := s.o.dir() + "/" + bh.Name()
	prog2 := newProgress(s.o, stderr, prog+" "+where)
	opts := tr.Options(s.logger)
	opts.Restore.Config.Progress = 0 // the command shows its own (--progress)
	opts.Restore.OnManifest = prog2.setLanes
	opts.Restore.OnRead = prog2.addLane
	opts.OnPhase = prog2.phase
	// A test that could not run is a FAIL line; with --json, stdout holds
	// only the JSON result, and the failure goes to stderr.
	failed := stdout
	if *asJSON {
		failed = stderr
	}
	// Predicted before it runs, from the shard's earlier test restores
	// only, so that the record says how close the prediction came.
	predicted := s.predictedRestore(bh.Name())
	rec, err := testrestore.Run(s.ctx, bh, opts)
	prog2.stop()
	if err != nil {
		fmt.Fprintln(failed, failLine(err))
		return s.status(err)
	}
	if rec.Outcome == testrestore.Passed {
		rec.Predicted = predicted
	}
	res, err := keepTestRestore(s.ctx, bh, rec, *record, *quarantine)
	if err != nil {
		fmt.Fprintln(failed, failLine(err))
		return failureStatus(err)
	}
	if *asJSON {
		writeJSON(stdout, res)
	} else {
		res.print(stdout)
	}
	if rec.Outcome != testrestore.Passed {
		return 1
	}
	return 0
}

// TestRestoreResult is what test-restore reports: the record, and what
// became of it (--json prints it).
type TestRestoreResult struct {
	Record      testrestore.Record `json:"record"`
	Stored      string             `json:"stored"`
	Quarantined bool               `json:"quarantined"`
}

// keepTestRestore stores a test restore's record beside the backup when
// asked and possible, and quarantines a failed backup when asked.
func keepTestRestore(ctx context.Context, bh backupstorage.BackupHandle, rec testrestore.Record, store, quarantine bool) (TestRestoreResult, error) {
	res := TestRestoreResult{Record: rec, Stored: "not stored (--record=false)"}
	if store {
		switch err := testrestore.Store(ctx, bh, rec); {
		case errors.Is(err, testrestore.ErrNoRecords):
			res.Stored = "not stored: " + err.Error()
		case err != nil:
			return res, fmt.Errorf("the verification record could not be stored: %w", err)
		default:
			res.Stored = "stored beside the backup"
		}
	}
	if rec.Outcome != testrestore.Passed && quarantine {
		if err := testrestore.Quarantine(ctx, bh, rec); err != nil {
			return res, fmt.Errorf("test restore of %s failed and it could not be quarantined: %w", rec.Backup, err)
		}
		res.Quarantined = true
	}
	return res, nil
}

// print writes the result as one OK or FAIL line.
func (res TestRestoreResult) print(w io.Writer) {
	rec, stored := res.Record, res.Stored
	if rec.Outcome != testrestore.Passed {
		if res.Quarantined {
			stored += "; the backup is quarantined: restores no longer choose it"
		}
		fmt.Fprintf(w, "FAIL: test restore of %s (%s, record %s): %s\n", rec.Backup, rec.Duration, stored, rec.Error)
		return
	}
	unchecked := ""
	if rec.Uncheckable > 0 {
		unchecked = fmt.Sprintf(" (%d of them with an engine that has no CHECK: counted only)", rec.Uncheckable)
	}
	fmt.Fprintf(w, "OK: test restore of %s passed in %s: %s restored, prepared by %s, started by %s; CHECK TABLE on %d tables%s, %d rows; record %s%s%s\n",
		rec.Backup, rec.Duration, humanize.IBytes(uint64(rec.Bytes)), rec.Tool, rec.Server, rec.Tables, unchecked, rec.Rows, stored, phasesText(rec.Phases),
		predictionText(rec))
}
