package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vtfifo/vtfifo/go/testutil/freeport"
)

// Proc is one long-running process the harness started. Its stdout and stderr go to LogPath.
type Proc struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// Pid of the process.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited, and its error.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process (by its PID), waits up to grace, then SIGKILLs it.
func (p *Proc) Stop(grace time.Duration) {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	if done, _ := p.Exited(); done {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Wait for the process to exit.
func (p *Proc) Wait() error {
	<-p.done
	return p.waitErr
}

// Tail returns the last n bytes of the process log.
func (p *Proc) Tail(n int) string { return tailFile(p.LogPath, n) }

func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// procs tracks every process of a cluster so Teardown stops them all.
type procs struct {
	mu   sync.Mutex
	list []*Proc
}

func (c *Cluster) start(name string, env []string, bin string, args ...string) (*Proc, error) {
	logPath := filepath.Join(c.LogDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "### %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Dir = c.Root
	cmd.Env = append(c.baseEnv(), env...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = c.user.sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	c.procs.mu.Lock()
	c.procs.list = append(c.procs.list, p)
	c.procs.mu.Unlock()
	c.logf("started %s (pid %d), log %s", name, p.Pid(), logPath)
	return p, nil
}

// run runs a short command to completion, logging to name.log, and returns its output.
func (c *Cluster) run(ctx context.Context, name string, env []string, bin string, args ...string) (string, error) {
	logPath := filepath.Join(c.LogDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fmt.Fprintf(f, "### %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = c.Root
	cmd.Env = append(c.baseEnv(), env...)
	// One writer for both: exec then gives the process one pipe, so out holds
	// its stdout and stderr in the order it wrote them, copied by one goroutine
	// (two writers are two pipes read at once, in any order, into one Builder).
	var out strings.Builder
	w := &teeWriter{&out, f}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = c.user.sysProcAttr()
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %w\n%s(log: %s)", filepath.Base(bin), strings.Join(args, " "), err, lastLines(out.String(), 30), logPath)
	}
	return out.String(), nil
}

type teeWriter struct {
	a *strings.Builder
	b *os.File
}

func (t *teeWriter) Write(p []byte) (int, error) {
	t.a.Write(p)
	return t.b.Write(p)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// FreePort returns a TCP port that is free and no other test process holds
// (go/testutil/freeport).
func FreePort() (int, error) { return freeport.Get() }

// stopWaiting wraps an error that makes waitFor give up at once (a process exited).
type stopWaiting struct{ error }

func (s stopWaiting) Unwrap() error { return s.error }

// fatal marks err as one that ends a waitFor immediately.
func fatal(err error) error { return stopWaiting{err} }

// waitFor polls cond until it returns true, ctx/timeout expire, or cond returns an error
// made with fatal. Other errors are remembered and reported on timeout.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		var stop stopWaiting
		if errors.As(err, &stop) {
			return fmt.Errorf("waiting for %s: %w", what, stop.error)
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("timed out after %v waiting for %s: %w", timeout, what, last)
			}
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
