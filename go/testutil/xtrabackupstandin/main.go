// Command xtrabackupstandin is a STAND-IN for Percona XtraBackup >= 8.0.33-28,
// for tests only: Percona XtraBackup and MySQL 8 cannot be installed where
// this project's CI runs, so the FIFO path of the fifo engine is tested
// against this program. It feeds real data from mariabackup through Percona's
// FIFO datasink protocol, each point as PXB's source has it
// (storage/innobase/xtrabackup/src):
//
//   - Late creation (xtrabackup.cc, xtrabackup_backup_func): PXB creates its
//     FIFOs in xtrabackup_init_datasinks, after it has connected, taken LOCK
//     INSTANCE FOR BACKUP and initialised the keyring and the redo reader.
//     The stand-in creates them once mariabackup has produced its first byte
//     (it has connected and locked by then), after XTRABACKUP_STANDIN_LOCK_WAIT
//     more, as a long lock wait would.
//   - One-level directory (ds_fifo.cc, fifo_init): my_mkdir of --fifo-dir
//     with mode 0600, to which mysys's my_mkdir adds my_umask_dir (0750), so
//     0750 less the process umask; an existing one is fine, a missing parent
//     is an error; then mkfifo(thread_i, 0600) for every stream, an existing
//     FIFO is an error.
//   - Sequential opens (ds_fifo.cc, fifo_init; file_utils.cc,
//     open_fifo_for_write_with_timeout): thread_0 first, each opened
//     O_WRONLY|O_NONBLOCK, retried once a second up to --fifo-timeout tries
//     whatever the error (not only ENXIO); on a timeout every FIFO is closed
//     and unlinked and the tool exits 1 (cleanup_on_error).
//   - Control byte (open_fifo_for_write_with_timeout): once opened, the fd
//     is made blocking and one byte is written before any data. Its value is
//     defined in ds_fifo.h, which this project could not read:
//     XTRABACKUP_STANDIN_CONTROL_BYTE picks it (default 'X', the worst case
//     for a reader: the first byte of the chunk magic).
//   - Dealing (ds_xbstream.cc, xbstream_open): files go to the streams
//     round-robin at file open; all chunks of a file go through one stream in
//     order; each stream is a plain xbstream with no trailer. Each stream is
//     written by a goroutine of its own, as each copy thread writes under
//     its stream's lock: a slow reader holds up only its own stream (deal.go;
//     its cost alone: BenchmarkDeal).
//   - --parallel (xtrabackup_backup_func) is raised to --fifo-streams.
//   - Chunking (xbstream_write.cc, xb_stream_write_data): writes smaller than
//     what the buffer has room for are gathered; a larger write is emitted
//     whole as one chunk, however large (a 64 MiB delta cluster, a read of
//     --read-buffer-size). The stand-in merges mariabackup's consecutive
//     chunks of a file up to --read-buffer-size (the copy thread's read) and
//     passes a chunk of that size or more whole.
//   - --fifo-streams=1 (the default) streams to stdout; --version prints a
//     Percona-style line on stderr that says it is a stand-in.
//   - anything else (--prepare, ...) runs mariabackup with the same flags,
//     less --apply-log-only (Percona's rule for a chain's prepares but the
//     last): mariabackup 10.2+ has no such option, its prepare
//     never rolls back; a prepare reads the backup's backup-my.cnf in place
//     of its --defaults-file (preparesFromBackupCnf).
//
// What it does not prove: that the byte's value, Percona's redo copying, its
// file set (MySQL 8's #innodb_redo, undo tablespaces, xtrabackup_tablespaces)
// or its timing under load match; only the protocol around the stream.
//
// Failure injection and knobs for tests, by environment:
//
//	XTRABACKUP_STANDIN_FLAVOR=mariabackup  present as mariabackup (pass-through)
//	XTRABACKUP_STANDIN_VERSION=8.0.33-27   the version --version prints
//	XTRABACKUP_STANDIN_LOCK_WAIT=3s        wait this long more before creating the FIFOs
//	XTRABACKUP_STANDIN_CONTROL_BYTE=X      the control byte ("none": write none; longer: garbage)
//	XTRABACKUP_STANDIN_FAIL_LOCK=1         exit 1 before creating the FIFOs, as on a lock timeout
//	XTRABACKUP_STANDIN_FAIL_AFTER=n        exit 1 after streaming n bytes of payload
//	XTRABACKUP_STANDIN_FAIL_OPEN=k         fail opening FIFO k (0-based) as on its timeout: every FIFO closed and unlinked, exit 1
//	XTRABACKUP_STANDIN_ARGS_TO=file        write the argv given to mariabackup there
//	XTRABACKUP_STANDIN_DROP=prefix         leave the files whose path starts so out of the stream, silently
//	XTRABACKUP_STANDIN_EXTRA_ARGS="--x"    more options for mariabackup's --backup, unseen by the engine (as from a source it cannot read)
//	XTRABACKUP_STANDIN_PREPARES_TO=file    append one line per prepare there (apply-log-only and the argv)
//	MARIABACKUP=path                       the mariabackup to run (default: PATH)
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "xtrabackup stand-in: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	mariabackup := os.Getenv("MARIABACKUP")
	if mariabackup == "" {
		mariabackup = "mariabackup"
	}
	asMaria := os.Getenv("XTRABACKUP_STANDIN_FLAVOR") == "mariabackup"
	if len(args) == 1 && args[0] == "--version" {
		if asMaria {
			return passThrough(mariabackup, args)
		}
		v := os.Getenv("XTRABACKUP_STANDIN_VERSION")
		if v == "" {
			v = "8.0.35-30"
		}
		fmt.Fprintf(os.Stderr, "xtrabackup version %s based on MySQL server 8.0.35 Linux (x86_64) (revision id: stand-in for Percona's FIFO protocol, "+
			"data from mariabackup)\n", v)
		return nil
	}

	o, err := parseArgs(args, asMaria)
	if err != nil {
		return err
	}
	if f := os.Getenv("XTRABACKUP_STANDIN_PREPARES_TO"); f != "" && !o.backup {
		// Each prepare's Percona-only flag, for tests of the chain's order.
		if pf, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			fmt.Fprintf(pf, "apply-log-only=%t %s\n", o.applyLogOnly, strings.Join(o.passed, " "))
			pf.Close()
		}
	}
	if f := os.Getenv("XTRABACKUP_STANDIN_ARGS_TO"); f != "" && o.backup {
		_ = os.WriteFile(f, []byte(strings.Join(o.passed, "\n")+"\n"), 0o600)
	}
	failAfter := int64(-1)
	if v := os.Getenv("XTRABACKUP_STANDIN_FAIL_AFTER"); v != "" {
		failAfter, _ = strconv.ParseInt(v, 10, 64)
	}
	drop := os.Getenv("XTRABACKUP_STANDIN_DROP")
	if !o.backup || !o.xbstreamOut || (o.fifoStreams == 1 && failAfter < 0 && o.readBuffer == 0 && drop == "") {
		return passThrough(mariabackup, o.passed)
	}
	if o.fifoStreams > 1 && o.fifoDir == "" {
		return errors.New("--fifo-streams needs --fifo-dir")
	}

	cmd := exec.Command(mariabackup, o.passed...)
	cmd.Stderr = os.Stderr
	// The pipe from mariabackup as the engine gives a tool's stdout (1 MiB):
	// at the kernel's 64 KiB the stand-in would slow the tool more than
	// real FIFOs do.
	stdout, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer stdout.Close()
	_, _ = unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		return err
	}
	stop := func(err error) error {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	src := bufio.NewReaderSize(stdout, 1<<20)
	var outs []io.WriteCloser
	if o.fifoStreams == 1 {
		outs = []io.WriteCloser{os.Stdout}
	} else {
		// mariabackup's first byte: it has connected and taken its locks.
		if _, err := src.Peek(1); err != nil {
			return stop(fmt.Errorf("mariabackup produced no stream: %w", err))
		}
		if os.Getenv("XTRABACKUP_STANDIN_FAIL_LOCK") != "" {
			//lint:ignore ST1005 Percona XtraBackup's own words
			return stop(errors.New("Unable to obtain lock: LOCK INSTANCE FOR BACKUP timed out (stand-in told to fail)"))
		}
		if v := os.Getenv("XTRABACKUP_STANDIN_LOCK_WAIT"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return stop(fmt.Errorf("XTRABACKUP_STANDIN_LOCK_WAIT: %w", err))
			}
			time.Sleep(d)
		}
		if outs, err = openFIFOs(o.fifoDir, o.fifoStreams, o.fifoTimeout); err != nil {
			return stop(err)
		}
	}
	dealErr := deal(src, outs, o.readBuffer, failAfter, drop)
	for _, o := range outs {
		o.Close()
	}
	if dealErr != nil {
		return stop(dealErr)
	}
	return cmd.Wait()
}

// standinArgs is the command line as the stand-in takes it: the options it
// plays itself, and those it passes to mariabackup.
type standinArgs struct {
	backup, xbstreamOut, applyLogOnly bool
	fifoStreams, fifoTimeout          int
	fifoDir                           string
	readBuffer                        int64
	passed                            []string
}

// parseArgs reads Percona's options the stand-in plays (FIFO streams, read
// buffer, --apply-log-only) and passes the rest to mariabackup; --parallel
// is raised to --fifo-streams (xtrabackup_backup_func).
func parseArgs(args []string, asMaria bool) (standinArgs, error) {
	o := standinArgs{fifoStreams: 1, fifoTimeout: 60}
	parallel := 1
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "--backup":
			o.backup = true
		case "--stream":
			o.xbstreamOut = v == "xbstream"
		case "--parallel":
			parallel, _ = strconv.Atoi(v)
			continue // passed below, raised to --fifo-streams
		case "--fifo-streams":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return o, fmt.Errorf("invalid --fifo-streams %q", v)
			}
			o.fifoStreams = n
			continue
		case "--fifo-dir":
			o.fifoDir = v
			continue
		case "--fifo-timeout":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return o, fmt.Errorf("invalid --fifo-timeout %q", v)
			}
			o.fifoTimeout = n
			continue
		case "--apply-log-only":
			// Percona's prepare of a chain's backups but the last; mariabackup
			// (10.2+) has no such option and never rolls back at prepare.
			if !asMaria {
				o.applyLogOnly = true
				continue
			}
		case "--read-buffer-size":
			if !asMaria {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 128<<10 {
					return o, fmt.Errorf("invalid --read-buffer-size %q (at least 131072)", v)
				}
				o.readBuffer = n - n%(64<<10) // my_getopt rounds down to the block size
				continue
			}
		}
		o.passed = append(o.passed, a)
	}
	if !o.backup && !asMaria {
		preparesFromBackupCnf(o.passed)
	}
	if o.backup {
		o.passed = append(o.passed, fmt.Sprintf("--parallel=%d", max(parallel, o.fifoStreams)))
		o.passed = append(o.passed, strings.Fields(os.Getenv("XTRABACKUP_STANDIN_EXTRA_ARGS"))...)
	}
	return o, nil
}

// preparesFromBackupCnf has a prepare read the backup's backup-my.cnf in
// place of the given --defaults-file. The data behind the stand-in is
// mariabackup's, whose prepare takes its server and encryption settings
// from there, and which for --export starts a server that would take the
// host file's [mysqld] user=. A choice of the stand-in, not Percona's
// behaviour (whose prepare reads the given file for its keyring: not run
// here).
func preparesFromBackupCnf(args []string) {
	target := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--target-dir="); ok {
			target = v
		}
	}
	for i, a := range args {
		if strings.HasPrefix(a, "--defaults-file=") && target != "" && slices.Contains(args, "--prepare") {
			args[i] = "--defaults-file=" + filepath.Join(target, "backup-my.cnf")
		}
	}
}

func passThrough(bin string, args []string) error {
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		return err
	}
	return nil
}

// openFIFOs follows ds_fifo.cc, fifo_init: create the directory (one level),
// mkfifo every stream with mode 0600 (an existing one is an error), then open
// them one after another, each with its own timeout. On a failure every FIFO
// is closed and unlinked.
func openFIFOs(dir string, n, timeout int) ([]io.WriteCloser, error) {
	if err := os.Mkdir(dir, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("cannot create FIFO directory %s: %w", dir, err)
	}
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("thread_%d", i))
		if err := syscall.Mkfifo(paths[i], 0o600); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return nil, fmt.Errorf("FIFO file %s already exists", paths[i])
			}
			return nil, fmt.Errorf("cannot create FIFO %s: %w", paths[i], err)
		}
	}
	failOpen := -1
	if v := os.Getenv("XTRABACKUP_STANDIN_FAIL_OPEN"); v != "" {
		failOpen, _ = strconv.Atoi(v)
	}
	var outs []io.WriteCloser
	for i, p := range paths {
		var f *os.File
		var err error
		if i == failOpen {
			err = fmt.Errorf("timeout waiting %ds for a reader on FIFO %s (stand-in told to fail)", timeout, p)
		} else {
			f, err = openForWrite(p, timeout)
		}
		if err != nil {
			for _, o := range outs {
				o.Close()
			}
			for _, p := range paths {
				os.Remove(p)
			}
			return nil, err
		}
		outs = append(outs, f)
	}
	return outs, nil
}

// openForWrite follows file_utils.cc, open_fifo_for_write_with_timeout: try a
// non-blocking open (ENXIO while no reader has the FIFO open; any error is
// retried) once a second, up to timeout tries; then make the fd blocking and
// write the control byte.
func openForWrite(path string, timeout int) (*os.File, error) {
	for attempt := 0; ; {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == nil {
			if err := syscall.SetNonblock(fd, false); err != nil {
				syscall.Close(fd)
				return nil, err
			}
			f := os.NewFile(uintptr(fd), path)
			if b := controlByte(); b != nil {
				if _, err := f.Write(b); err != nil {
					f.Close()
					return nil, err
				}
			}
			return f, nil
		}
		if attempt++; attempt >= timeout {
			return nil, fmt.Errorf("timeout waiting %ds for a reader on FIFO %s", timeout, path)
		}
		time.Sleep(time.Second)
	}
}

func controlByte() []byte {
	switch v := os.Getenv("XTRABACKUP_STANDIN_CONTROL_BYTE"); v {
	case "":
		return []byte{'X'}
	case "none":
		return nil
	default:
		return []byte(v) // more than one byte: a stream the engine must refuse
	}
}
