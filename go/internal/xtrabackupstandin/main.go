// Command xtrabackupstandin is a STAND-IN for Percona XtraBackup >= 8.0.33,
// for tests only: Percona XtraBackup and MySQL 8 cannot be installed where
// this project's CI runs, so the FIFO path of the fifo engine is tested
// against this program. It follows Percona's FIFO datasink protocol
// (ds_fifo.cc) exactly and feeds it real data from mariabackup:
//
//   - --backup --stream=xbstream --fifo-streams=N --fifo-dir=D --fifo-timeout=S
//     creates D, mkfifo D/thread_0 .. D/thread_{N-1} (mode 0600, failing if
//     one exists), opens each for writing and waits up to S seconds for a
//     reader, then deals the files of mariabackup's stream to the FIFOs
//     round-robin at file open, so all chunks of a file go through one FIFO in
//     order and each FIFO carries a complete xbstream. --fifo-streams=1 (the
//     default) streams to stdout, as Percona does.
//   - --version prints a Percona-style version line that says it is a
//     stand-in.
//   - anything else (--prepare, ...) runs mariabackup with the same flags.
//
// Percona-only flags mariabackup lacks (--read-buffer-size) are accepted and
// dropped, with a note on stderr.
//
// Failure injection for tests, by environment:
//
//	XTRABACKUP_STANDIN_FLAVOR=mariabackup  present as mariabackup (pass-through)
//	XTRABACKUP_STANDIN_SKIP_FIFO=i         never open FIFO thread_i; fail after --fifo-timeout
//	XTRABACKUP_STANDIN_FAIL_AFTER=n        exit 1 after streaming n bytes of payload
//	MARIABACKUP=path                       the mariabackup to run (default: PATH)
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vtfifo/vtfifo/go/xbstream"
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
		fmt.Fprintln(os.Stderr, "xtrabackup version 8.0.35-30 based on MySQL server 8.0.35 Linux (x86_64) (revision id: stand-in for Percona's FIFO protocol, data from mariabackup)")
		return nil
	}

	var (
		backup, xbstreamOut bool
		fifoStreams         = 1
		fifoDir             string
		fifoTimeout         = 60 * time.Second
		passed              []string
	)
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		switch k {
		case "--backup":
			backup = true
		case "--stream":
			xbstreamOut = v == "xbstream"
		case "--fifo-streams":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("invalid --fifo-streams %q", v)
			}
			fifoStreams = n
			continue
		case "--fifo-dir":
			fifoDir = v
			continue
		case "--fifo-timeout":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("invalid --fifo-timeout %q", v)
			}
			fifoTimeout = time.Duration(n) * time.Second
			continue
		case "--read-buffer-size":
			if !asMaria {
				fmt.Fprintf(os.Stderr, "xtrabackup stand-in: note: %s accepted and dropped (mariabackup has no such setting)\n", a)
				continue
			}
		}
		passed = append(passed, a)
	}
	failAfter := int64(-1)
	if v := os.Getenv("XTRABACKUP_STANDIN_FAIL_AFTER"); v != "" {
		failAfter, _ = strconv.ParseInt(v, 10, 64)
	}
	if !backup || !xbstreamOut || (fifoStreams == 1 && failAfter < 0) {
		return passThrough(mariabackup, passed)
	}
	if fifoStreams > 1 && fifoDir == "" {
		return errors.New("--fifo-streams needs --fifo-dir")
	}

	var outs []io.WriteCloser
	if fifoStreams == 1 {
		outs = []io.WriteCloser{os.Stdout}
	} else {
		var err error
		if outs, err = openFIFOs(fifoDir, fifoStreams, fifoTimeout); err != nil {
			return err
		}
	}

	cmd := exec.Command(mariabackup, passed...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	dealErr := deal(stdout, outs, failAfter)
	for _, o := range outs {
		o.Close()
	}
	if dealErr != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return dealErr
	}
	return cmd.Wait()
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

// openFIFOs follows ds_fifo.cc: create the directory, mkfifo every stream
// with mode 0600 (an existing one is an error), then open each for writing,
// waiting up to timeout for a reader.
func openFIFOs(dir string, n int, timeout time.Duration) ([]io.WriteCloser, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	skip := -1
	if v := os.Getenv("XTRABACKUP_STANDIN_SKIP_FIFO"); v != "" {
		skip, _ = strconv.Atoi(v)
	}
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("thread_%d", i))
		if err := syscall.Mkfifo(paths[i], 0o600); err != nil {
			return nil, fmt.Errorf("cannot create FIFO %s: %w", paths[i], err)
		}
	}
	outs := make([]io.WriteCloser, n)
	for i, p := range paths {
		if i == skip {
			time.Sleep(timeout)
			return nil, fmt.Errorf("timeout waiting for a reader on FIFO %s (stand-in told to skip it)", p)
		}
		f, err := openForWrite(p, timeout)
		if err != nil {
			return nil, err
		}
		outs[i] = f
	}
	return outs, nil
}

// openForWrite polls a non-blocking open (ENXIO while no reader), then makes
// the descriptor blocking for the copy.
func openForWrite(path string, timeout time.Duration) (*os.File, error) {
	deadline := time.Now().Add(timeout)
	for {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == nil {
			if err := syscall.SetNonblock(fd, false); err != nil {
				syscall.Close(fd)
				return nil, err
			}
			return os.NewFile(uintptr(fd), path), nil
		}
		if !errors.Is(err, syscall.ENXIO) {
			return nil, fmt.Errorf("cannot open FIFO %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("timeout waiting %v for a reader on FIFO %s", timeout, path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// deal copies mariabackup's stream to the outputs, each file to the output
// chosen round-robin when the file is opened (its first chunk), as Percona
// assigns files to FIFO streams at open.
func deal(src io.Reader, outs []io.WriteCloser, failAfter int64) error {
	r := xbstream.NewReader(src)
	writers := make([]*xbstream.Writer, len(outs))
	for i, o := range outs {
		writers[i] = xbstream.NewWriter(o)
	}
	assigned := map[string]int{}
	next := 0
	var payload int64
	for {
		c, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		lane, ok := assigned[c.Path]
		if !ok {
			lane = next % len(outs)
			next++
			assigned[c.Path] = lane
		}
		if c.Type == xbstream.ChunkEOF {
			delete(assigned, c.Path)
		}
		if err := writers[lane].WriteChunk(c); err != nil {
			return err
		}
		payload += int64(len(c.Payload))
		if failAfter >= 0 && payload >= failAfter {
			return fmt.Errorf("failing on purpose after %d bytes (XTRABACKUP_STANDIN_FAIL_AFTER)", payload)
		}
	}
}
