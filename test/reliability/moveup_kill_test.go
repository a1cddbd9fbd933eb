package reliability

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestKillDuringTheMoveUp: vtfifo restore --target-dir writes the files in
// a subdirectory of its own and, once they are whole, moves them up into
// the directory. SIGKILLed as the first entry arrives there (the source
// has 1000 databases: the moves outlast the kill), it leaves some entries
// moved up and the others not. Run again into the directory, beside a file
// an operator put there since, it refuses (exit 2) and tells the stopped
// restore's entries (its mark, its subdirectory, each entry it had moved
// up) from that file, which it says to keep; removing what it names leaves
// only that file. (An earlier version said only that some of the other
// entries were the restore's.)
func TestKillDuringTheMoveUp(t *testing.T) {
	f := newFixture(t)
	f.useStorage(t, splitstoragetest.Local(t).Config)
	for i := range 1000 {
		f.srv.Exec(t, fmt.Sprintf("CREATE DATABASE many_%03d", i))
	}
	require.NoError(t, f.backup(context.Background(), nil))

	// The kill races the moves (about 1,010 renames): on a busy host it may
	// come after the last, which leaves a whole restore; then again.
	var dir string
	for attempt := 1; ; attempt++ {
		dir = filepath.Join(t.TempDir(), "target")
		require.NoError(t, os.Mkdir(dir, 0o750))
		if killAtFirstMoveUp(t, f, dir) {
			break
		}
		t.Logf("attempt %d: the kill came after the restore's end", attempt)
		require.Less(t, attempt, 5, "the kill never came before the restore's end")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "operator-notes"), []byte("mine"), 0o640))

	var movedUp []string
	for _, e := range dirEntries(t, dir) {
		if !strings.HasPrefix(e, ".vtfifo-restoring") && e != "operator-notes" {
			movedUp = append(movedUp, e)
		}
	}
	t.Logf("killed with %d entries moved up", len(movedUp))
	require.NotEmpty(t, movedUp)

	code, stdout, stderr := runVtfifo(t, f.cfg, "restore", "--target-dir="+dir, "--progress=never")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	var own []string
	for _, e := range []string{".vtfifo-restoring.d", ".vtfifo-restoring"} {
		if _, err := os.Lstat(filepath.Join(dir, e)); err == nil {
			own = append(own, filepath.Join(dir, e))
		}
	}
	advice := regexp.MustCompile("^vtfifo restore: --target-dir " + regexp.QuoteMeta(dir) + " is not empty: a restore never writes over " +
		`files; it holds what a restore stopped before it finished left there \(pid \d+ on [^,]+, gone\): no whole restore; remove what ` +
		`it left \(rm -rf ` + regexp.QuoteMeta(strings.Join(own, " ")) + `, and the (\d+ entries|entry) it had moved up \(([^)]*)\), each ` +
		`still the very one it moved\) and restore again, or give another directory; the other entry there \(operator-notes\) is not ` +
		`that restore's: keep it\n$`).FindStringSubmatch(stderr)
	require.NotNil(t, advice, stderr)
	listed := strings.Split(strings.TrimSuffix(advice[2], fmt.Sprintf(" and %d more", len(movedUp)-5)), ", ")
	assert.Equal(t, movedUp[:min(5, len(movedUp))], listed, "the entries it names are the ones it moved up")
	if len(movedUp) > 1 {
		assert.Equal(t, fmt.Sprintf("%d entries", len(movedUp)), advice[1])
	}

	// What it names goes; the operator's file stays.
	for _, e := range append(movedUp, ".vtfifo-restoring.d", ".vtfifo-restoring") {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, e)))
	}
	assert.Equal(t, []string{"operator-notes"}, dirEntries(t, dir))
}

// killAtFirstMoveUp runs vtfifo restore into dir and SIGKILLs it as the
// first of its files arrives in dir (inotify: moved to dir, other than the
// restore's mark), and says whether the kill stopped it before its end (its
// mark, the last thing it removes, is still there).
func killAtFirstMoveUp(t *testing.T, f *fixture, dir string) (stopped bool) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	require.NoError(t, err)
	defer unix.Close(fd)
	_, err = unix.InotifyAddWatch(fd, dir, unix.IN_MOVED_TO)
	require.NoError(t, err)

	argv := append([]string{"restore", "--backup-storage-implementation=split", "--keyspace=" + keyspace, "--shard=" + shard,
		"--target-dir=" + dir, "--progress=never"}, f.cfg.Args()...)
	cmd := exec.Command(vtfifoBin, argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for !movedUp(t, fd) {
		select {
		case err := <-done:
			t.Fatalf("the restore ended before it moved a file up (%v):\n%s", err, out.String())
		default:
		}
	}
	require.NoError(t, cmd.Process.Kill())
	<-done
	_, err = os.Lstat(filepath.Join(dir, ".vtfifo-restoring"))
	return err == nil
}

// movedUp waits up to 50 ms for inotify events, and says whether one was
// of an entry, other than the restore's mark, moved into the watched
// directory.
func movedUp(t *testing.T, fd int) bool {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 50); n <= 0 || err != nil {
		return false
	}
	buf := make([]byte, 64*1024)
	n, err := unix.Read(fd, buf)
	require.NoError(t, err)
	for off := 0; off+unix.SizeofInotifyEvent <= n; {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
		off += unix.SizeofInotifyEvent + int(ev.Len)
		if name != ".vtfifo-restoring" {
			return true
		}
	}
	return false
}
