package reliability

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// proc is one backupproc run (its own process group, so whatever it started,
// mariabackup included, can be cleaned up by group id).
type proc struct {
	cmd    *exec.Cmd
	out    *bytes.Buffer
	done   chan error
	pgid   int
	phases chan string
}

func startProc(t *testing.T, f *fixture, mode string, more ...string) *proc {
	args := append([]string{"--mode=" + mode, "--tablet-uid=" + strconv.Itoa(int(f.tb.UID)), "--keyspace=" + keyspace, "--shard=" + shard,
		"--fifo-backup-lanes=3", "--fifo-backup-source=stdout", "--fifo-backup-parallel=2", "--fifo-backup-use-memory=64MiB",
		"--fifo-backup-progress-interval=0"}, f.cfg.Args()...)
	args = append(args, more...) // the last of a flag wins
	cmd := exec.Command(backupprocBin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Vitess writes temporary client option files (defaults-extra-file-*)
	// that a killed process leaves behind: they go to the test's directory.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	p := &proc{cmd: cmd, out: &bytes.Buffer{}, done: make(chan error, 1), phases: make(chan string, 4)}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = p.out
	require.NoError(t, cmd.Start())
	p.pgid = cmd.Process.Pid
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if ph, ok := strings.CutPrefix(s.Text(), "phase: "); ok {
				p.phases <- ph
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = syscall.Kill(-p.pgid, syscall.SIGKILL) })
	return p
}

// killAfter SIGKILLs the process d after it said "phase: start" (or lets it
// finish if it ends first); it reports whether the kill landed.
func (p *proc) killAfter(t *testing.T, d time.Duration, group bool) bool {
	select {
	case <-p.phases:
	case err := <-p.done:
		t.Fatalf("backupproc ended before starting: %v\n%s", err, p.out)
	}
	select {
	case err := <-p.done:
		p.done <- err
		return false
	case <-time.After(d):
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	<-p.done
	if group {
		// Backup: the tool it ran (mariabackup) is its child in the same
		// process group; end it now rather than leave it to its broken pipe.
		// (Restore: not done, the mysqld it may have started must live on,
		// as it does when vttablet is killed.)
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	}
	return true
}

// TestKillDuringBackup: the process taking the backup (backupproc, which
// runs mysqlctl.Backup with the fifo engine and split storage, as vttablet
// does) is SIGKILLed at random moments. After each kill: no new backup is
// listed (restore cannot pick it), the older one is intact; after all kills
// the next backup succeeds and restores the source data, and
// fifoverify --remove-incomplete removes every leftover.
// RELIABILITY_KILL_TRIALS sets the number of kills (default 10).
func TestKillDuringBackup(t *testing.T) {
	n := trials(t, "RELIABILITY_KILL_TRIALS", 10)
	f := newFixture(t)
	cfg := splitstoragetest.Local(t).Config
	cfg.PartSize = 1 << 20
	f.useStorage(t, cfg)
	ctx := context.Background()

	// One complete backup first, timed, to place the kills inside a backup.
	p := startProc(t, f, "backup")
	start := time.Now()
	require.NoError(t, <-p.done, "first backup:\n%s", p.out)
	full := time.Since(start)
	older := f.list(t)
	require.Len(t, older, 1)
	t.Logf("a whole backup by backupproc takes %v", full.Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	killed, completedAnyway := 0, 0
	// n kills that land inside a backup (a backup that ends before its kill
	// moment does not count), at most 2n attempts.
	for i := 0; killed < n && i < 2*n; i++ {
		d := time.Duration(rng.Int64N(int64(full * 8 / 10)))
		p := startProc(t, f, "backup")
		landed := p.killAfter(t, d, true)
		names := f.list(t)
		inc, err := f.st.ListIncomplete(ctx, backupDir)
		require.NoError(t, err)
		if landed {
			killed++
		}
		if len(names) > len(older) {
			// The backup completed before the kill reached the process (after
			// its completion marker): it must then be whole and good.
			require.Len(t, names, len(older)+1)
			code, out := runVerify(t, cfg, nil, "--backup="+names[len(names)-1])
			require.Equal(t, 0, code, "kill %d at %v: a listed backup must be complete and good:\n%s", i+1, d, out)
			completedAnyway++
		}
		assert.Equal(t, older, names[:len(older)], "older backups untouched")
		older = names
		t.Logf("attempt %d, kill %d/%d at %v (landed %v): listed %d, incomplete %d", i+1, killed, n, d.Round(time.Millisecond), landed, len(names), len(inc))
		// mysqld is not affected by the kill of the process backing it up.
		require.True(t, f.mysqldRunning(), "mysqld must keep running")
		// Sleep a second: backup names have 1 s resolution.
		time.Sleep(time.Second)
	}
	require.Equal(t, n, killed, "kills that landed inside a backup")

	// The next backup succeeds, and the latest backup restores the source.
	require.NoError(t, f.backup(ctx, nil))
	_, err := f.restore(ctx, nil)
	require.NoError(t, err)
	f.requireSourceData(t, "restore after the killed backups")

	inc, err := f.st.ListIncomplete(ctx, backupDir)
	require.NoError(t, err)
	t.Logf("%d kills inside a backup; %d backups completed before their kill moment and fifoverify found them good; %d incomplete backups left", killed,
		completedAnyway, len(inc))
	code, out := runVerify(t, cfg, nil, "--remove-incomplete", "--incomplete-min-age=0s")
	require.Equal(t, 0, code, out)
	inc, err = f.st.ListIncomplete(ctx, backupDir)
	require.NoError(t, err)
	assert.Empty(t, inc)
	// The killed backups' work directories in the tablet's tmp dir were
	// removed by the next backup (their owner process is gone).
	leftovers, _ := filepath.Glob(filepath.Join(f.tb.Cnf.TmpDir, "fifo-*"))
	assert.Empty(t, leftovers, "temporary files left behind")
}

// TestAKilledFIFOBackupLeavesNothingForTheNext: a backup through the tool's
// FIFO streams (the xtrabackup stand-in) into --fifo-backup-fifo-dir set to
// the tablet's tmp dir, where the work directories are made too, is SIGKILLed
// (with the tool) once the tool has made its FIFOs: they stay behind, and the
// next backup through the same directory succeeds and removes them, their
// directory and its owner record; an operator's file there stays.
func TestAKilledFIFOBackupLeavesNothingForTheNext(t *testing.T) {
	f := newFixture(t)
	f.useStorage(t, splitstoragetest.Local(t).Config)
	dir := f.tb.Cnf.TmpDir
	operators := filepath.Join(dir, "fifo-streams-notes")
	require.NoError(t, os.WriteFile(operators, []byte("an operator's"), 0o600))
	fifo := []string{"--fifo-backup-source=fifo", "--fifo-backup-tool-path=" + standinBin, "--fifo-backup-fifo-dir=" + dir,
		"--fifo-backup-fifo-streams=3"}
	ours := func() []string {
		m, err := filepath.Glob(filepath.Join(dir, "fifo-*"))
		require.NoError(t, err)
		return slices.DeleteFunc(m, func(p string) bool { return p == operators })
	}

	p := startProc(t, f, "backup", fifo...)
	var fifos []string
	for deadline := time.Now().Add(time.Minute); len(fifos) < 3; time.Sleep(5 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the tool never made its FIFOs:\n%s", p.out)
		select {
		case err := <-p.done:
			t.Fatalf("the backup ended (%v) before the tool made its FIFOs:\n%s", err, p.out)
		default:
		}
		var err error
		fifos, err = filepath.Glob(filepath.Join(dir, "fifo-streams-*", "thread_*"))
		require.NoError(t, err)
	}
	require.NoError(t, syscall.Kill(-p.pgid, syscall.SIGKILL))
	<-p.done
	left := ours()
	require.NotEmpty(t, left, "the killed backup left its work and FIFO directories")
	for _, path := range fifos {
		st, err := os.Lstat(path)
		require.NoError(t, err, "the killed backup's FIFOs stay until the next backup")
		require.NotZero(t, st.Mode()&os.ModeNamedPipe, path)
	}

	time.Sleep(time.Second) // backup names have 1 s resolution
	next := startProc(t, f, "backup", fifo...)
	require.NoError(t, <-next.done, "the next backup through the same directory:\n%s", next.out)
	assert.Len(t, f.list(t), 1)
	assert.Empty(t, ours(), "the next backup removed the killed one's FIFOs, and its own")
	got, err := os.ReadFile(operators)
	require.NoError(t, err)
	assert.Equal(t, "an operator's", string(got))
	assert.Contains(t, next.out.String(), "left by a run whose process")
}

// TestKillDuringRestore: the process restoring (backupproc) is SIGKILLed at
// random moments of a restore; restore_in_progress marks the interrupted
// restore, and running the restore again succeeds with the source data
// (Vitess's restore_in_progress contract). RELIABILITY_RESTORE_KILL_TRIALS
// sets the number (default 3).
func TestKillDuringRestore(t *testing.T) {
	n := trials(t, "RELIABILITY_RESTORE_KILL_TRIALS", 3)
	f := newFixture(t)
	cfg := splitstoragetest.Local(t).Config
	cfg.PartSize = 1 << 20
	f.useStorage(t, cfg)
	ctx := context.Background()
	require.NoError(t, f.backup(ctx, nil))

	p := startProc(t, f, "restore")
	start := time.Now()
	require.NoError(t, <-p.done, "first restore:\n%s", p.out)
	full := time.Since(start)
	f.srv = nil
	t.Logf("a whole restore by backupproc takes %v", full.Round(time.Millisecond))

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	for i := range n {
		d := time.Duration(rng.Int64N(int64(full)))
		p := startProc(t, f, "restore")
		landed := p.killAfter(t, d, false)
		_, statErr := os.Stat(filepath.Join(f.tb.Cnf.TabletDir(), mysqlctl.RestoreState))
		t.Logf("kill %d/%d at %v (landed %v): restore_in_progress present: %v, mysqld running: %v", i+1, n, d.Round(time.Millisecond), landed,
			statErr == nil, f.mysqldRunning())
		_, err := f.restore(ctx, nil)
		require.NoError(t, err, "kill %d: the restore run again must succeed", i+1)
		f.requireSourceData(t, fmt.Sprintf("restore after kill %d", i+1))
		_, statErr = os.Stat(filepath.Join(f.tb.Cnf.TabletDir(), mysqlctl.RestoreState))
		assert.True(t, os.IsNotExist(statErr), "restore_in_progress removed after the successful restore")
	}
}

// TestKillDuringRestoreChild: the restoring process is SIGKILLed while a
// child it started runs, then the restore is run again and must succeed with
// the source data.
//   - the tool's --prepare, working on the staging directory: it must die with
//     its parent (one left running would write into the next restore's files).
//     It is stopped (SIGSTOP) before the kill so that it cannot finish first.
//     Here two things end it: PR_SET_PDEATHSIG, and the SIGHUP the kernel
//     sends a stopped process whose process group the kill orphans. So this
//     case proves the next restore is safe; TestToolDiesWithParent, in the
//     engine's package, is what proves the death signal alone.
//   - mysqld_safe starting mysqld after the files moved into place (Vitess's
//     restore does it): it outlives the kill, as mysqld does when vttablet is
//     killed, and the next restore must stop it before it deletes the files
//     (no pid file nor socket exists yet while it starts).
func TestKillDuringRestoreChild(t *testing.T) {
	f := newFixture(t)
	cfg := splitstoragetest.Local(t).Config
	f.useStorage(t, cfg)
	ctx := context.Background()
	require.NoError(t, f.backup(ctx, nil))

	for _, tc := range []struct {
		name, prog, arg string
		diesWithIt      bool
	}{
		{"prepare", "mariabackup", "--prepare", true},
		{"mysqld starting", "mariadbd", "--skip-grant-tables", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startProc(t, f, "restore")
			select {
			case <-p.phases:
			case err := <-p.done:
				t.Fatalf("backupproc ended before starting: %v\n%s", err, p.out)
			}
			child := waitForChild(t, p, tc.prog, tc.arg)
			if tc.diesWithIt {
				require.NoError(t, syscall.Kill(child, syscall.SIGSTOP))
			}
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
			<-p.done
			if tc.diesWithIt {
				require.Eventually(t, func() bool { return !processAlive(child) }, 10*time.Second, 20*time.Millisecond,
					"the child with %s (pid %d) must end with the process that ran it", tc.arg, child)
			}
			_, err := f.restore(ctx, nil)
			require.NoError(t, err, "the restore run again must succeed")
			f.requireSourceData(t, "restore after the kill")
		})
	}
}

// waitForChild returns the pid of the process prog descended from p whose
// argv has arg, once it runs (failing the test if p ends first). Descended,
// not of p's process group: the engine starts the tool in a group of its own.
func waitForChild(t *testing.T, p *proc, prog, arg string) int {
	t.Helper()
	for {
		if pid := findDescendant(p.pgid, prog, arg); pid > 0 {
			return pid
		}
		select {
		case err := <-p.done:
			t.Fatalf("backupproc ended (%v) before %s %s ran:\n%s", err, prog, arg, p.out)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// findDescendant scans /proc for a live process prog descended from root
// with arg in its argv.
func findDescendant(root int, prog, arg string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !descendsFrom(pid, root) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(string(cmdline), "\x00")
		if filepath.Base(argv[0]) == prog && slices.Contains(argv, arg) && processAlive(pid) {
			return pid
		}
	}
	return 0
}

// descendsFrom follows pid's parents (/proc/PID/stat, the field after the
// state) up to root or init.
func descendsFrom(pid, root int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == root {
			return true
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		s := string(stat)
		j := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[j+1:])
		if j < 0 || len(f) < 2 {
			return false
		}
		if pid, err = strconv.Atoi(f[1]); err != nil {
			return false
		}
	}
	return false
}

// processAlive: a zombie (exited, not yet reaped) counts as gone.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}
