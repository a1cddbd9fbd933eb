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
)

// newCommand is exec.CommandContext for every program the engine runs (the
// tool, external compressors): never through a shell, and ended with this
// process where the system allows it (dieWithParent), so that a backup or
// restore process killed by SIGKILL or the OOM killer leaves no tool running
// on files that the next attempt reuses.
func newCommand(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	dieWithParent(cmd)
	return cmd
}

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
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return p, false
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses.
	if i := strings.LastIndexByte(string(stat), ')'); i < 0 || len(stat) < i+3 || stat[i+2] == 'Z' {
		return p, false
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
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
