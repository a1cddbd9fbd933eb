package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/servenv"
	// The engine (its MANIFEST, decompressors and restore) and the split storage.
	// The storages vttablet links, so their flags and names are the same.
	_ "vitess.io/vitess/go/vt/mysqlctl/azblobbackupstorage"
	_ "vitess.io/vitess/go/vt/mysqlctl/cephbackupstorage"
	_ "vitess.io/vitess/go/vt/mysqlctl/filebackupstorage"
	_ "vitess.io/vitess/go/vt/mysqlctl/gcsbackupstorage"
	_ "vitess.io/vitess/go/vt/mysqlctl/s3backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/pathin"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// vttabletFlagPrefixes select, from vttablet's own flag set, the flags that
// say where backups are and how to decompress them, and where the topology
// is (ls's fleet view): the same names, the same variables, so a vttablet
// flag file's lines work here unchanged.
var vttabletFlagPrefixes = []string{
	"topo-",
	"backup-storage-", // --backup-storage-implementation, -compress, -block-size, -number-blocks
	"file-backup-storage-",
	"s3-backup-",
	"gcs-backup-storage-",
	"azblob-backup-",
	"ceph-backup-storage-",
	"compression-engine-name",
	"external-decompressor",
	"manifest-external-decompressor",
}

type options struct {
	keyspace, shard, backupDir string
	backup                     string
	progress                   string
	progressInterval           time.Duration
	timeout                    time.Duration
	log                        logFlags

	// prog names the program in messages (fifoverify, vtfifo verify).
	prog string
	// notes is where what the command decided for the operator goes
	// (stderr: stdout carries only data, an export's stream included).
	notes io.Writer
	// console is stderr as notes and log lines reach it (progress bars stay
	// below them); nil in tests that make options by hand.
	console *console
	// flags is the parsed set: Vitess's decompression flags are read from it.
	flags *pflag.FlagSet

	// fleet: the command also runs on the whole storage, without
	// --keyspace/--shard (ls).
	fleet bool

	files configFiles

	// restorable is what the choice of the latest backup asks of each
	// candidate beyond a test restore that did not fail: nothing
	// (anyBackup) for the commands that judge a backup themselves, the
	// checks before a restore's first byte for those that restore
	// (restoresLatest).
	restorable func(context.Context, backupstorage.BackupHandle) error
}

// anyBackup is options.restorable of the commands that take the latest
// backup as it is.
func anyBackup(context.Context, backupstorage.BackupHandle) error { return nil }

// restoresLatest is for the commands that restore: the choice of the
// latest backup passes over one proven broken before a byte of its lanes
// is read (fifobackupengine.CheckRestorable), and --backup's help says so.
func (o *options) restoresLatest(fs *pflag.FlagSet) {
	o.restorable = fifobackupengine.CheckRestorable
	fs.Lookup("backup").Usage = "name of the backup (as GetBackups lists it); left out, the latest complete one whose test restore did not fail " +
		"and whose MANIFEST and chain of bases read whole (one found damaged or missing is passed over, saying why); latest-verified the " +
		"latest whose test restore passed"
}

// registerBackupFlags declares what every subcommand needs: the storage (the
// same flags as vttablet's) and which backup.
func registerBackupFlags(fs *pflag.FlagSet, prog string) *options {
	o := &options{flags: fs, prog: prog, restorable: anyBackup}
	splitstorage.RegisterFlags(fs)
	// The engine's flags: the tool that prepares a restore, and so that a
	// vttablet flag file's engine lines parse here too.
	fifobackupengine.RegisterFlags(fs)
	vt := servenv.GetFlagSetFor("vttablet")
	vt.VisitAll(func(f *pflag.Flag) {
		for _, p := range vttabletFlagPrefixes {
			if strings.HasPrefix(f.Name, p) && fs.Lookup(f.Name) == nil {
				fs.AddFlag(f)
			}
		}
	})
	fs.StringVar(&o.keyspace, "keyspace", "", "keyspace of the backups (with --shard)")
	fs.StringVar(&o.shard, "shard", "", "shard of the backups (with --keyspace)")
	fs.StringVar(&o.backupDir, "backup-dir", "", "backup directory in the storage (keyspace/shard), instead of --keyspace and --shard")
	fs.StringVar(&o.backup, "backup", "", "name of the backup (as GetBackups lists it); left out, the latest complete one whose test restore did "+
		"not fail; latest-verified the latest whose test restore passed")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up after this long (0: no limit)")
	o.log.register(fs)
	o.files.register(fs)
	return o
}

// refuseBackup is for the commands that never act on one named backup:
// --backup leaves their help, and the check it returns refuses it, saying why.
func (o *options) refuseBackup(fs *pflag.FlagSet, command, why string) func() error {
	_ = fs.MarkHidden("backup")
	return func() error {
		if o.backup != "" {
			return fmt.Errorf("--backup is not for %s: %s", command, why)
		}
		return nil
	}
}

// requireBackup is for the commands that act only on the backup they are
// named: --backup's help says so, and the check it returns refuses an empty
// one, saying why.
func (o *options) requireBackup(fs *pflag.FlagSet, why string) func() error {
	fs.Lookup("backup").Usage = "name of the backup (as ls lists it); required: " + why
	return func() error {
		if o.backup == "" {
			return errors.New("--backup is required: " + why)
		}
		return nil
	}
}

// registerProgressFlags declares the progress flags of the commands that
// read whole backups.
func (o *options) registerProgressFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.progress, "progress", "auto", "progress line on stderr: auto (on a terminal), always, never")
	fs.DurationVar(&o.progressInterval, "progress-interval", 10*time.Second, "how often progress is printed when stderr is not a terminal (with "+
		"--progress=always)")
}

// validateProgress checks the flags of registerProgressFlags.
func (o *options) validateProgress() error {
	switch o.progress {
	case "auto", "always", "never":
	default:
		return invalid("progress", o.progress, "auto, always, never")
	}
	if o.progressInterval < 100*time.Millisecond {
		return invalid("progress-interval", o.progressInterval.String(), "100ms or more")
	}
	return nil
}

// wholeStorage: the command runs on every backup directory of the storage
// (ls without --keyspace/--shard).
func (o *options) wholeStorage() bool {
	return o.fleet && o.backupDir == "" && o.keyspace == "" && o.shard == ""
}

func (o *options) dir() string {
	if o.backupDir != "" {
		return o.backupDir
	}
	return mysqlctl.GetBackupDir(o.keyspace, o.shard)
}

func invalid(flag, value, allowed string) error {
	return fmt.Errorf("invalid value %q for --%s: allowed values are %s", value, flag, allowed)
}

// targetDirFlag checks --target-dir: given, and a directory that does not
// exist or is empty (a restore never writes over files), before anything
// is read. It cleans the path ("new/" is new, whose parent is ".").
func targetDirFlag(o *options, flag *string) error {
	if *flag == "" {
		return errors.New("--target-dir is required")
	}
	*flag = filepath.Clean(*flag)
	dir := *flag
	if err := outsideRoot(o, "--target-dir", dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// The restore makes dir, not its parents (as Vitess's restore does).
		if st, err := os.Stat(filepath.Dir(dir)); err != nil || !st.IsDir() {
			return fmt.Errorf("--target-dir %s: its parent %s is not a directory: create it first, or give another", dir, filepath.Dir(dir))
		}
		return nil
	case err != nil:
		return fmt.Errorf("--target-dir %s: %v", dir, err)
	case len(entries) > 0:
		if why := fifobackupengine.NotEmptyReason(dir); why != "" {
			return fmt.Errorf("--target-dir %s is not empty: a restore never writes over files%s", dir, why)
		}
		return fmt.Errorf("--target-dir %s is not empty: a restore never writes over files; give a new or empty directory", dir)
	}
	return nil
}

// validateBackup checks the flags of registerBackupFlags.
func (o *options) validateBackup() error {
	switch {
	case o.backupDir != "" && (o.keyspace != "" || o.shard != ""):
		return fmt.Errorf("--backup-dir and --keyspace/--shard are exclusive: give one")
	case o.wholeStorage():
	case o.backupDir == "" && (o.keyspace == "" || o.shard == ""):
		return fmt.Errorf("--keyspace and --shard (or --backup-dir) are required")
	}
	for _, f := range []struct{ name, value string }{{"keyspace", o.keyspace}, {"shard", o.shard}} {
		if strings.Contains(f.value, "/") {
			return invalid(f.name, f.value, "a "+f.name+" name as Vitess spells it: one name, without '/' (--backup-dir takes a path)")
		}
	}
	if !o.wholeStorage() && !splitstorage.PlainName(o.dir(), true) {
		flag := "backup-dir"
		if o.backupDir == "" {
			flag = "keyspace/--shard"
		}
		return invalid(flag, o.dir(), "a keyspace/shard path: names joined by single '/', none empty or starting with '.', without '..', "+
			"backslashes or control characters")
	}
	if o.backup == "" && o.flags.Changed("backup") {
		// Most often an unset variable in a script (--backup="$B"): taking
		// the latest backup then would act on one nobody named.
		return errors.New("--backup is empty: name a backup as ls lists it (a command that takes the latest complete backup does so with " +
			"--backup left out)")
	}
	if o.backup != "" && !splitstorage.PlainName(o.backup, false) {
		return invalid("backup", o.backup, "a backup name as GetBackups lists it (one name: no '/', not starting with '.', without '..', "+
			"backslashes or control characters)")
	}
	if o.timeout < 0 {
		return invalid("timeout", o.timeout.String(), "0 (no limit) or a positive duration")
	}
	if err := o.log.validate(); err != nil {
		return err
	}
	impl := backupstorage.BackupStorageImplementation
	if impl == "" {
		return fmt.Errorf("--backup-storage-implementation is required (the storage vttablet uses, e.g. split, file, s3, gcs)")
	}
	if _, ok := backupstorage.BackupStorageMap[impl]; !ok {
		var names []string
		for n := range backupstorage.BackupStorageMap {
			names = append(names, n)
		}
		return invalid("backup-storage-implementation", impl, strings.Join(slices.Sorted(slices.Values(names)), ", "))
	}
	if err := fifobackupengine.ValidateFlags(o.flags); err != nil {
		return err
	}
	if impl == splitstorage.Name {
		return splitstorage.FlagConfig().Validate()
	}
	return nil
}

// outsideRoot refuses a directory a command would write into that lies in
// the storage's local root: restored files there sit among the backups,
// where Vitess's file storage takes any directory of a shard for a backup
// (GetBackups lists it, RemoveBackup deletes it) and a root's disk is sized
// for backups, not data directories.
func outsideRoot(o *options, flag, dir string) error {
	roots := []string{localRoot(o)}
	if f := o.flags.Lookup("file-backup-storage-root"); f != nil {
		roots = append(roots, f.Value.String()) // also a --split-storage-legacy=file root
	}
	for _, root := range roots {
		if root == "" {
			continue
		}
		if !pathin.Dir(dir, root) {
			continue
		}
		return fmt.Errorf("%s %s is inside the storage's root %s: what is written there sits among the backups (Vitess's file storage "+
			"takes a directory there for a backup, and its RemoveBackup deletes it): give one outside %s", flag, dir, root, root)
	}
	return nil
}
