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

func startProc(t *testing.T, f *fixture, mode string) *proc {
	args := append([]string{"--mode=" + mode, "--tablet-uid=" + strconv.Itoa(int(f.tb.UID)), "--keyspace=" + keyspace, "--shard=" + shard,
		"--fifo-backup-lanes=3", "--fifo-backup-source=stdout", "--fifo-backup-parallel=2", "--fifo-backup-use-memory=64MiB",
		"--fifo-backup-progress-interval=0"}, splitstoragetest.Flags(f.cfg)...)
	cmd := exec.Command(backupprocBin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
func (p *proc) killAfter(t *testing.T, d time.Duration) bool {
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
	// The kill is of the backup process only; the tool it ran (mariabackup)
	// is its child in the same process group: end it as a crash would leave
	// it to its broken pipe.
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
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
	killed := 0
	for i := range n {
		d := time.Duration(rng.Int64N(int64(full)))
		p := startProc(t, f, "backup")
		landed := p.killAfter(t, d)
		names := f.list(t)
		inc, err := f.st.ListIncomplete(ctx, backupDir)
		require.NoError(t, err)
		if landed {
			killed++
			assert.Equal(t, older, names, "kill %d at %v: no backup from the killed process may be listed", i+1, d)
		} else {
			// It finished before the kill: a complete backup is fine.
			older = names
		}
		t.Logf("kill %d/%d at %v (landed %v): listed %d, incomplete %d", i+1, n, d.Round(time.Millisecond), landed, len(names), len(inc))
		// mysqld is not affected by the kill of the process backing it up.
		require.True(t, f.mysqldRunning(), "mysqld must keep running")
		// Sleep a second: backup names have 1 s resolution.
		time.Sleep(time.Second)
	}
	assert.Greater(t, killed, n/2, "most kills must land inside a backup")

	// The next backup succeeds, and the latest backup restores the source.
	require.NoError(t, f.backup(ctx, nil))
	_, err := f.restore(ctx, nil)
	require.NoError(t, err)
	f.requireSourceData(t, "restore after the killed backups")

	inc, err := f.st.ListIncomplete(ctx, backupDir)
	require.NoError(t, err)
	t.Logf("%d incomplete backups left by %d kills", len(inc), killed)
	code, out := runVerify(t, cfg, nil, "--remove-incomplete", "--incomplete-min-age=0s")
	require.Equal(t, 0, code, out)
	inc, err = f.st.ListIncomplete(ctx, backupDir)
	require.NoError(t, err)
	assert.Empty(t, inc)
	// Nothing of the killed backups is left in the tablet's directories
	// either (stdout source: the engine makes no FIFO directory).
	leftovers, _ := filepath.Glob(filepath.Join(f.tb.Cnf.TmpDir, "fifo-*"))
	assert.Empty(t, leftovers, "temporary files left behind")
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
		landed := p.killAfter(t, d)
		_, statErr := os.Stat(filepath.Join(f.tb.Cnf.TabletDir(), mysqlctl.RestoreState))
		t.Logf("kill %d/%d at %v (landed %v): restore_in_progress present: %v, mysqld running: %v", i+1, n, d.Round(time.Millisecond), landed, statErr == nil, f.mysqldRunning())
		_, err := f.restore(ctx, nil)
		require.NoError(t, err, "kill %d: the restore run again must succeed", i+1)
		f.requireSourceData(t, fmt.Sprintf("restore after kill %d", i+1))
		_, statErr = os.Stat(filepath.Join(f.tb.Cnf.TabletDir(), mysqlctl.RestoreState))
		assert.True(t, os.IsNotExist(statErr), "restore_in_progress removed after the successful restore")
	}
}
