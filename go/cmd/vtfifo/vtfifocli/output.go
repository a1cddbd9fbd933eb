package vtfifocli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// Exit statuses of every vtfifo command: each means one thing, so that
// monitoring can tell damage from access.
const (
	// exitOK: done.
	exitOK = 0
	// exitFailed: the backup is damaged, or failed a check.
	exitFailed = 1
	// exitUsage: the command line is wrong; nothing was done.
	exitUsage = 2
	// exitUnreachable: the storage, a location or a backup could not be
	// read, accessed, found or finished with (a wrong root, keyspace or
	// shard, missing credentials, a timeout, this host's full disk or a
	// tool killed by the OOM killer); nothing says the backups are damaged.
	exitUnreachable = 3
)

// failureStatus is the exit status of a command on a backup that failed
// with err, by the one rule (go/internal/unreadable): what could not be
// read, reached or accessed (a permission, credentials, a timeout, an
// interrupt, the network, this host's keys) is 3, never damage; anything
// else 1.
func failureStatus(err error) int {
	switch {
	case flagvalue.IsContradiction(err):
		return exitUsage // a flag the data or the host contradicts: nothing was judged
	case unreadable.Is(err):
		return exitUnreachable
	}
	return exitFailed
}

// status is failureStatus for a failure of the session's work: one that
// came with the session's end (--timeout, an interrupt) is 3 whatever its
// error says (a tool killed by it exits with a signal, not a deadline).
func (s *session) status(err error) int {
	if s.ctx.Err() != nil {
		return exitUnreachable
	}
	return failureStatus(err)
}

// fail reports a failure of the session's work on stderr and returns its
// exit status: one that came with the session's end (--timeout, an
// interrupt) says so, 3.
func (s *session) fail(err error) int {
	if s.ctx.Err() != nil {
		return s.o.failf(exitUnreachable, "interrupted (%v): %s; nothing says the backup is damaged", context.Cause(s.ctx), errtext.Line(err))
	}
	return s.o.failf(failureStatus(err), "%s", failLine(err))
}

// reportFailure writes err's FAIL line (failLine) to w and returns its
// exit status (failureStatus): how a command reports a failure of its work
// where it has no session (s.fail) or writes elsewhere than the notes.
func reportFailure(w io.Writer, err error) int {
	fmt.Fprintln(w, failLine(err))
	return failureStatus(err)
}

// failLine is the FAIL line of such a failure, saying for an access error
// or this host's failure that the backup was not judged.
func failLine(err error) string {
	if flagvalue.IsContradiction(err) {
		return errtext.Line(err)
	}
	if why := unreadable.NoVerdict(err); why != "" {
		return "FAIL: " + errtext.Line(err) + "; " + why
	}
	return "FAIL: " + errtext.Line(err)
}

// exitStatusHelp is the line every command's help ends with.
const exitStatusHelp = "Exit status: 0 done, 1 a backup is damaged or failed a check, 2 usage error, 3 the storage, location or backup could not " +
	"be read, accessed, found or finished with (this host's disk, memory or a killed tool included): nothing says the backup is damaged."

// where names the backup directory of the flags and the storage it is in,
// for messages (never a credential).
func (o *options) where() string {
	return o.dir() + " in " + storageLocation(o)
}

// storageLocation names the storage the flags select.
func storageLocation(o *options) string {
	impl := backupstorage.BackupStorageImplementation
	switch impl {
	case splitstorage.Name:
		return splitstorage.FlagConfig().Location() + " (split storage)"
	case "file":
		if f := o.flags.Lookup("file-backup-storage-root"); f != nil {
			return f.Value.String() + " (file storage)"
		}
	}
	return "the " + cmp.Or(impl, "unnamed") + " storage"
}

// localRoot is the storage's root directory where it is one on this host
// (a backend in a local directory, or Vitess's file storage), else "".
func localRoot(o *options) string {
	switch backupstorage.BackupStorageImplementation {
	case splitstorage.Name:
		return splitstorage.FlagConfig().LocalRoot()
	case "file":
		if f := o.flags.Lookup("file-backup-storage-root"); f != nil {
			return f.Value.String()
		}
	}
	return ""
}

// missingRoot says whether the storage's local root does not exist: every
// listing of it is empty, which must not pass for a storage without
// backups.
func missingRoot(o *options) (string, bool) {
	root := localRoot(o)
	if root == "" {
		return "", false
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return root, true
	}
	return "", false
}

// rootMissing fails (exitUnreachable, said on stderr) where the storage's
// root directory does not exist; exitOK where it does, or has none.
func (o *options) rootMissing() int {
	if root, missing := missingRoot(o); missing {
		return o.failf(exitUnreachable, "the storage root %s does not exist: check the storage flags", root)
	}
	return exitOK
}

// failf prints a failure on stderr, cause first, and returns code. Errors
// among args print as their message (a Vitess error's %v adds its RPC code).
func (o *options) failf(code int, format string, args ...any) int {
	for i, a := range args {
		if err, ok := a.(error); ok {
			args[i] = errtext.Line(err)
		}
	}
	fmt.Fprintf(o.notes, "%s: %s\n", o.prog, fmt.Sprintf(format, args...))
	return code
}

// oneLine is text for a table's cell or a list's line: text that runs over
// lines (a quarantine for a failed start holds the server's error log,
// dozens of lines) keeps its first line, which says what failed, and its
// last, which says what was concluded, and says how many lines between
// `vtfifo show --backup=NAME` prints.
func oneLine(text, name string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	switch len(lines) {
	case 1:
		return lines[0]
	case 2:
		return lines[0] + " " + lines[1]
	}
	return fmt.Sprintf("%s [%d more lines: vtfifo show --backup=%s] %s", lines[0], len(lines)-2, name, lines[len(lines)-1])
}

// notef prints a note on stderr (what the command decided or is doing),
// unless --quiet.
func (o *options) notef(format string, args ...any) {
	if o.log.quiet || o.notes == nil {
		return
	}
	fmt.Fprintf(o.notes, "%s: %s\n", o.prog, fmt.Sprintf(format, args...))
}

func writeJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return exitUnreachable
	}
	return exitOK
}

// phasesText is "; took download 3.2s, prepare 0.4s", or "" for none.
func phasesText(phases []fifobackupengine.PhaseSeconds) string {
	if len(phases) == 0 {
		return ""
	}
	return "; took " + fifobackupengine.FormatPhases(phases)
}
