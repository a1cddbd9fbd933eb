// Package vtfifocli is the operator's command line, vtfifo (and fifoverify,
// its verify subcommand under the old name): commands that read fifo backups
// where they are stored, through the same storage flags as vttablet, without
// a Vitess cluster. Exit status (output.go): 0 done, 1 a backup is damaged or
// failed a check, 2 a usage error, 3 the storage, a location or a backup
// could not be read, accessed, found or finished with.
package vtfifocli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/vt/vtversion"
)

// Run runs cmd with a context cancelled on SIGINT or SIGTERM, or once the
// reader of its output is gone (cancelOnClosedOutput), and exits the
// process with the status cmd returns (the mains of vtfifo and fifoverify).
func Run(cmd func(ctx context.Context) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, stopWatching := cancelOnClosedOutput(ctx)
	code := cmd(ctx)
	stopWatching()
	stop()
	os.Exit(code)
}

// Main runs vtfifo with args (without the program name) and returns its exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	code := 0
	sub := func(c subcommand) *cobra.Command {
		prog := "vtfifo " + c.use
		cmd := &cobra.Command{
			Use: c.use, Short: c.short,
			// Each subcommand parses its own flags (one code path with fifoverify).
			DisableFlagParsing: true,
			Run: func(_ *cobra.Command, args []string) {
				code = c.run(ctx, prog, args, stdout, stderr)
				if code == exitFailed {
					checkOutput(ctx)
				}
				if code == exitFailed && ctx.Err() != nil {
					// Whatever failed, it failed because it was stopped.
					fmt.Fprintf(stderr, "%s: interrupted (%v): nothing says the backup is damaged\n", prog, context.Cause(ctx))
					code = exitUnreachable
				}
			},
		}
		// `vtfifo help ls` is `vtfifo ls --help`: one text (commandHelp).
		cmd.SetHelpFunc(func(*cobra.Command, []string) { code = c.run(ctx, prog, []string{"--help"}, stdout, stderr) })
		return cmd
	}
	root := &cobra.Command{
		Use:   "vtfifo",
		Short: "Read, check and export fifo backups where they are stored, without Vitess",
		Long: "vtfifo reads fifo backups through the same storage flags as vttablet (--backup-storage-implementation,\n" +
			"--split-storage-*, the compression flags) and needs no Vitess cluster.\n" +
			exitStatusHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "version") {
		fmt.Fprintf(stdout, "vtfifo %s\n", version())
		return exitOK
	}
	root.SetOut(stdout) // help is the command's output; errors go to stderr
	root.SetErr(stderr)
	for _, c := range commands() {
		root.AddCommand(sub(c))
	}
	root.AddCommand(keygen(stdout))
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "vtfifo: %s\n", errtext.Line(err))
		return 2
	}
	return code
}

// version is the plugin's version (vtversion.Plugin) with its commit when
// the build recorded one, the Vitess it is built against and the Go that
// built it.
func version() string {
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("%s%s, Vitess %s, %s", vtversion.Plugin(), rev, vtversion.Module(), runtime.Version())
}

// parse parses args into fs; it returns -1 to go on, or the exit status.
func parse(fs *pflag.FlagSet, prog string, args []string, stdout, stderr io.Writer) int {
	fs.SetOutput(stderr)
	all := fs.Bool("help-all", false, "list the storage and engine flags too (the same as vttablet's)")
	usage := commandHelp(prog)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: %s [flags]\n\n%s\n\nFlags:\n%s", prog, usage, commandFlags(fs, false))
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v%s (see %s --help)\n", prog, err, allowedOfType(err), prog)
		return 2
	}
	if *all {
		fmt.Fprintf(stdout, "Usage: %s [flags]\n\n%s\n\nFlags:\n%s", prog, usage, commandFlags(fs, true))
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", prog, fs.Args())
		return 2
	}
	return -1
}

// allowedOfType names the values a flag of a plain type takes, for a value
// it refused: pflag's own error names the flag and the parser's complaint
// only. The project's own flag types already say theirs.
func allowedOfType(err error) string {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) || strings.Contains(err.Error(), "allowed values") {
		return ""
	}
	switch bad.GetFlag().Value.Type() {
	case "bool":
		return ": allowed values are true or false"
	case "duration":
		return ": allowed values are a duration such as 90s, 15m or 2h"
	case "int", "int32", "int64":
		return ": allowed values are an integer"
	case "uint", "uint32", "uint64":
		return ": allowed values are an integer >= 0"
	case "float64":
		return ": allowed values are a number"
	}
	return ""
}

// sharedFlagPrefixes are the flags a command shares with vttablet: the
// storages' and the engine's, which a tablet flag file supplies.
var sharedFlagPrefixes = append([]string{"split-storage-", "fifo-backup-"}, vttabletFlagPrefixes...)

// commandFlags is the usage of fs's flags: with all every one, otherwise
// the command's own and one line for those shared with vttablet, so that
// help lists what the command uses.
func commandFlags(fs *pflag.FlagSet, all bool) string {
	if all {
		return fs.FlagUsages()
	}
	own := pflag.NewFlagSet("", pflag.ContinueOnError)
	shared := 0
	fs.VisitAll(func(f *pflag.Flag) {
		for _, p := range sharedFlagPrefixes {
			if strings.HasPrefix(f.Name, p) {
				shared++
				return
			}
		}
		own.AddFlag(f)
	})
	if shared == 0 {
		return own.FlagUsages()
	}
	return own.FlagUsages() + fmt.Sprintf("\nand %d storage and engine flags, the same as vttablet's (--backup-storage-implementation, --split-storage-*,\n"+
		"--file-backup-storage-root, --s3-backup-*, --gcs-backup-storage-*, --azblob-backup-*, --fifo-backup-*, the compression\n"+
		"flags, --topo-*): --help-all lists them, --flags-file reads them from a tablet's flag file.\n", shared)
}
