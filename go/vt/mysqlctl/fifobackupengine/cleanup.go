package fifobackupengine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"vitess.io/vitess/go/vt/logutil"
)

// workDirPrefix names a backup's work directory under the tablet's tmp dir.
const workDirPrefix = "fifo-backup-"

// ownerSuffix names the file beside a work directory (outside it: the tool
// owns the directory's content) that holds the pid of the process using it.
const ownerSuffix = ".owner"

// claimWorkDir records this process as the owner of dir; the returned func
// removes the record.
func claimWorkDir(dir string) (func(), error) {
	f := dir + ownerSuffix
	if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return func() {}, err
	}
	return func() { _ = os.Remove(f) }, nil
}

// removeStaleWorkDirs removes the work directories under tmpDir left by
// backups whose process died without cleaning up (SIGKILL, OOM kill, power
// loss): those whose owner pid is not a live process. A directory without
// an owner file, or whose owner lives, is left alone.
func removeStaleWorkDirs(tmpDir string, logger logutil.Logger) {
	entries, err := os.ReadDir(tmpDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), workDirPrefix) {
			continue
		}
		dir := filepath.Join(tmpDir, e.Name())
		b, err := os.ReadFile(dir + ownerSuffix)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			logger.Warningf("fifo backup: cannot remove %s left by dead process %d: %v", dir, pid, err)
			continue
		}
		_ = os.Remove(dir + ownerSuffix)
		logger.Infof("fifo backup: removed %s left by a backup whose process (%d) is gone", dir, pid)
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// waitMysqldGone waits until the mysqld named by pidFile has exited. Vitess's
// Mysqld.Shutdown returns at once when the socket is gone, but a mysqld still
// in its shutdown (after a crash of the process that stopped it, e.g. a
// killed restore) removes its socket first and keeps writing its files until
// it exits: deleting the data directory under it then fails ("directory not
// empty") or races with it.
func waitMysqldGone(ctx context.Context, pidFile string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = time.Minute
	}
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return nil // no pid file: mysqld removed it on exit, or never ran
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || !processAlive(pid) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mysqld (pid %d in %s) is still running %v after it was asked to shut down", pid, pidFile, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
