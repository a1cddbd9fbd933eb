package vtfifocli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// errOutputClosed is why a command stops when whoever read its output went
// away (`vtfifo verify --all | head`, a terminal closed under it).
var errOutputClosed = errors.New("its output was closed (SIGPIPE: the command reading it exited)")

// cancelOnClosedOutput returns ctx cancelled once the reader of stdout or
// stderr goes away, and a stop that returns once its goroutine has. Go's
// default for a write to such a pipe is to die at once, as under kill -9,
// leaving what a killed run leaves; cancelled, a command stops as on
// Ctrl-C and undoes what it started. A SIGPIPE from a write to another
// pipe (a child's) is only the EPIPE error its writer handles: caught
// signals are reset for the children, which keep the default.
func cancelOnClosedOutput(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	check := func() {
		if outputClosed() {
			cancel(errOutputClosed)
		}
	}
	ctx = context.WithValue(ctx, outputCheckKey{}, check)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-sigs:
				check()
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, func() {
		cancel(nil)
		<-done
		signal.Stop(sigs)
	}
}

type outputCheckKey struct{}

// checkOutput cancels ctx now where its output is closed: a command whose
// write failed on it (EPIPE) may return before the signal is handled, and
// its failure is then the closed output's, not the backup's.
func checkOutput(ctx context.Context) {
	if check, ok := ctx.Value(outputCheckKey{}).(func()); ok {
		check()
	}
}

// outputClosed says whether stdout or stderr is a pipe or socket whose
// reader is gone (the kernel reports POLLERR on such a write end).
func outputClosed() bool {
	fds := []unix.PollFd{{Fd: int32(unix.Stdout)}, {Fd: int32(unix.Stderr)}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return false
	}
	for _, fd := range fds {
		if fd.Revents&unix.POLLERR != 0 {
			return true
		}
	}
	return false
}
