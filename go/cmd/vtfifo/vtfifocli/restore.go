package vtfifocli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/google/shlex"
	"github.com/spf13/pflag"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// Restore is `vtfifo restore`: a backup restored into a directory, with no
// Vitess process, topology or tablet; with --prepare a data directory mysqld
// starts on.
func Restore(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var targetDir, defaultsFile *string
	var prepare *bool
	s, bh, code := openBackup(ctx, prog, "Restores a fifo backup into a new or empty directory, without Vitess; --prepare makes it a data directory.\nExit status: 0 done, 1 damaged, unreadable or the tool failed, 2 usage error.", args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			targetDir = fs.String("target-dir", "", "directory to restore into: it must not exist or be empty (required)")
			prepare = fs.Bool("prepare", false, "run the tool's --prepare (xtrabackup or mariabackup, --fifo-backup-tool-path) so mysqld starts on the directory")
			defaultsFile = fs.String("defaults-file", "", "option file for the tool's --prepare (its --defaults-file); empty reads none (the tool reads the backup's backup-my.cnf)")
			o.registerProgressFlags(fs)
			return func() error {
				if *targetDir == "" {
					return errors.New("--target-dir is required")
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
	rep, err := fifobackupengine.RestoreToDir(s.ctx, bh, dir, fifobackupengine.RestoreDirOptions{
		Config: fifobackupengine.FlagConfig(), Prepare: *prepare, DefaultsFile: *defaultsFile,
		OnManifest: func(m *fifobackupengine.Manifest) { prog2.setTotal(m.StoredBytes) },
		OnRead:     func(_ int, n int) { prog2.add(int64(n), 0) },
		Logger:     s.logger,
	})
	prog2.stop()
	if err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return 1
	}
	what := "extracted (not prepared: run the tool's --prepare, or restore with --prepare)"
	if *prepare {
		what = "prepared with " + rep.Tool + "; start it with mysqld --datadir=" + dir
	}
	fmt.Fprintf(stdout, "OK: backup %s restored into %s: %d files, %s, position %s; %s\n",
		where, dir, rep.Files, humanize.IBytes(uint64(rep.Bytes)), rep.Manifest.Position, what)
	return 0
}

// sidecarStore is the split storage's handle: documents beside a backup.
type sidecarStore interface {
	PutSidecar(ctx context.Context, name string, doc []byte) error
	ReadSidecar(ctx context.Context, name string) ([]byte, error)
}

// TestRestore is `vtfifo test-restore`: the backup restored, prepared and
// started by a throwaway mysqld that checks every table; the outcome is
// stored beside the backup (split storage), where `vtfifo ls` shows it.
func TestRestore(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	var tr testRestoreFlags
	s, bh, code := openBackup(ctx, prog, "Proves a fifo backup restorable: restores and prepares it into a scratch directory, starts a throwaway mysqld\n"+
		"on it (own socket, no network, no replication), runs CHECK TABLE and counts rows on every table, then stops it\n"+
		"and removes the scratch directory. The verification record is stored beside the backup (split storage).\n"+
		"Exit status: 0 passed, 1 failed or unreadable, 2 usage error.", args, stdout, stderr,
		func(fs *pflag.FlagSet, o *options) func() error {
			tr.register(fs)
			o.registerProgressFlags(fs)
			return func() error {
				if err := tr.validate(); err != nil {
					return err
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
	opts := tr.options(s.logger)
	opts.Restore.OnManifest = func(m *fifobackupengine.Manifest) { prog2.setTotal(m.StoredBytes) }
	opts.Restore.OnRead = func(_ int, n int) { prog2.add(int64(n), 0) }
	rec, err := testrestore.Run(s.ctx, bh, opts)
	prog2.stop()
	if err != nil {
		fmt.Fprintf(stdout, "FAIL: %v\n", err)
		return 1
	}
	return reportTestRestore(s.ctx, bh, rec, tr.record, stdout)
}

// reportTestRestore prints a test restore's record, stores it beside the
// backup when asked and possible, and returns the exit status.
func reportTestRestore(ctx context.Context, bh backupstorage.BackupHandle, rec testrestore.Record, store bool, stdout io.Writer) int {
	stored := "not stored (--record=false)"
	if store {
		if sc, ok := bh.(sidecarStore); ok {
			doc, _ := json.MarshalIndent(rec, "", "  ")
			if err := sc.PutSidecar(ctx, testrestore.RecordName, doc); err != nil {
				fmt.Fprintf(stdout, "FAIL: the verification record could not be stored: %v\n", err)
				return 1
			}
			stored = "stored beside the backup"
		} else {
			stored = "not stored: only the split storage keeps verification records"
		}
	}
	if rec.Outcome != testrestore.Passed {
		fmt.Fprintf(stdout, "FAIL: test restore of %s (%s, record %s): %s\n", rec.Backup, rec.Duration, stored, rec.Error)
		return 1
	}
	unchecked := ""
	if rec.Uncheckable > 0 {
		unchecked = fmt.Sprintf(" (%d of them with an engine that has no CHECK: counted only)", rec.Uncheckable)
	}
	fmt.Fprintf(stdout, "OK: test restore of %s passed in %s: %s restored, prepared by %s, started by %s; CHECK TABLE on %d tables%s, %d rows; record %s\n",
		rec.Backup, rec.Duration, humanize.IBytes(uint64(rec.Bytes)), rec.Tool, rec.Server, rec.Tables, unchecked, rec.Rows, stored)
	return 0
}

// testRestoreFlags are test-restore's own flags (vtbackup's
// --fifo-backup-test-restore-* reuse the same meanings).
type testRestoreFlags struct {
	scratch     string
	mysqld      string
	mysqldFlags string
	bufferPool  int64
	timeout     time.Duration
	record      bool
	parsedFlags []string
}

func (t *testRestoreFlags) register(fs *pflag.FlagSet) {
	t.bufferPool, t.timeout, t.record = 128<<20, 15*time.Minute, true
	fs.StringVar(&t.scratch, "scratch-dir", "", "directory under which the scratch data directory is made (it needs room for the restored backup); empty: $TMPDIR or /tmp")
	fs.StringVar(&t.mysqld, "mysqld-path", "", "the server binary; empty looks for mysqld, then mariadbd, under $VT_MYSQL_ROOT, in PATH and /usr/sbin")
	fs.StringVar(&t.mysqldFlags, "mysqld-flags", "", "extra flags for the throwaway mysqld, split like a shell would (e.g. --lower-case-table-names=1)")
	fs.Var(flagvalue.Size{P: &t.bufferPool, Allowed: "8MiB..1TiB"}, "buffer-pool-size", "the throwaway mysqld's --innodb-buffer-pool-size")
	fs.DurationVar(&t.timeout, "start-timeout", t.timeout, "how long mysqld may take to start on the restored files (crash recovery included)")
	fs.BoolVar(&t.record, "record", t.record, "store the verification record beside the backup (split storage)")
}

func (t *testRestoreFlags) validate() error {
	if t.bufferPool < 8<<20 || t.bufferPool > 1<<40 {
		return invalid("buffer-pool-size", flagvalue.FormatSize(t.bufferPool), "8MiB..1TiB")
	}
	if t.timeout < time.Second {
		return invalid("start-timeout", t.timeout.String(), "1s or more")
	}
	if t.scratch != "" && !filepath.IsAbs(t.scratch) {
		return invalid("scratch-dir", t.scratch, "an absolute directory path")
	}
	flags, err := shlex.Split(t.mysqldFlags)
	if err != nil {
		return invalid("mysqld-flags", t.mysqldFlags, "flags split like a shell would: "+err.Error())
	}
	for _, f := range flags {
		if !strings.HasPrefix(f, "--") {
			return invalid("mysqld-flags", t.mysqldFlags, "flags that each start with --")
		}
	}
	t.parsedFlags = flags
	return nil
}

func (t *testRestoreFlags) options(logger logutil.Logger) testrestore.Options {
	return testrestore.Options{
		Restore:       fifobackupengine.RestoreDirOptions{Config: fifobackupengine.FlagConfig()},
		ScratchParent: t.scratch,
		MysqldPath:    t.mysqld,
		MysqldFlags:   t.parsedFlags,
		BufferPool:    t.bufferPool,
		StartTimeout:  t.timeout,
		Logger:        logger,
	}
}

// verification reads a backup's verification record, if it has one.
func verification(ctx context.Context, bh backupstorage.BackupHandle) (*testrestore.Record, error) {
	sc, ok := bh.(sidecarStore)
	if !ok {
		return nil, nil
	}
	doc, err := sc.ReadSidecar(ctx, testrestore.RecordName)
	if errors.Is(err, splitstorage.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := testrestore.ParseRecord(doc)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}
