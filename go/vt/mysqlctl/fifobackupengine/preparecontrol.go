package fifobackupengine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// A prepare that dies of a signal of its own (a crash: SIGSEGV, SIGABRT,
// SIGILL, SIGBUS; SIGKILL and SIGTERM are the host's already, unreadable.
// Killed) may be the tool's on any input here (a build for another CPU, a
// library, a kernel feature) or the backup's (an InnoDB assertion on a page
// it read). The tool tells them apart itself: run the same way on an empty
// directory (the control), mariabackup and xtrabackup end by themselves,
// refusing it (no backup-my.cnf, no checkpoints). Where the control ends so,
// the crash was on the backup's files and stays a verdict; where it dies
// of a signal too, the crash is this host's tool, and no verdict.

// prepareControlTimeout bounds the control: the tools refuse an empty
// directory at once.
const prepareControlTimeout = time.Minute

// crashedHere returns err, a prepare of step that failed with state, judged
// by the control where the tool died of a signal; argsFor builds the
// tool's arguments for a step.
func crashedHere(ctx context.Context, tool *backupTool, step prepareStep, argsFor func(prepareStep) ([]string, error), state *os.ProcessState,
	err error) error {
	if state == nil {
		return err // it did not start
	}
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || unreadable.Is(err) || flagvalue.IsContradiction(err) || ctx.Err() != nil {
		return err
	}
	// Inside the target, which is this restore's own (a staging or scratch
	// directory, swept as a whole after a kill): never beside it, in a
	// directory that may be a tablet's.
	empty, mkErr := os.MkdirTemp(step.TargetDir, ".vtfifo-prepare-control-")
	if mkErr != nil {
		return err
	}
	defer os.RemoveAll(empty)
	control := step
	control.TargetDir = empty
	if control.DefaultsFile == "" && tool.Flavor == FlavorMariabackup {
		// The backup's settings, read as its prepare read them: the tool
		// gets as far into its start as it can before it refuses.
		control.DefaultsFile = filepath.Join(step.TargetDir, "backup-my.cnf")
	}
	if control.DeltaDir != "" {
		control.DeltaDir = empty
	}
	args, argsErr := argsFor(control)
	if argsErr != nil {
		return err
	}
	runCtx, cancel := context.WithTimeout(ctx, prepareControlTimeout)
	defer cancel()
	cmd := newToolCommand(runCtx, tool.Path, args...) // its output, a refusal of an empty directory, says nothing
	_ = cmd.Run()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if cmd.ProcessState == nil || runCtx.Err() != nil {
		return err // it could not be run, or did not end: no control
	}
	switch cws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); {
	case !ok:
		return err
	case cws.Signaled():
		return unreadable.Host(fmt.Errorf("%w; the same tool, run the same way on an empty directory, dies of a signal too (%v): this host's "+
			"tool, not the backup", err, cmd.ProcessState), "its backup tool crashes here even on an empty directory, so its crash says "+
			"nothing about the backup")
	}
	return fmt.Errorf("%w; the same tool, run the same way on an empty directory, ends by itself (%v): the backup's files are what it "+
		"crashed on", err, cmd.ProcessState)
}
