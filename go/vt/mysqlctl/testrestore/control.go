package testrestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/mysqlinstall"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// A server that exits at its start on the restored files is proof against
// the backup only where the same server, started the same way, starts on
// an empty data directory here: the control. Where the control exits too,
// what failed is this host's server or its settings (a library, a kernel
// limit, a confinement, a crash of its own, a refusal in words no list of
// this host's faults knows), and the run reaches no verdict; nothing is
// recorded or quarantined. A flaw the control could not show (it needs the
// backup's files) stays a verdict, so a damaged backup is still called so.
//
// The control's data directory is new and empty, beside the restored one in
// the scratch directory (the same file system, user and modes); the
// arguments are the failed start's with the files placed there. A MySQL 8
// server cannot start on an empty directory, so its control is initialized
// first (--initialize-insecure, which builds the data dictionary and the
// system tablespaces with the same settings, then exits: MySQL's manual,
// "Initializing the Data Directory"; run here against a stand-in only:
// docs/compatibility.md). Where the
// operator's --mysqld-flags are on the line and the control fails, it is
// run once more without them: starting so, the flags are what this server
// refuses here (a usage error, exit 2), which is said without restoring the
// backup again.

// controlTimeout bounds each step of the control: an empty server starts
// in seconds.
const controlTimeout = 2 * time.Minute

// controlled returns err, a start on the restored files that failed, judged
// by the control.
func (s *server) controlled(ctx context.Context, args []string, opts Options, err error) error {
	if noVerdictIn(err) || ctx.Err() != nil {
		return err
	}
	s.logger.Warningf("%s exited at its start on the restored files: starting it the same way on an empty data directory, so that this "+
		"host's server is not taken for the backup", s.bin)
	ctlErr := s.control(ctx, args, "control")
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case ctlErr == nil:
		return fmt.Errorf("%w; the same server, started the same way, starts on an empty data directory here: the restored files are what it "+
			"refused", err)
	case len(opts.MysqldFlags) > 0:
		bare := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return slices.Contains(opts.MysqldFlags, a) })
		if s.control(ctx, bare, "control-without-flags") == nil {
			return flagvalue.Contradiction(fmt.Errorf("%w; started with --mysqld-flags=%q it does not start on an empty data directory either, "+
				"and without them it does: those flags do not fit this server or this host, and nothing says the backup is damaged; "+
				"correct them or leave them out", err, strings.Join(opts.MysqldFlags, " ")))
		}
	}
	return unreadable.Host(fmt.Errorf("%w; the same server, started the same way, does not start on an empty data directory here either: %v",
		err, ctlErr), "its server does not start here even on an empty data directory, so its refusal says nothing about the backup")
}

// control starts the server with args on a new empty data directory (name,
// in the scratch directory), initialized first where the server is MySQL's,
// and stops it: nil when it answered.
func (s *server) control(ctx context.Context, args []string, name string) error {
	ctl := &server{bin: s.bin, dir: filepath.Join(s.dir, name), mariadb: s.mariadb, runAs: s.runAs, logger: s.logger}
	ctl.dataDir = filepath.Join(ctl.dir, "data")
	for _, d := range []string{ctl.dir, ctl.dataDir, filepath.Join(ctl.dir, "tmp")} {
		if err := os.Mkdir(d, 0o750); err != nil {
			return err
		}
	}
	if s.runAs != nil {
		if err := mysqlinstall.ChownTree(ctl.dir, s.runAs); err != nil {
			return err
		}
	}
	args = relocated(args, s.placeArgs(), ctl.placeArgs())
	if !s.mariadb {
		if err := ctl.initialize(ctx, args); err != nil {
			return err
		}
	}
	db, err := ctl.start(ctx, args, controlTimeout)
	if err != nil {
		return err
	}
	db.Close()
	ctl.stop()
	return nil
}

// initialize runs MySQL's --initialize-insecure with args (less
// --skip-grant-tables, which is about serving, not the files it builds).
func (s *server) initialize(ctx context.Context, args []string) error {
	init := append([]string{args[0], "--initialize-insecure"}, slices.DeleteFunc(slices.Clone(args[1:]), func(a string) bool {
		return a == "--skip-grant-tables"
	})...)
	cmd := s.command(init)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %w", s.bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s --initialize-insecure: %w; its error log ends:\n%s", s.bin, err, s.logTail())
		}
		return nil
	case <-ctx.Done():
	case <-time.After(controlTimeout):
	}
	cmd.Process.Kill()
	<-done
	return cmp.Or(ctx.Err(), errors.New(s.bin+" --initialize-insecure did not finish within "+controlTimeout.String()))
}

// relocated is args with each of from replaced by its counterpart in to.
func relocated(args, from, to []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if j := slices.Index(from, a); j >= 0 {
			out[i] = to[j]
		}
	}
	return out
}
