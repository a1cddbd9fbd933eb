package fifobackupengine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/procident"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
)

// newCommand is exec.CommandContext for every program the engine runs (the
// tool, external compressors): never through a shell, and ended with this
// process where the system allows it (dieWithParent), so that a backup or
// restore process killed by SIGKILL or the OOM killer leaves no tool running
// on files that the next attempt reuses. When ctx ends, the program's whole
// process group is killed (a wrapper's children too).
func newCommand(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	dieWithParent(cmd)
	return cmd
}

// newToolCommand is newCommand for the backup tool, whose output only goes
// to the log: Wait returns at most toolOutputDelay after the tool exited,
// even if a child of it still holds its stdout or stderr, so a tool that
// fails never leaves the engine waiting. (Not for a compressor, whose
// output is the data.)
func newToolCommand(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := newCommand(ctx, path, args...)
	cmd.WaitDelay = toolOutputDelay
	return cmd
}

const toolOutputDelay = 5 * time.Second

// localProcess is a live process of this host, as /proc shows it.
type localProcess struct {
	Pid  int
	Argv []string
}

func (p localProcess) String() string {
	return fmt.Sprintf("%d (%s)", p.Pid, strings.Join(p.Argv, " "))
}

// readProcess reads pid's argv from /proc; ok is false for a process that is
// gone, a zombie, or not visible.
func readProcess(pid int) (p localProcess, ok bool) {
	if f, ok := procident.Stat(pid); !ok || f[0] == "Z" {
		return p, false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(cmdline) == 0 {
		return p, false
	}
	return localProcess{Pid: pid, Argv: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")}, true
}

// processesWithArg lists the live processes of this host (this one
// excepted) that have arg in their argv. Processes in another PID namespace
// (a mysqld in another container) are not seen; without /proc the list is
// empty.
func processesWithArg(arg string) []localProcess {
	entries, _ := os.ReadDir("/proc")
	var out []localProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if p, ok := readProcess(pid); ok && slices.Contains(p.Argv, arg) {
			out = append(out, p)
		}
	}
	return out
}

// openFilesSlack is what the tool keeps open besides the tablespaces it
// opens at once (redo, system and undo tablespaces, pipes, the connection).
const openFilesSlack = 256

// toolOpenFiles is the tool's --open-files-limit: the hard limit of open
// files, which it raises its own soft limit to with setrlimit (Percona's
// xtrabackup.cc: xtrabackup_backup_func calls xb_set_max_open_files, a uint;
// mariabackup alike). Both tools
// open every InnoDB tablespace at the start of a backup (and --prepare opens
// those the redo touches, up to all of them), so a tablet with
// more tablespaces than a login's soft limit (1024 under runuser/PAM) would
// fail with "Too many open files"; a hard limit too low for the tablespaces
// in dataDir (the data directory, or a restore's staging) is an error
// before the tool starts.
func toolOpenFiles(dataDir string) (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, nil // not knowable here: leave the tool's default
	}
	return checkOpenFiles(dataDir, countTablespaces(dataDir), rl.Max)
}

func checkOpenFiles(dataDir string, tablespaces int, hard uint64) (uint64, error) {
	if need := uint64(tablespaces + openFilesSlack); hard < need {
		return 0, unreadable.Host(errtext.Errorf(vtrpcpb.Code_FAILED_PRECONDITION,
			"the backup tool needs about %d open files (%d InnoDB tablespaces in %s, and %d more), but this process's hard limit of open files is %d: raise "+
				"it (ulimit -Hn, LimitNOFILE= in the service unit, the container's nofile ulimit)",
			need, tablespaces, dataDir, openFilesSlack, hard), "its limit of open files is too low")
	}
	return min(hard, 1<<30), nil
}

// countTablespaces counts the .ibd files in dataDir and its database
// directories (file-per-table, partitions, general tablespaces).
func countTablespaces(dataDir string) int {
	n := 0
	entries, _ := os.ReadDir(dataDir)
	for _, e := range entries {
		if !e.IsDir() {
			if strings.HasSuffix(e.Name(), ".ibd") {
				n++
			}
			continue
		}
		sub, _ := os.ReadDir(filepath.Join(dataDir, e.Name()))
		for _, f := range sub {
			if strings.HasSuffix(f.Name(), ".ibd") {
				n++
			}
		}
	}
	return n
}
