// Package vtfifocli is the operator's command line, vtfifo (and fifoverify,
// its verify subcommand under the old name): commands that read fifo backups
// where they are stored, through the same storage flags as vttablet, without
// a Vitess cluster. Exit status (exit.go): 0 done, 1 a backup is damaged or
// failed a check, 2 a usage error, 3 the storage, a location or a backup
// could not be read, accessed or found.
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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
	"github.com/vtfifo/vtfifo/go/vt/vtversion"
)

// Run runs cmd with a context cancelled on SIGINT or SIGTERM, and exits the
// process with the status cmd returns (the mains of vtfifo and fifoverify).
func Run(cmd func(ctx context.Context) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd(ctx)
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
		fmt.Fprintf(stderr, "vtfifo: %s\n", errText(err))
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

// keygen is `vtfifo keygen`: a new master key, as a key file line.
func keygen(stdout io.Writer) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "keygen --id ID",
		Short: "Print a new key file line for --split-storage-encryption-key-file",
		Long: "Prints \"<id> <base64 of 32 random bytes>\": a new master key for --split-storage-encryption-key-file.\n" +
			"Put it first in the key file to encrypt new backups with it, and keep the older lines: every key listed\n" +
			"decrypts. The key goes to stdout only. See docs/encryption.md.",
		Example: "  (umask 077; vtfifo keygen --id 2026-11 > keys.new && cat /etc/vitess/backup-keys >> keys.new)",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			line, err := crypt.NewKeyLine(id)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, line)
			return err
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "the key's ID, stored with every backup it encrypts (A-Z a-z 0-9 . _ : -, up to 64)")
	return cmd
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
		fmt.Fprintf(stderr, "%s: %v (see %s --help)\n", prog, err, prog)
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

// Verify is `vtfifo verify` and fifoverify: it checks a backup where it is
// stored (see docs/reliability.md) and returns the exit status.
func Verify(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	s, code := openSession(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error { o.registerVerifyFlags(fs); return o.validateVerify })
	if s == nil {
		return code
	}
	defer s.close()
	return s.verify(stdout, stderr)
}

// session is a subcommand's parsed flags and open storage.
type session struct {
	o      *options
	ctx    context.Context
	bs     backupstorage.BackupStorage
	logger logutil.Logger
	close  func()
	// lease keeps rm and prune elsewhere off the backup being read.
	lease *splitstorage.Lease
}

// openSession parses args (the backup flags, plus the subcommand's own that
// extra declares, returning their check or nil), validates them and opens
// the storage. A nil session comes with the exit status; otherwise the
// caller calls close.
func openSession(ctx context.Context, prog string, args []string, stdout, stderr io.Writer,
	extra func(*pflag.FlagSet, *options) func() error) (*session, int) {
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	o := registerBackupFlags(fs, prog)
	o.console = &console{w: stderr}
	o.notes = o.console
	check := extra(fs, o)
	if code := parse(fs, prog, args, stdout, stderr); code >= 0 {
		return nil, code
	}
	err := o.files.apply(fs, prog, stderr)
	if err == nil {
		err = o.validateBackup()
	}
	if err == nil && check != nil {
		err = check()
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", prog, errText(err))
		return nil, 2
	}
	ctx, cancel := o.withTimeout(ctx)
	bs, logger, err := o.openStorage(o.console)
	if err != nil {
		cancel()
		return nil, o.failf(exitUnreachable, "cannot open %s: %v", storageLocation(o), err)
	}
	s := &session{o: o, ctx: ctx, bs: bs, logger: logger, close: func() { bs.Close(); cancel() }}
	if code := s.checkRoot(bs); code >= 0 {
		s.close()
		return nil, code
	}
	return s, -1
}

// checkRoot refuses a storage whose root is provably not one of its own
// (exit 3, naming it): one level off, or another storage's. Nothing in it
// is listed, judged or removed. A root that could not be read is left to
// the command, which says what it could not read in its own words.
func (s *session) checkRoot(bs backupstorage.BackupStorage) int {
	rc, ok := bs.(rootChecker)
	if !ok {
		return -1
	}
	if err := rc.CheckRoot(s.ctx); errors.Is(err, splitstorage.ErrNotSplitRoot) {
		return s.o.failf(exitUnreachable, "refused: %v", err)
	}
	return -1
}

// openBackup is openSession for the subcommands that read one fifo backup:
// it also picks the backup the flags name (pickBackup) and refuses another
// engine's (readsOnly). A nil session comes with the exit status; otherwise
// the caller calls close.
func openBackup(ctx context.Context, prog string, args []string, stdout, stderr io.Writer,
	extra func(*pflag.FlagSet, *options) func() error) (*session, backupstorage.BackupHandle, int) {
	return openBackupOf(ctx, fifoEngine, prog, args, stdout, stderr, extra)
}

// openBackupOf is openBackup for a command that reads the backups of
// engines (fifoEngine, or streamEngines).
func openBackupOf(ctx context.Context, engines []string, prog string, args []string, stdout, stderr io.Writer,
	extra func(*pflag.FlagSet, *options) func() error) (*session, backupstorage.BackupHandle, int) {
	s, bh, code := openAnyBackup(ctx, prog, args, stdout, stderr, extra)
	if s == nil {
		return nil, nil, code
	}
	if code := s.readsOnly(bh, engines); code >= 0 {
		s.close()
		return nil, nil, code
	}
	return s, bh, -1
}

// openAnyBackup is openBackup for a command that handles any engine's
// backup (copy of a legacy storage's).
func openAnyBackup(ctx context.Context, prog string, args []string, stdout, stderr io.Writer,
	extra func(*pflag.FlagSet, *options) func() error) (*session, backupstorage.BackupHandle, int) {
	s, code := openSession(ctx, prog, args, stdout, stderr, extra)
	if s == nil {
		return nil, nil, code
	}
	bh, code := s.o.pickBackup(s.ctx, s.bs)
	if bh == nil {
		s.close()
		return nil, nil, code
	}
	s.holdForReading(bh)
	return s, bh, -1
}

// The engines whose backups a command reads: fifo's alone, or also the
// stream of Vitess's xtrabackup engine (verify, test-restore, restore: an
// adopted fleet's older backups; fifobackupengine.ReadRestorable).
var (
	fifoEngine    = []string{"fifo"}
	streamEngines = []string{"fifo", "xtrabackup"}
)

// readsOnly refuses, with exitUsage and a line saying why, a backup
// another engine took (Vitess's builtin, say, listed through the split
// storage's legacy storage or in Vitess's own storage): the command reads
// the backups of engines only, and must never call such a backup damaged.
// -1: go on (a MANIFEST that cannot be read is the command's to report).
func (s *session) readsOnly(bh backupstorage.BackupHandle, engines []string) int {
	m, doc, err := fifobackupengine.ReadAnyManifest(s.ctx, bh)
	if err != nil || m.BackupMethod == "" || m.BackupMethod == "fifo" {
		return -1 // a MANIFEST naming no engine is the command's to judge
	}
	if slices.Contains(engines, m.BackupMethod) {
		var why fifobackupengine.NotRead
		if _, err := fifobackupengine.ParseRestorable(bh.Name(), doc); errors.As(err, &why) {
			return s.o.failf(exitUsage, "backup %s/%s was taken by Vitess's %s engine (in the %s storage): %s cannot read it: %s; Vitess restores it "+
				"with its own engine (--restore-from-backup)", bh.Directory(), bh.Name(), m.BackupMethod, s.origin(bh), s.o.prog, why)
		}
		return -1
	}
	return s.o.failf(exitUsage, "backup %s/%s was taken by Vitess's %s engine (in the %s storage): %s reads %s backups only; Vitess restores it "+
		"with its own engine (--restore-from-backup), and vtfifo rm, prune and ls handle it", bh.Directory(), bh.Name(), m.BackupMethod, s.origin(bh), s.o.prog,
		strings.Join(engines, " and "))
}

// readLeaseTTL bounds a read lease whose holder died without releasing it.
const readLeaseTTL = 24 * time.Hour

// holdForReading puts a read lease on bh (split storage) until the session
// closes, so that rm and prune elsewhere keep off it. A storage that takes
// no lease (read-only credentials) is said on stderr, not fatal.
func (s *session) holdForReading(bh backupstorage.BackupHandle) {
	st, ok := s.bs.(leaseHolder)
	if !ok {
		return
	}
	lease, err := st.Hold(s.ctx, bh.Directory(), bh.Name(), s.o.prog, readLeaseTTL)
	if err != nil {
		s.o.notef("cannot hold backup %s/%s for reading (%s): rm and prune elsewhere are not kept off it", bh.Directory(), bh.Name(), errText(err))
		return
	}
	s.lease = lease
	closeSession := s.close
	s.close = func() {
		s.releaseLease()
		closeSession()
	}
}

// releaseLease ends the session's read lease, if it holds one (before it
// removes the backup itself: copy --remove-source).
func (s *session) releaseLease() {
	_ = s.lease.Release(s.ctx)
	s.lease = nil
}

// Export is `vtfifo export`: the backup as one stock xbstream on stdout or
// in a new file (never over an existing one; removed if the export fails).
func Export(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var output *string
	s, bh, code := openBackup(ctx, prog, args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			output = fs.StringP("output", "o", "-", "where the stream goes: - (stdout, not a terminal) or a file that does not exist yet")
			o.registerProgressFlags(fs)
			return func() error {
				if *output == "-" && isTerminal(stdout) {
					return errors.New("refusing to write a binary stream to a terminal: give -o FILE, or redirect or pipe stdout")
				}
				return o.validateProgress()
			}
		})
	if s == nil {
		return code
	}
	defer s.close()
	var w io.Writer = stdout
	var file *os.File
	var err error
	if *output != "-" {
		if file, err = os.OpenFile(*output, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640); err != nil {
			fmt.Fprintf(stderr, "%s: %s\n", prog, errText(err))
			return 2
		}
		w = file
	}
	p := newProgress(s.o, stderr, prog+" "+s.o.dir()+"/"+bh.Name())
	n, err := fifobackupengine.Export(s.ctx, bh, w, fifobackupengine.ExportOptions{Compression: fifobackupengine.CompressionFromFlags(s.o.flags),
		OnManifest: p.setLanes, OnRead: p.addLane, Logger: s.logger})
	p.stop()
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(*output)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", prog, failLine(err))
		return failureStatus(err)
	}
	fmt.Fprintf(stderr, "%s: wrote %d bytes of backup %s/%s to %s\n", prog, n, s.o.dir(), bh.Name(), *output)
	return 0
}
