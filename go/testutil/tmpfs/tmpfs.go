// Package tmpfs gives a test a small file system of its own to fill: the
// disk-full tests of the restore and of the table import.
package tmpfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Mount mounts a tmpfs of size bytes on a fresh directory under the system's
// temp dir (mode 0755: the mysql user traverses it), unmounted by a cleanup
// registered now, so that it runs after every cleanup registered later (call
// it before starting anything that writes there). Mounting needs root with
// CAP_SYS_ADMIN: without it the test fails under VTFIFO_E2E=require (make
// test, CI), and is skipped otherwise (a developer's go test as a plain
// user), saying why, as test/endtoend's helpers do.
func Mount(t *testing.T, size int64) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		_ = os.Remove(dir)
		msg := fmt.Sprintf("cannot mount a tmpfs on %s (needs root with CAP_SYS_ADMIN): %v", dir, err)
		if os.Getenv("VTFIFO_E2E") == "require" {
			t.Fatal(msg)
		}
		t.Skipf("%s (set VTFIFO_E2E=require to fail instead)", msg)
	}
	t.Cleanup(func() {
		// A mysqld killed by a cleanup may take a moment to go.
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if err = syscall.Unmount(dir, 0); err == nil || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Errorf("unmounting the tmpfs %s: %v (in use by %s); detaching it", dir, err, usersOf(dir))
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
		_ = os.Remove(dir)
	})
	return dir
}

// Resize sets the size of the tmpfs Mount put on dir (bytes).
func Resize(dir string, size int64) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, fmt.Sprintf("size=%d", size)); err != nil {
		return fmt.Errorf("remount %s with size=%d: %w", dir, size, err)
	}
	return nil
}

// usersOf names the processes with a file, or their working directory,
// under dir (from /proc), for the message of a mount still busy.
func usersOf(dir string) string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		links, _ := filepath.Glob(filepath.Join(p, "fd", "*"))
		for _, l := range append(links, filepath.Join(p, "cwd")) {
			if target, err := os.Readlink(l); err == nil && (target == dir || strings.HasPrefix(target, dir+"/")) {
				comm, _ := os.ReadFile(filepath.Join(p, "comm"))
				out = append(out, fmt.Sprintf("%s (pid %s): %s", strings.TrimSpace(string(comm)), filepath.Base(p), target))
				break
			}
		}
	}
	if len(out) == 0 {
		return "no process with a file open there"
	}
	return strings.Join(out, "; ")
}
