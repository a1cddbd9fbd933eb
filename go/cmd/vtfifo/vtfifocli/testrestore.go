package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// testRestoreDoc is `vtfifo test-restore`'s help.
var testRestoreDoc = commandDoc{"test-restore", "Prove a backup restorable: restore, prepare, start a throwaway mysqld, CHECK TABLE every table",
	"Restores and prepares the backup into a scratch directory, starts a throwaway mysqld on it (its own socket,\n" +
		"no network, no grants, no replication, no events), runs CHECK TABLE and counts the rows of every table,\n" +
		"stops it and removes the scratch directory. The verification record (when, tool and server versions,\n" +
		"tables, rows, duration, outcome) is stored beside the backup on the split storage; `vtfifo ls` shows it. A run\n" +
		"that could not read the backup (a permission, a timeout, this host's keys) or that this host failed (a full disk, a tool killed by\n" +
		"the OOM killer, a mysqld that does not start even on an empty data directory) records nothing and exits 3; no tool, or\n" +
		"not the backup's, exits 2. A backup that fails is quarantined (--quarantine-on-failure): no restore chooses it;\n" +
		"a failure in a base of its chain quarantines that base, and every backup that needs it with it.\n" +
		"A backup of Vitess's xtrabackup engine (docs/migration.md) is tested the same way, from its stream.",
	"  vtfifo test-restore --backup-storage-implementation=split --split-storage-root=/backups \\\n" +
		"      --keyspace=commerce --shard=0 --scratch-dir=/var/tmp"}

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
			quarantine = fs.Bool("quarantine-on-failure", true, "when the test fails, quarantine the backup: no restore chooses it, a tablet's "+
				"included (vtfifo release puts it back); =false keeps only the record, which vtfifo's restores and retention heed but a tablet's "+
				"restore does not; off with --record=false")
			asJSON = fs.Bool("json", false, "print one JSON object (the record, where it was stored, whether the backup was quarantined) instead of a line")
			o.registerProgressFlags(fs)
			return func() error {
				if err := errors.Join(tr.Validate(), tr.ScratchExists()); err != nil {
					return err
				}
				if dir := tr.ScratchDir(); dir != "" {
					if err := outsideRoot(o, "--scratch-dir", dir); err != nil {
						return err
					}
				}
				if !*record {
					if *quarantine && fs.Changed("quarantine-on-failure") {
						return errors.New("--quarantine-on-failure needs --record")
					}
					*quarantine = false // nothing may be written: a read-only run
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
	opts.Restore.ManifestDoc = s.manifestOf(bh)
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
	if err != nil && s.ctx.Err() == nil && flagvalue.IsContradiction(err) {
		return s.o.failf(exitUsage, "%v", err) // a usage error, as every command says one
	}
	if err != nil {
		fmt.Fprintln(failed, failLine(err))
		return s.status(err)
	}
	if rec.Outcome == testrestore.Passed {
		rec.Predicted = predicted
	}
	res, err := keepTestRestore(s.ctx, bh, rec, *record, *quarantine)
	if err != nil {
		return reportFailure(failed, err)
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
	// NotQuarantined says why a failed backup could not be quarantined.
	NotQuarantined string `json:"not_quarantined,omitempty"`
	// QuarantinedBase names the base of the backup's chain the test found
	// damaged (Record.DamagedBase), quarantined with every backup that
	// needs it, this one among them.
	QuarantinedBase string `json:"quarantined_base,omitempty"`
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
		switch which, err := testrestore.Quarantine(ctx, bh, rec); {
		case errors.Is(err, testrestore.ErrNoRecords):
			res.NotQuarantined = "not quarantined either (the same reason): restores may still choose it"
		case err != nil:
			return res, fmt.Errorf("test restore of %s failed and it could not be quarantined: %w", rec.Backup, err)
		default:
			res.Quarantined = true
			if which != bh.Name() {
				res.QuarantinedBase = which
			}
		}
	}
	return res, nil
}

// print writes the result as one OK or FAIL line.
func (res TestRestoreResult) print(w io.Writer) {
	rec, stored := res.Record, res.Stored
	if rec.Outcome != testrestore.Passed {
		switch {
		case res.QuarantinedBase != "":
			stored += fmt.Sprintf("; its base %s is damaged: it is quarantined, and with it every backup that needs it, this one among them: "+
				"restores no longer choose them (vtfifo repair, then vtfifo release --backup=%[1]s, puts them back)", res.QuarantinedBase)
		case res.Quarantined:
			stored += "; the backup is quarantined: restores no longer choose it"
		case res.NotQuarantined != "":
			stored += "; " + res.NotQuarantined
		case strings.HasPrefix(stored, "stored"):
			// The record steers vtfifo's choices only; Vitess picks the
			// newest backup whose MANIFEST reads.
			stored += "; not quarantined (--quarantine-on-failure=false): vtfifo restore passes over it and retention does not count it, but a " +
				"tablet's restore may still choose it (a test restore without that flag takes it out of every restore's choice)"
		}
		fmt.Fprintf(w, "FAIL: test restore of %s (%s, record %s): %s\n", rec.Backup, rec.Duration, stored, rec.Error)
		return
	}
	unchecked := ""
	if rec.Uncheckable > 0 {
		unchecked = fmt.Sprintf(" (%d of them with an engine that has no CHECK: counted only)", rec.Uncheckable)
	}
	if n := len(rec.NeedsRebuild); n > 0 {
		unchecked += fmt.Sprintf(" (%d of them in an older server's format, kept as the source had it, which this server reads only after a "+
			"rebuild or upgrade: not damage, neither checked nor counted: %s)", n, strings.Join(rec.NeedsRebuild[:min(n, 3)], "; "))
	}
	fmt.Fprintf(w, "OK: test restore of %s passed in %s: %s restored, prepared by %s, started by %s; CHECK TABLE on %d tables%s, %d rows; record %s%s%s\n",
		rec.Backup, rec.Duration, humanize.IBytes(uint64(rec.Bytes)), rec.Tool, rec.Server, rec.Tables, unchecked, rec.Rows, stored, phasesText(rec.Phases),
		predictionText(rec))
}
