package fifobackupengine

import (
	"os"
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel SIGKILL the child when this process dies.
// (Strictly, when the thread that started it exits: Go ends threads only
// for goroutines that lock one and return without unlocking, which the
// engine does not do; the work directory of each run being its own covers
// the rest.)
// The child leads a process group of its own, so that cancelling kills what
// it started too (a wrapper script's tool, a tool's own helpers).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
}

// diskReadBytes is what an exited process read from storage devices (its
// rusage's blocks in, 512 bytes each): reads the page cache served are not
// in it.
func diskReadBytes(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Inblock * 512
	}
	return -1
}
