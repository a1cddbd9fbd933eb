// Package vtfifocli is the operator's command line, vtfifo (and fifoverify,
// its verify subcommand under the old name): commands that read fifo backups
// where they are stored, through the same storage flags as vttablet, without
// a Vitess cluster. Exit status: 0 done, 1 a failed check or an unreadable
// backup, 2 a usage error.
package vtfifocli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/crypt"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
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
		return &cobra.Command{
			Use: c.use, Short: c.short, Long: c.long, Example: c.example,
			// Each subcommand parses its own flags (one code path with fifoverify).
			DisableFlagParsing: true,
			Run: func(_ *cobra.Command, args []string) {
				code = c.run(ctx, "vtfifo "+c.use, args, stdout, stderr)
			},
		}
	}
	root := &cobra.Command{
		Use:   "vtfifo",
		Short: "Read, check and export fifo backups where they are stored, without Vitess",
		Long: "vtfifo reads fifo backups through the same storage flags as vttablet (--backup-storage-implementation,\n" +
			"--split-storage-*, the compression flags) and needs no Vitess cluster.\n" +
			"Exit status: 0 done, 1 a failed check or an unreadable backup, 2 a usage error.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stderr)
	root.SetErr(stderr)
	for _, c := range subcommands {
		root.AddCommand(sub(c))
	}
	root.AddCommand(keygen(stdout))
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "vtfifo: %v\n", err)
		return 2
	}
	return code
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
func parse(fs *pflag.FlagSet, prog, usage string, args []string, stderr io.Writer) int {
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(stderr, "Usage: %s [flags]\n\n%s\n\nFlags:\n%s", prog, usage, fs.FlagUsages()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v (see %s --help)\n", prog, err, prog)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", prog, fs.Args())
		return 2
	}
	return -1
}

// Verify is `vtfifo verify` and fifoverify: it checks a backup where it is
// stored (see docs/reliability.md) and returns the exit status.
func Verify(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	s, code := openSession(ctx, prog, "Checks a fifo backup in its storage without restoring it (see docs/reliability.md).\nExit status: 0 OK, 1 damaged or unreadable, 2 usage error.", args, stderr,
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
}

// openSession parses args (the backup flags, plus the subcommand's own that
// extra declares, returning their check or nil), validates them and opens
// the storage. A nil session comes with the exit status; otherwise the
// caller calls close.
func openSession(ctx context.Context, prog, usage string, args []string, stderr io.Writer, extra func(*pflag.FlagSet, *options) func() error) (*session, int) {
	fs := pflag.NewFlagSet(prog, pflag.ContinueOnError)
	o := registerBackupFlags(fs, prog)
	o.notes = stderr
	check := extra(fs, o)
	if code := parse(fs, prog, usage, args, stderr); code >= 0 {
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
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return nil, 2
	}
	ctx, cancel := o.withTimeout(ctx)
	bs, logger, err := o.openStorage(stderr)
	if err != nil {
		cancel()
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return nil, 1
	}
	return &session{o: o, ctx: ctx, bs: bs, logger: logger, close: func() { bs.Close(); cancel() }}, -1
}

// openBackup is openSession for the subcommands that read one backup: it
// also picks the backup the flags name (pickBackup). A nil session comes
// with the exit status; otherwise the caller calls close.
func openBackup(ctx context.Context, prog, usage string, args []string, stdout, stderr io.Writer, extra func(*pflag.FlagSet, *options) func() error) (*session, backupstorage.BackupHandle, int) {
	s, code := openSession(ctx, prog, usage, args, stderr, extra)
	if s == nil {
		return nil, nil, code
	}
	bh, ok := s.o.pickBackup(s.ctx, s.bs, stdout)
	if !ok {
		s.close()
		return nil, nil, 1
	}
	return s, bh, -1
}

// Export is `vtfifo export`: the backup as one stock xbstream on stdout or
// in a new file (never over an existing one; removed if the export fails).
func Export(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var output *string
	s, bh, code := openBackup(ctx, prog, "Writes a fifo backup as one stock xbstream that `xbstream -x` / `mbstream -x` extract.\nExit status: 0 done, 1 damaged or unreadable, 2 usage error.", args, stdout, stderr,
		func(fs *pflag.FlagSet, _ *options) func() error {
			output = fs.StringP("output", "o", "-", "where the stream goes: - (stdout) or a file that does not exist yet")
			return nil
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
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return 2
		}
		w = file
	}
	n, err := fifobackupengine.Export(s.ctx, bh, w, fifobackupengine.ExportOptions{Compression: fifobackupengine.CompressionFromFlags(s.o.flags), Logger: s.logger})
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(*output)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: FAIL: %v\n", prog, err)
		return 1
	}
	fmt.Fprintf(stderr, "%s: wrote %d bytes of backup %s/%s to %s\n", prog, n, s.o.dir(), bh.Name(), *output)
	return 0
}

// BackupInfo is one backup as `vtfifo ls` shows it.
type BackupInfo struct {
	Name        string
	Engine      string
	Time        string `json:",omitempty"`
	Position    string `json:",omitempty"`
	Lanes       int    `json:",omitempty"`
	RawBytes    int64  `json:",omitempty"`
	StoredBytes int64  `json:",omitempty"`
	Compression string `json:",omitempty"`
	Tool        string `json:",omitempty"`
	// Base is the backup an incremental one holds the changes since, and
	// ChainLength its place after the chain's full (0 for a full).
	Base        string `json:",omitempty"`
	ChainLength int    `json:",omitempty"`
	// Verification is the backup's latest test restore (split storage).
	Verification *testrestore.Record `json:",omitempty"`
	// Problem says why the MANIFEST could not be read, if it could not.
	Problem string `json:",omitempty"`
}

// List is `vtfifo ls`.
func List(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var asJSON *bool
	s, code := openSession(ctx, prog, "Lists the complete backups of a shard with what their MANIFEST says.\nExit status: 0 done, 1 the storage cannot be listed, 2 usage error.", args, stderr,
		func(fs *pflag.FlagSet, _ *options) func() error {
			asJSON = fs.Bool("json", false, "print one JSON array instead of a table")
			return nil
		})
	if s == nil {
		return code
	}
	defer s.close()
	bhs, err := s.bs.ListBackups(s.ctx, s.o.dir())
	if err != nil {
		fmt.Fprintf(stderr, "%s: cannot list backups in %s: %v\n", prog, s.o.dir(), err)
		return 1
	}
	infos := make([]BackupInfo, 0, len(bhs))
	for _, bh := range bhs {
		infos = append(infos, describe(s.ctx, bh))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(infos); err != nil {
			return 1
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tENGINE\tTYPE\tTIME\tLANES\tRAW\tSTORED\tCOMPRESSION\tPOSITION\tTEST-RESTORE")
	for _, b := range infos {
		if b.Problem != "" {
			fmt.Fprintf(tw, "%s\t?\t\t\t\t\t\t\t\t%s\n", b.Name, b.Problem)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", b.Name, b.Engine, kind, b.Time, b.Lanes,
			humanize.IBytes(uint64(b.RawBytes)), humanize.IBytes(uint64(b.StoredBytes)), b.Compression, b.Position, verified)
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	return 0
}

// describe reads a backup's MANIFEST: a fifo one in full, another engine's
// (builtin, xtrabackup) for its engine, time and position.
func describe(ctx context.Context, bh backupstorage.BackupHandle) BackupInfo {
	info := BackupInfo{Name: bh.Name()}
	r, err := bh.ReadFile(ctx, fifobackupengine.ManifestFileName)
	if err != nil {
		info.Problem = "cannot read MANIFEST: " + err.Error()
		return info
	}
	defer r.Close()
	doc, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		info.Problem = "cannot read MANIFEST: " + err.Error()
		return info
	}
	var base mysqlctl.BackupManifest
	if err := json.Unmarshal(doc, &base); err != nil {
		info.Problem = "MANIFEST is not JSON: " + err.Error()
		return info
	}
	info.Engine, info.Time, info.Position = base.BackupMethod, base.BackupTime, base.Position.String()
	if base.BackupMethod != "fifo" {
		return info
	}
	m, err := fifobackupengine.ParseManifest(doc)
	if err != nil {
		info.Problem = "MANIFEST: " + err.Error()
		return info
	}
	info.Lanes, info.RawBytes, info.StoredBytes = len(m.Lanes), m.RawBytes, m.StoredBytes
	info.Compression = "none"
	if m.Compressed {
		info.Compression = m.CompressionEngine
	}
	info.Tool = m.ToolFlavor + " " + m.ToolVersion
	info.Base, info.ChainLength = m.BaseBackup, m.ChainLength
	rec, err := testrestore.Load(ctx, bh)
	if err != nil {
		info.Problem = "cannot read its verification record: " + err.Error()
	}
	info.Verification = rec
	return info
}
