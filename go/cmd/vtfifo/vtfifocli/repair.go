package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// repairDoc is `vtfifo repair`'s help.
var repairDoc = commandDoc{"repair", "Repair a backup's damaged parts from its copy in a second split storage, verified after",
	"Verifies the backup --backup names (complete, quarantined or a retired base); every part found missing or\n" +
		"damaged is read from the same backup in the storage --from-flags-file and --from describe (where vtfifo copy\n" +
		"put it), checked against the backup's own index (size and CRC32C), and written in place; then the backup is\n" +
		"verified whole again. Damage to an index or the completion marker is reported, never guessed at.",
	"  vtfifo repair --flags-file=/etc/vitess/vttablet.flags --keyspace=commerce --shard=0 \\\n" +
		"      --backup=2026-11-23.162035.zone1-0000000100 --from-flags-file=/etc/vitess/dr-region.flags"}

// Repair is `vtfifo repair`: the damaged or missing parts of one backup
// replaced by the same parts of its copy in a second split storage, each
// checked against the backup's own index first, and the backup verified
// after.
func Repair(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var fromFiles, fromFlags []string
	var asJSON *bool
	var from splitstorage.Config
	s, code := openSession(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			fs.StringSliceVar(&fromFiles, "from-flags-file", nil, "the storage holding the copy: a flag file whose --split-storage-* lines are read (other "+
				"lines skipped); repeatable")
			fs.StringArrayVar(&fromFlags, "from", nil, "a flag of the storage holding the copy, after those of --from-flags-file, e.g. "+
				"--from=--split-storage-s3-bucket=backups-dr; repeatable")
			asJSON = fs.Bool("json", false, "print one JSON object (backup, from, damaged, repaired, verified) instead of lines")
			required := o.requireBackup(fs, "repair works on the backup it names, never one it picks")
			return func() error {
				if err := required(); err != nil {
					return err
				}
				if len(fromFiles) == 0 && len(fromFlags) == 0 {
					return errors.New("--from-flags-file or --from is required: the storage holding the copy")
				}
				var err error
				if from, err = storageConfig("from", fromFiles, fromFlags); err != nil {
					return fmt.Errorf("the copy's storage (--from-flags-file, --from): %w", err)
				}
				return nil
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	src, err := can[backupRepairer](s.bs, "repair a backup")
	if err != nil {
		return s.o.failf(exitUsage, "%v", err)
	}
	copyStore, err := openPeer(from)
	if err != nil {
		return s.o.failf(exitUnreachable, "the copy's storage %s: %v", from.Location(), err)
	}
	defer copyStore.Close()
	dir, name := s.o.dir(), s.o.backup
	rep, err := src.RepairBackup(s.ctx, copyStore, dir, name)
	res := RepairResult{Backup: dir + "/" + name, From: from.Location(), Verified: err == nil}
	for _, p := range rep.Damaged {
		res.Damaged = append(res.Damaged, p.Error())
	}
	for _, p := range rep.Repaired {
		res.Repaired = append(res.Repaired, p.Key)
	}
	if *asJSON {
		writeJSON(stdout, res)
	} else {
		res.print(stdout)
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, splitstorage.ErrNotExist) || s.ctx.Err() != nil:
		return s.o.failf(exitUnreachable, "%v", err)
	case s.status(err) == exitFailed:
		return s.o.failf(exitFailed, "%v; the backup is still damaged: repair it from another copy, or restore another backup", err)
	case len(rep.Damaged) == 0:
		return s.fail(err) // nothing was found damaged: what could not be read, or a usage error
	}
	// Damage found, and what its repair needed could not be read.
	return s.o.failf(exitFailed, "%v; the backup has %d damaged parts (vtfifo verify names them), and the repair could not read what it needed: run "+
		"repair again once the storage answers", err, len(rep.Damaged))
}

// RepairResult is what repair found and did (--json prints it).
type RepairResult struct {
	Backup string `json:"backup"`
	From   string `json:"from"`
	// Damaged is what the verification found before the repair.
	Damaged []string `json:"damaged,omitempty"`
	// Repaired are the part objects replaced by the copy's.
	Repaired []string `json:"repaired,omitempty"`
	// Verified: the backup verifies whole after the repair.
	Verified bool `json:"verified"`
}

func (r RepairResult) print(w io.Writer) {
	for _, k := range r.Repaired {
		fmt.Fprintf(w, "repaired %s from %s\n", k, r.From)
	}
	switch {
	case !r.Verified:
	case len(r.Damaged) == 0:
		fmt.Fprintf(w, "OK: backup %s verifies: nothing to repair\n", r.Backup)
	default:
		fmt.Fprintf(w, "OK: backup %s verifies after the repair: %d parts replaced from %s\n", r.Backup, len(r.Repaired), r.From)
	}
}
