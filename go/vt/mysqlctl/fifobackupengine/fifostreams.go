package fifobackupengine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vtfifo/vtfifo/go/xbstream"
)

// readFIFOs reads the tool's FIFO streams concurrently and deals their chunks
// to the lanes by bytes: Percona XtraBackup deals whole files to its streams
// round-robin at file open (ds_xbstream.cc, xbstream_open), so the streams are
// as unbalanced as the files, and the lanes should not be.
//
// The protocol follows PXB's ds_fifo.cc and file_utils.cc: the tool creates
// fifoDir/thread_0 .. thread_{N-1} only after it has connected, taken LOCK
// INSTANCE FOR BACKUP and started the redo reader, then opens them for
// writing one after another, each with its own --fifo-timeout, and writes one
// control byte into each before any data.
func (b *backupRun) readFIFOs(ctx context.Context, fifoDir string, toolDone <-chan struct{}) error {
	n := b.cfg.streams()
	b.streamBytes = make([]atomic.Int64, n)
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(fifoDir, fmt.Sprintf("thread_%d", i))
	}
	if err := b.waitForFIFOs(ctx, fifoDir, paths, toolDone); err != nil {
		return err
	}
	// Each stream is opened by its own reader in SplitStreams, so that one
	// waiting for the tool's first write never holds up another: the tool
	// writes into one FIFO at a time, and without a control byte a FIFO
	// shows no input until the tool reaches it.
	streams := make([]*fifoStream, n)
	srcs := make([]io.Reader, n)
	for i, path := range paths {
		streams[i] = &fifoStream{path: path, pipeSize: ToolPipeSize(n), ctx: ctx, toolDone: toolDone, stop: make(chan struct{})}
		srcs[i] = b.meteredSource(streams[i], streams[i], &b.streamBytes[i])
	}
	defer func() {
		for _, s := range streams {
			s.close()
		}
	}()
	return b.split(ctx, srcs, fmt.Sprintf("dealing the tool's %d FIFO streams into %d lanes", n, len(b.lanes)))
}

// waitForFIFOs waits until the tool has created every FIFO. That happens
// after the tool has connected and taken its backup lock, which can wait on a
// long DDL for as long as the tool's own lock timeout: the engine sets no
// bound of its own, says what it waits for, and stops when the tool exits.
func (b *backupRun) waitForFIFOs(ctx context.Context, fifoDir string, paths []string, toolDone <-chan struct{}) error {
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	nextLog := 30 * time.Second
	for _, path := range paths {
		for {
			st, err := os.Lstat(path)
			if err == nil {
				if st.Mode()&fs.ModeNamedPipe == 0 {
					return fmt.Errorf("%s is not a FIFO", path)
				}
				break
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-toolDone:
				return fmt.Errorf("the backup tool exited before creating its FIFO %s (it creates them after connecting to MySQL and taking LOCK INSTANCE "+
					"FOR BACKUP)", path)
			case <-tick.C:
			}
			if waited := time.Since(start); waited >= nextLog {
				b.logger.Infof("fifo backup: waited %v for %s to create its FIFOs in %s; it does so after connecting to MySQL and taking LOCK INSTANCE FOR "+
					"BACKUP (a long DDL delays it)", waited.Round(time.Second), b.tool.Flavor, fifoDir)
				nextLog += 30 * time.Second
			}
		}
	}
	return nil
}

// openFIFO opens a FIFO the tool created for reading and waits until the
// tool has opened its write end, as Percona's own reader does
// (file_utils.cc, open_fifo_for_read_with_timeout: a non-blocking open, then
// a wait for input). The open itself never blocks, so nothing is left
// waiting on a FIFO the tool unlinked when it failed (ds_fifo.cc,
// cleanup_on_error): the wait ends when the tool writes (its control byte) or
// closes its end, when the tool exits, or when ctx ends.
func openFIFO(ctx context.Context, path string, pipeSize int, toolDone, stop <-chan struct{}) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is not a FIFO", path)
	}
	growPipe(uintptr(fd), pipeSize)
	// Until a writer has come, Linux reports neither input nor a hang-up on a
	// FIFO opened this way (pipe_poll): the first event is the tool's.
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, 100)
		if err != nil && !errors.Is(err, unix.EINTR) {
			unix.Close(fd)
			return nil, &fs.PathError{Op: "poll", Path: path, Err: err}
		}
		if n > 0 {
			// Non-blocking: reads go through Go's poller, so SplitStreams can
			// interrupt them with a read deadline.
			return os.NewFile(uintptr(fd), path), nil
		}
		select {
		case <-ctx.Done():
			unix.Close(fd)
			return nil, ctx.Err()
		case <-stop:
			unix.Close(fd)
			return nil, fmt.Errorf("FIFO %s: interrupted before the tool wrote into it", path)
		case <-toolDone:
			unix.Close(fd)
			return nil, fmt.Errorf("the backup tool exited without opening its FIFO %s", path)
		default:
		}
	}
}

// controlByteBuffer holds the control byte and the chunk magic after it
// (bufio's least size).
const controlByteBuffer = 16

// fifoStream is one of the tool's FIFO streams: its first Read opens it
// (openFIFO, waiting for the tool) and takes the control byte off
// (skipControlByte). SetReadDeadline interrupts the wait or the reads.
type fifoStream struct {
	path     string
	pipeSize int // the capacity asked of the FIFO (ToolPipeSize)
	ctx      context.Context
	toolDone <-chan struct{}
	stop     chan struct{} // closed by SetReadDeadline while the FIFO is not open

	mu       sync.Mutex
	f        *os.File
	stopOnce sync.Once
	br       *bufio.Reader
	err      error
}

func (s *fifoStream) Read(p []byte) (int, error) {
	if s.f == nil && s.err == nil {
		f, err := openFIFO(s.ctx, s.path, s.pipeSize, s.toolDone, s.stop)
		s.mu.Lock()
		s.f, s.err = f, err
		if f != nil {
			select {
			case <-s.stop: // interrupted while it opened
				_ = f.SetReadDeadline(time.Now())
			default:
			}
		}
		s.mu.Unlock()
	}
	if s.br == nil && s.err == nil {
		s.br, s.err = skipControlByte(s.f, s.path)
	}
	if s.err != nil {
		return 0, s.err
	}
	return s.br.Read(p)
}

// SetReadDeadline interrupts a Read: the open's wait, or the reads.
func (s *fifoStream) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		return s.f.SetReadDeadline(t)
	}
	s.stopOnce.Do(func() { close(s.stop) })
	return nil
}

func (s *fifoStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
	}
}

// skipControlByte consumes the one byte Percona XtraBackup writes into each
// FIFO right after opening it, before any xbstream data
// (open_fifo_for_write_with_timeout in file_utils.cc; its own reader,
// open_fifo_for_read_with_timeout, reads and compares it). The byte's value
// is defined in a header this project could not read, so the engine checks
// what it can: one byte, then the chunk magic or the end of the stream. A
// stream that starts with the magic itself has no control byte; it is
// accepted, since nothing of it is lost.
//
// The reader it returns buffers only those first bytes: the splitter reads
// through a buffer of its own, and reads as large as it asks go straight
// through this one (a second buffer of 1 MiB copied every byte once more).
func skipControlByte(f *os.File, path string) (*bufio.Reader, error) {
	br := bufio.NewReaderSize(f, controlByteBuffer)
	head, err := br.Peek(1 + len(xbstream.Magic))
	switch {
	case len(head) >= len(xbstream.Magic) && string(head[:len(xbstream.Magic)]) == xbstream.Magic:
		return br, nil // no control byte
	case len(head) == 0:
		return nil, fmt.Errorf("FIFO %s ended before Percona XtraBackup's control byte (%v)", path, err)
	case len(head) == 1 || string(head[1:]) == xbstream.Magic:
		_, _ = br.Discard(1) // the control byte, then the end or the first chunk
		return br, nil
	default:
		return nil, fmt.Errorf("FIFO %s does not start the way Percona XtraBackup's FIFO streams do (one control byte, then an xbstream chunk): its "+
			"first bytes are %q", path, head)
	}
}
