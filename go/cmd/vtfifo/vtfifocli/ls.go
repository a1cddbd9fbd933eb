package vtfifocli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// lsDoc is `vtfifo ls`'s help.
var lsDoc = commandDoc{"ls", "List the complete backups of a shard with their engine, time, size, lanes and position",
	"Lists the complete backups in --keyspace/--shard (or --backup-dir), oldest first, as GetBackups does,\n" +
		"with what each MANIFEST says and their test restore, then the quarantined and incomplete ones with why.\n" +
		"Without --keyspace and --shard: the fleet view, every shard of the storage (and of the topology, with its\n" +
		"flags) with its newest backup and newest one that passed a test restore; --max-age and --max-unproven-age\n" +
		"make it a check (exit 1), --prometheus prints it for node_exporter. --json prints JSON.",
	"  vtfifo ls --backup-storage-implementation=split --split-storage-root=/backups --keyspace=commerce --shard=0"}

// List is `vtfifo ls`: one shard's backups, or with no --keyspace/--shard
// every shard of the storage (fleet.go).
func List(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var asJSON *bool
	var check fleetCheck
	var asOf asOfTime
	s, code := openSession(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			o.fleet = true
			asJSON = fs.Bool("json", false, "print JSON instead of a table")
			fs.Var(&asOf, "as-of", "say which backup a restore to this time (as --restore-from-backup-ts takes it, or RFC 3339) restores, "+
				"and why each newer one is passed over")
			check.register(fs)
			check.registerPrometheus(fs)
			refuseBackup := o.refuseBackup(fs, "ls", "it lists every backup (vtfifo show describes one)")
			return func() error {
				if err := refuseBackup(); err != nil {
					return err
				}
				if !asOf.t.IsZero() && o.wholeStorage() {
					return errors.New("--as-of is about one shard: give --keyspace and --shard (or --backup-dir)")
				}
				return check.validate(*asJSON)
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	if s.o.wholeStorage() {
		return s.fleet(check, *asJSON, stdout)
	}
	if check.set() {
		return s.o.failf(exitUsage, "--max-age, --max-unproven-age and --prometheus apply to the whole storage: leave out --keyspace and --shard")
	}
	if !asOf.t.IsZero() {
		return s.asOf(asOf.t, *asJSON, stdout)
	}
	if code := s.o.rootMissing(); code != exitOK {
		return code
	}
	bhs, quarantined, err := s.shardListing()
	if err != nil {
		return s.o.failf(exitUnreachable, "cannot list the backups of %s: %v", s.o.where(), err)
	}
	infos, rates, predictable := s.describeBackups(bhs)
	markBrokenChains(infos)
	infos = append(infos, quarantined...)
	if len(infos) == 0 {
		return s.o.failf(exitUnreachable, "no backup in %s: check --keyspace and --shard (or --backup-dir) and the storage flags", s.o.where())
	}
	if *asJSON {
		if code := writeJSON(stdout, infos); code != exitOK {
			return code
		}
		return s.listedCode(infos)
	}
	if code := writeBackupTable(stdout, infos); code != exitOK {
		return code
	}
	fmt.Fprintln(stdout, "\nRestore times: "+ratesLine(rates, predictable))
	return s.listedCode(infos)
}

// listedCode is the exit status of a listing, as its rows have it: 1
// where a MANIFEST is damaged (proof about that backup: restores pass over
// it), else 3 where one could not be read (no verdict: an access error or
// a timeout), else 0. A script that checks ls's status learns what an
// operator reading the table would; stderr names the rows. A directory
// with no MANIFEST (a Vitess storage's incomplete backup, another's
// directory), or another backup's copied or renamed there, is neither: its
// row says what it is.
func (s *session) listedCode(infos []BackupInfo) int {
	var damaged, unread []string
	for _, b := range infos {
		switch {
		case b.damaged:
			damaged = append(damaged, b.Name)
		case b.Problem != "" && !b.noManifest && !b.elsewhere:
			unread = append(unread, b.Name)
		}
	}
	if len(damaged) > 0 {
		return s.o.failf(exitFailed, "%s: a damaged MANIFEST (restores pass over the backup; its row says why, vtfifo verify --backup=NAME "+
			"checks it whole): %s", s.o.where(), strings.Join(damaged, ", "))
	}
	if len(unread) > 0 {
		return s.o.failf(exitUnreachable, "%s: a MANIFEST or verification record could not be read, which is no verdict on the backup "+
			"(its row says why): %s", s.o.where(), strings.Join(unread, ", "))
	}
	return exitOK
}

// shardListing is the shard's complete backups, and its quarantined ones
// (split storage) with the reason: restores never pick them, and an
// operator must see why. The incomplete ones (failed, killed or running)
// are verify --list-incomplete's. The split storage lists both at once
// (ListShard: one listing, one completion check per backup).
func (s *session) shardListing() ([]backupstorage.BackupHandle, []BackupInfo, error) {
	var (
		bhs []backupstorage.BackupHandle
		inc []splitstorage.IncompleteBackup
		err error
	)
	if st, ok := has[fleetLister](s.bs); ok {
		bhs, inc, err = st.ListShard(s.ctx, s.o.dir())
	} else {
		bhs, err = s.bs.ListBackups(s.ctx, s.o.dir())
	}
	var out []BackupInfo
	for _, b := range inc {
		if b.Quarantined != "" && len(b.RetiredFor) == 0 {
			out = append(out, BackupInfo{Name: b.Name, State: quarantinedText(b.Quarantined)})
		}
	}
	return bhs, out, err
}

// quarantinedText says a backup is quarantined, and why: its reason, and
// where a test restore failed with words that name this host failing (a
// full disk, no memory or open files: unreadable.InOutput), that those are
// no proof about the backup. Today's test restores record nothing for such
// a failure; one of an earlier version quarantined good backups for it.
// Only a hint: the quarantine stays until the operator releases the backup.
func quarantinedText(reason string) string {
	why := unreadable.InOutput(reason)
	if why == "" || !strings.Contains(reason, "test restore failed") {
		return "quarantined: " + reason
	}
	return "quarantined: " + reason + " (its words name this host failing, " + why + ", which is no proof about the backup: an earlier " +
		"vtfifo quarantined for it; vtfifo release, then test-restore again)"
}

// writeBackupTable prints one line per backup; those restores never pick
// say why instead of their MANIFEST.
func writeBackupTable(w io.Writer, infos []BackupInfo) int {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tENGINE\tSTORAGE\tTYPE\tTIME\tLANES\tRAW\tSTORED\tCOMPRESSION\tPOSITION\tRESTORE-TIME\tTEST-RESTORE\tLOCK")
	for _, b := range infos {
		switch {
		case b.State != "":
			fmt.Fprintf(tw, "%s\t-\t\t\t\t\t\t\t\t\t\t%s\n", b.Name, oneLine(b.State, b.Name))
			continue
		case b.Problem != "":
			fmt.Fprintf(tw, "%s\t?\t%s\t\t\t\t\t\t\t\t\t%s\n", b.Name, b.Storage, oneLine(b.Problem, b.Name))
			continue
		}
		verified := "-"
		if b.Verification != nil {
			verified = b.Verification.Summary()
		}
		kind := "full"
		if b.Base != "" {
			kind = fmt.Sprintf("delta %d on %s", b.ChainLength, b.Base)
		}
		switch b.DamagedBase {
		case "":
		case b.Base:
			kind += " (damaged: restores pass over this one)"
		default:
			kind += fmt.Sprintf(" (its chain's %s is damaged: restores pass over this one)", b.DamagedBase)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Name, b.Engine, b.Storage, kind, b.Time, b.Lanes,
			humanize.IBytes(uint64(b.RawBytes)), humanize.IBytes(uint64(b.StoredBytes)), b.Compression, b.Position, predicted(b.PredictedRestore), verified,
			cmp.Or(b.Lock, "-"))
	}
	if err := tw.Flush(); err != nil {
		return exitUnreachable
	}
	return exitOK
}
