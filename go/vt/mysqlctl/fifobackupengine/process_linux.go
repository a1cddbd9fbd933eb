package fifobackupengine

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel SIGKILL the child when this process dies.
// (Strictly, when the thread that started it exits: Go ends threads only
// for goroutines that lock one and return without unlocking, which the
// engine does not do; the work directory of each run being its own covers
// the rest.)
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
