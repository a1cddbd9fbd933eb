package fifobackupengine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// A prepare that failed is proof against the backup only where the tool got
// as far as the backup's files. The control tells: the same tool run the
// same way on an empty directory (but for a copy of the backup's
// backup-my.cnf, the settings it starts with), which mariabackup and
// xtrabackup refuse by themselves at once (exit 1: no checkpoints).
//   - A prepare that died of a signal of its own (a crash: SIGSEGV, SIGABRT,
//     SIGILL, SIGBUS; SIGKILL and SIGTERM are the host's already,
//     unreadable.Killed) may be the tool's on any input here (a build for
//     another CPU, a library, a kernel feature) or the backup's (an InnoDB
//     assertion on a page it read). Where the control ends by itself, the
//     crash was on the backup's files and stays a verdict; where it dies of
//     a signal too, the crash is this host's tool, and no verdict.
//   - A prepare that ended by itself, failing, in the same way as the
//     control (the same exit status, the same whole output but for the
//     directories each was given and the times) never got to the backup's
//     files: a tool that cannot work here, an option it does not take. No
//     verdict; where the operator's --fifo-backup-prepare-flags are on the
//     line, the control runs once more without them, and ending otherwise
//     the flags are what the tool refuses (a usage error, exit 2).
// Anything else stays a verdict, so a damaged backup is still called so.

// prepareControlTimeout bounds each control run: the tools refuse an empty
// directory at once.
const prepareControlTimeout = time.Minute

// prepareTailLines is how much of a prepare's output is kept, for its
// error and for the comparison with the control.
const prepareTailLines = 20

// toolExit is how a run of the tool ended, and what it printed.
type toolExit struct {
	state *os.ProcessState
	out   *tailLogger
	dirs  []string // the directories it was given, which its output may name
}

func (e toolExit) signaled() bool {
	ws, ok := e.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// sameAs reports whether e and o ended alike: the same exit status and the
// same whole output, the directories each was given and the times aside.
func (e toolExit) sameAs(o toolExit) bool {
	return e.state.ExitCode() == o.state.ExitCode() && e.out.whole() && o.out.whole() && e.comparable() == o.comparable()
}

// toolTimes are the times the tools stamp their lines with (mariabackup's
// "2026-12-03 10:30:58", MySQL 8's "2026-12-03T10:30:58.123456-00:00").
var toolTimes = regexp.MustCompile(`\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)?`)

func (e toolExit) comparable() string {
	s := e.out.tail()
	dirs := slices.SortedFunc(slices.Values(e.dirs), func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, d := range dirs {
		if d != "" {
			s = strings.ReplaceAll(s, d, "DIR")
		}
	}
	return toolTimes.ReplaceAllString(s, "TIME")
}

// prepareControl runs a failed prepare's control.
type prepareControl struct {
	tool    *backupTool
	step    prepareStep // the prepare that failed
	flags   string      // the operator's --fifo-backup-prepare-flags
	argsFor func(step prepareStep, flags string) ([]string, error)
	secrets []string // hidden from the control's output as from the prepare's
	logger  logutil.Logger
}

// judge returns err, the failure of the prepare that ended as failed,
// judged by the control.
func (c prepareControl) judge(ctx context.Context, failed toolExit, err error) error {
	if failed.state == nil || unreadable.Is(err) || flagvalue.IsContradiction(err) || ctx.Err() != nil {
		return err // it did not start, or is judged already
	}
	if !failed.signaled() && !failed.out.whole() {
		return err // more output than a refusal of the directory: it read the backup's files
	}
	ctl, ok := c.run(ctx, c.flags)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case !ok:
		return err // it could not be run, or did not end: no control
	case failed.signaled():
		return judgeCrash(err, ctl)
	case !failed.sameAs(ctl):
		return err // the backup's files took it elsewhere
	}
	if c.flags != "" {
		bare, ok := c.run(ctx, "")
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ok && !failed.sameAs(bare) {
			return flagvalue.Contradiction(fmt.Errorf("%w; the same tool, run the same way on an empty directory, fails the same way (%v), "+
				"and without --fifo-backup-prepare-flags=%q it does not: those flags do not fit this tool or this host, and nothing says the "+
				"backup is damaged; correct them or leave them out", err, ctl.state, RedactedFlags(c.flags)))
		}
	}
	return unreadable.Host(fmt.Errorf("%w; the same tool, run the same way on an empty directory, fails the same way (%v, the same output): "+
		"it never got as far as the backup's files", err, ctl.state), "its backup tool fails here the same way on an empty directory, so "+
		"its failure says nothing about the backup")
}

// judgeCrash returns err, a prepare that died of a signal, judged by ctl,
// the control.
func judgeCrash(err error, ctl toolExit) error {
	if ctl.signaled() {
		return unreadable.Host(fmt.Errorf("%w; the same tool, run the same way on an empty directory, dies of a signal too (%v): this host's "+
			"tool, not the backup", err, ctl.state), "its backup tool crashes here even on an empty directory, so its crash says "+
			"nothing about the backup")
	}
	return fmt.Errorf("%w; the same tool, run the same way on an empty directory, ends by itself (%v): the backup's files are what it "+
		"crashed on", err, ctl.state)
}

// run runs the prepare again with flags on a new empty directory inside
// the target, which is this restore's own (a staging or scratch directory,
// swept as a whole after a kill): never beside it, in a directory that may
// be a tablet's. ok is false where it could not be run or did not end.
func (c prepareControl) run(ctx context.Context, flags string) (ctl toolExit, ok bool) {
	empty, err := os.MkdirTemp(c.step.TargetDir, ".vtfifo-prepare-control-")
	if err != nil {
		return toolExit{}, false
	}
	defer os.RemoveAll(empty)
	// The backup's settings, which a prepare reads from its directory: the
	// tool starts as it did on the backup, then refuses the directory (no
	// checkpoints).
	if cnf, err := os.ReadFile(filepath.Join(c.step.TargetDir, "backup-my.cnf")); err == nil {
		if err := os.WriteFile(filepath.Join(empty, "backup-my.cnf"), cnf, 0o600); err != nil {
			return toolExit{}, false
		}
	}
	step := c.step
	step.TargetDir = empty
	if step.DefaultsFile == "" && c.tool.Flavor == FlavorMariabackup {
		step.DefaultsFile = filepath.Join(c.step.TargetDir, "backup-my.cnf") // the option file its prepare was given
	}
	if step.DeltaDir != "" {
		step.DeltaDir = empty
	}
	args, err := c.argsFor(step, flags)
	if err != nil {
		return toolExit{}, false
	}
	runCtx, cancel := context.WithTimeout(ctx, prepareControlTimeout)
	defer cancel()
	out := newTailLogger(c.logger, c.tool.Flavor+" prepare control: ", prepareTailLines)
	out.hide(c.secrets...)
	cmd := newToolCommand(runCtx, c.tool.Path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	_ = cmd.Run()
	out.flush()
	if cmd.ProcessState == nil || runCtx.Err() != nil {
		return toolExit{}, false
	}
	return toolExit{state: cmd.ProcessState, out: out, dirs: []string{empty}}, true
}

// A prepare that failed on the backup's files under the operator's
// --fifo-backup-prepare-flags (but for those that give it a keyring) is no
// proof about the backup either: a flag the tool takes that does not fit
// the files (another page size) fails it in the words of damage ("Data
// structure corruption"). Only a prepare without them tells, which needs
// the backup restored again: vtfifo test-restore does so
// (UnderPrepareFlags); a restore says what to do.

// underPrepareFlags marks err, a prepare's failure on the backup's files
// under the operator's flags others, as no verdict.
func underPrepareFlags(err error, prepareFlags string) error {
	_, others := KeyringPrepareFlags(prepareFlags)
	if err == nil || others == "" || unreadable.Is(err) || flagvalue.IsContradiction(err) {
		return err
	}
	return underFlags{unreadable.Host(err, fmt.Sprintf("its prepare ran with --fifo-backup-prepare-flags=%q, which may be what it failed on; "+
		"restore it without them, or run vtfifo test-restore, which tries both, to tell", RedactedFlags(others)))}
}

type underFlags struct{ error }

func (u underFlags) Unwrap() error { return u.error }

// UnderPrepareFlags reports whether err is a prepare's failure on the
// backup's files under the operator's --fifo-backup-prepare-flags, which
// the same prepare without them would tell from the backup's.
func UnderPrepareFlags(err error) bool {
	var u underFlags
	return errors.As(err, &u)
}
