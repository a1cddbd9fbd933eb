package fifobackupengine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestToolPipeSize(t *testing.T) {
	assert.Equal(t, 1<<20, ToolPipeSize(1), "stdout")
	assert.Equal(t, 1<<20, ToolPipeSize(16))
	assert.Equal(t, 512<<10, ToolPipeSize(32))
	assert.Equal(t, 256<<10, ToolPipeSize(64))
	assert.Equal(t, 64<<10, ToolPipeSize(1000), "never under the kernel's default")
	assert.Equal(t, 1<<20, ToolPipeSize(0))
}

// assertGrown checks that a pipe asked for size holds it where this host
// lets a process grow a pipe that far (/proc/sys/fs/pipe-max-size), and
// otherwise keeps the kernel's 64 KiB: growing is best effort, never an
// error (a privileged process may still get size).
func assertGrown(t *testing.T, f *os.File, size int) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	require.NoError(t, err)
	var maxSize int
	_, err = fmt.Sscan(string(b), &maxSize)
	require.NoError(t, err)
	if got := pipeSize(t, f); size <= maxSize {
		assert.Equal(t, size, got)
	} else {
		assert.Contains(t, []int{64 << 10, size}, got, "pipe-max-size %d is under %d", maxSize, size)
	}
}

func pipeSize(t *testing.T, f *os.File) int {
	raw, err := f.SyscallConn()
	require.NoError(t, err)
	var size int
	require.NoError(t, raw.Control(func(fd uintptr) { size, err = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) }))
	require.NoError(t, err)
	return size
}

// The tool's stdout pipe is grown through its write end, and its read end
// stays on Go's poller: SplitStreams' deadlines still interrupt a read.
func TestToolStdoutPipeIsGrownAndInterruptible(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	growPipe(w.Fd(), ToolPipeSize(1))
	assertGrown(t, r, ToolPipeSize(1))

	require.NoError(t, r.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = r.Read(make([]byte, 1))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

// A FIFO the tool created is grown to its share when the engine opens it.
func TestToolFIFOIsGrown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "thread_0")
	require.NoError(t, unix.Mkfifo(path, 0o600))
	w := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			_, _ = f.Write([]byte{'X'})
		}
		w <- f
	}()
	want := ToolPipeSize(64)
	f, err := openFIFO(context.Background(), path, want, make(chan struct{}), make(chan struct{}))
	require.NoError(t, err)
	defer f.Close()
	if wf := <-w; wf != nil {
		defer wf.Close()
	}
	assertGrown(t, f, want)
}
