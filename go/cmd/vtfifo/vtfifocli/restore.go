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

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
)

// restoreDoc is `vtfifo restore`'s help.
var restoreDoc = commandDoc{"restore", "Restore a backup into a directory without Vitess (--prepare: a data directory mysqld starts on)",
	"Restores the backup (--backup, or the newest complete one) into --target-dir, which must not exist or be\n" +
		"empty, reading the lanes in parallel and checking every part and chunk as a tablet's restore does. With\n" +
		"--prepare the tool (xtrabackup or mariabackup) prepares it: start mysqld with --datadir on it.\n" +
		"No Vitess process, topology or tablet is needed. See docs/disaster-recovery.md. A backup of Vitess's xtrabackup engine\n" +
		"(docs/migration.md) is restored too, from its stream.",
	"  vtfifo restore --backup-storage-implementation=split --split-storage-backend=s3 --split-storage-s3-bucket=b \\\n" +
		"      --keyspace=commerce --shard=0 --target-dir=/var/lib/mysql-restored --prepare"}

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
			o.restoresLatest(fs)
			return func() error {
				if err := targetDirFlag(o, targetDir); err != nil {
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
		Config: cfg, Prepare: *prepare, DefaultsFile: *defaultsFile, ManifestDoc: s.manifestOf(bh),
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
