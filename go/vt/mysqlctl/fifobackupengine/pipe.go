package fifobackupengine

import "os"

// The tool's stream reaches the engine through pipes (its stdout, or the
// FIFOs it creates). At the kernel's default of 64 KiB the tool stops at
// every 64 KiB until the engine has read it: a backup on many cores spends
// longer in the tool than the tool alone takes to write to /dev/null
// (docs/benchmarks/archive/16-cores-2026-11-24.md). Linux lets a process grow a pipe up to
// /proc/sys/fs/pipe-max-size (1 MiB by default). More is not faster: the
// tool streamed through 16 MiB about as slowly as through 64 KiB
// (docs/benchmarks/backup-cpu.md).

// toolPipesBudget bounds what the tool's pipes hold together, so that 64
// FIFO streams do not ask the kernel for 64 MiB.
const toolPipesBudget = 16 << 20

// ToolPipeSize is the capacity asked of each of n pipes (the benchmark asks
// the same of the FIFOs its stand-in ceiling reads): an even share of
// the budget, at least the kernel's default and at most its usual ceiling.
func ToolPipeSize(n int) int {
	return min(max(toolPipesBudget/max(n, 1), 64<<10), 1<<20)
}

// StdoutPipe is the pipe the tool's stdout reaches the engine through, grown
// to one pipe's share (the benchmark's tool-pipe ceiling reads the same).
func StdoutPipe() (r, w *os.File, err error) {
	if r, w, err = os.Pipe(); err != nil {
		return nil, nil, err
	}
	// Through the write end, which the child gets in blocking mode anyway:
	// Fd on the read end would take it off Go's poller.
	growPipe(w.Fd(), ToolPipeSize(1))
	return r, w, nil
}
