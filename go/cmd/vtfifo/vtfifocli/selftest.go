package vtfifocli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/selftest"
)

// selftestDoc is `vtfifo selftest`'s help.
var selftestDoc = commandDoc{"selftest", "Prove the engine and storage on this host: a scratch server backed up, restored and compared",
	"Needs no Vitess and no network: a scratch server laid out as a tablet's, a shaped data set written to\n" +
		"while it is backed up (full, then two incremental) through the real engine into a split storage on local\n" +
		"disk, every backup verified, the chain restored, prepared, started and compared table by table, one table\n" +
		"restored into the scratch server, the stream extracted with the tool's own extractor. Prints a report\n" +
		"to attach to a bug; steps the host cannot run are skipped with the reason. See docs/compatibility.md.",
	"  vtfifo selftest --work-dir=/var/tmp [--tool=/usr/bin/xtrabackup] [--mysqld=/usr/sbin/mysqld] [--json]"}

// SelfTest is vtfifo selftest: the whole product proven on this host (no
// Vitess cluster, no network): see the selftest package.
func SelfTest(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts selftest.Options
	fs.StringVar(&opts.ToolPath, "tool", "", "the backup tool (default: xtrabackup, then mariabackup, in PATH)")
	fs.StringVar(&opts.MysqldPath, "mysqld", "", "the server binary (default: mysqld or mariadbd under $VT_MYSQL_ROOT, in PATH or /usr/sbin)")
	fs.StringVar(&opts.WorkDir, "work-dir", "", "where the scratch directory is made (default: the system's temp dir); it needs room for the data set twice")
	fs.IntVar(&opts.Scale, "scale", 200, "number of small tables in the data set, 1..100000")
	fs.IntVar(&opts.Lanes, "lanes", 4, "the engine's lanes, 1..64")
	fs.StringVar(&opts.HostCnf, "host-cnf", defaultHostCnf(), "the host's server option file: the scratch server takes its settings that shape a "+
		"backup's files (page size, undo tablespaces, redo size, ...); empty takes none")
	fs.BoolVar(&opts.Keep, "keep", false, "keep the scratch directory (server stopped) and the backups for a bug report")
	storageFiles := fs.StringSlice("storage-flags-file", nil, "back up into this storage instead of the scratch directory: a flag file whose "+
		"--split-storage-* lines are read (other lines skipped), e.g. a tablet's; repeatable. The run's backups get a shard of their own and are "+
		"removed at the end")
	storageFlags := fs.StringArray("storage", nil, "a storage flag, after those of --storage-flags-file, e.g. "+
		"--storage=--split-storage-s3-bucket=scratch; repeatable")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	var logs logFlags
	logs.register(fs)
	fs.Usage = func() {
		fs.SetOutput(stdout) // help is the command's output
		fmt.Fprintf(stdout, "Usage: %s [flags]\n\n%s\n\nFlags:\n", prog, commandHelp(prog))
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %s\n", prog, errtext.Line(err))
		return 2
	}
	if err := logs.validate(); err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", prog, err)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", prog, fs.Args())
		return 2
	case opts.Scale < 1 || opts.Scale > 100000:
		fmt.Fprintf(stderr, "%s: invalid value %d for --scale: allowed values are 1..100000\n", prog, opts.Scale)
		return 2
	case opts.Lanes < 1 || opts.Lanes > 64:
		fmt.Fprintf(stderr, "%s: invalid value %d for --lanes: allowed values are 1..64\n", prog, opts.Lanes)
		return 2
	}
	if len(*storageFiles) > 0 || len(*storageFlags) > 0 {
		cfg, err := storageConfig("storage", *storageFiles, *storageFlags)
		if err != nil {
			fmt.Fprintf(stderr, "%s: the storage (--storage-flags-file, --storage): %s\n", prog, errtext.Line(err))
			return 2
		}
		opts.Storage = &cfg
	}
	opts.Logger = logs.logger(stderr)
	defer logs.vitessLogs(stderr)()
	rep := selftest.Run(ctx, opts)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.WriteText(stdout)
	}
	switch {
	case !rep.Passed && rep.HostFault != "":
		return exitUnreachable // this host could not run it: nothing says the product fails
	case !rep.Passed:
		return exitFailed
	}
	return exitOK
}

// defaultHostCnf is the host's server option file where the packages put it.
func defaultHostCnf() string {
	for _, p := range []string{"/etc/mysql/my.cnf", "/etc/my.cnf"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
