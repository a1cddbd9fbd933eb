package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vtfifo/vtfifo/go/xbstream"
)

// The stand-in's FIFO side against Percona XtraBackup's source
// (storage/innobase/xtrabackup/src). These tests pin the stand-in itself; the
// engine's side is tested through it in fifobackupengine.

// ds_fifo.cc, fifo_init: my_mkdir of the FIFO dir, one level: a missing parent
// is an error, an existing dir is fine; mkfifo(thread_i, 0600), an existing
// FIFO is an error.
func TestFIFODirOneLevel(t *testing.T) {
	base := t.TempDir()
	_, err := openFIFOs(filepath.Join(base, "missing", "fifo"), 2, 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot create FIFO directory")

	dir := filepath.Join(base, "existing")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "thread_1"), nil, 0o600))
	_, err = openFIFOs(dir, 2, 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "thread_1 already exists")
}

// ds_fifo.cc, fifo_init + file_utils.cc, open_fifo_for_write_with_timeout: the
// FIFOs are opened one after another, each retried once a second up to
// --fifo-timeout tries; with no reader it gives up after about timeout
// seconds for thread_0, and every FIFO is closed and unlinked.
func TestFIFOTimeoutUnlinksAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fifo")
	start := time.Now()
	_, err := openFIFOs(dir, 3, 2)
	elapsed := time.Since(start)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "thread_0")
	assert.GreaterOrEqual(t, elapsed, 1*time.Second, "tries once a second")
	assert.Less(t, elapsed, 10*time.Second)
	left, _ := filepath.Glob(filepath.Join(dir, "thread_*"))
	assert.Empty(t, left, "every FIFO is unlinked after a timeout")
}

// file_utils.cc, open_fifo_for_write_with_timeout: once a reader has the FIFO
// open, the fd is made blocking and one control byte goes in before any data;
// thread_1 is opened only after thread_0 (sequential opens).
func TestFIFOSequentialOpensAndControlByte(t *testing.T) {
	t.Setenv("XTRABACKUP_STANDIN_CONTROL_BYTE", "")
	dir := filepath.Join(t.TempDir(), "fifo")
	type res struct {
		outs []io.WriteCloser
		err  error
	}
	done := make(chan res, 1)
	go func() {
		outs, err := openFIFOs(dir, 2, 10)
		done <- res{outs, err}
	}()
	waitFor := func(p string) {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(p); err == nil {
				return
			}
		}
		t.Fatalf("%s never created", p)
	}
	waitFor(filepath.Join(dir, "thread_1"))
	// Open thread_1 first: the writer is still retrying thread_0, so nothing
	// arrives on thread_1 until thread_0 has a reader.
	opened1 := make(chan *os.File, 1)
	go func() {
		f, _ := os.OpenFile(filepath.Join(dir, "thread_1"), os.O_RDONLY, 0) // returns once the writer reaches thread_1
		opened1 <- f
	}()
	select {
	case <-opened1:
		t.Fatal("thread_1 was opened for writing before thread_0 had a reader")
	case <-time.After(1500 * time.Millisecond):
	}
	r0, err := os.OpenFile(filepath.Join(dir, "thread_0"), os.O_RDONLY, 0)
	require.NoError(t, err)
	r1 := <-opened1
	require.NotNil(t, r1)
	r := <-done
	require.NoError(t, r.err)
	require.Len(t, r.outs, 2)

	// Each stream: the control byte, then a plain xbstream.
	for i, rd := range []*os.File{r0, r1} {
		w := xbstream.NewWriter(r.outs[i])
		require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkPayload, Path: "f", Payload: []byte("data")}))
		require.NoError(t, r.outs[i].Close())
		got, err := io.ReadAll(rd)
		require.NoError(t, err)
		require.Greater(t, len(got), 1)
		assert.Equal(t, byte('X'), got[0], "stream %d: control byte first", i)
		assert.True(t, bytes.HasPrefix(got[1:], []byte(xbstream.Magic)), "stream %d: then a chunk", i)
		rd.Close()
	}
}

// xbstream_write.cc, xb_stream_write_data: a chunk is as large as the read
// buffer; deal merges mariabackup's smaller chunks of one file up to it and
// deals files round-robin at file open (ds_xbstream.cc, xbstream_open).
func TestDealChunksAndRoundRobin(t *testing.T) {
	var src bytes.Buffer
	w := xbstream.NewWriter(&src)
	for _, f := range []string{"a", "b", "c"} {
		for off := 0; off < 10; off++ {
			require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkPayload, Path: f, Offset: uint64(off * 100),
				Payload: bytes.Repeat([]byte{byte(off)}, 100)}))
		}
		require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkEOF, Path: f}))
	}
	outs := []*bytes.Buffer{{}, {}}
	wcs := []io.WriteCloser{nopCloser{outs[0]}, nopCloser{outs[1]}}
	require.NoError(t, deal(&src, wcs, 300, -1, ""))
	paths := [][]string{{}, {}}
	for i, o := range outs {
		for _, c := range payloads(t, o) {
			assert.LessOrEqual(t, len(c.Payload), 300)
			paths[i] = append(paths[i], c.Path)
		}
	}
	// a and c to stream 0, b to stream 1; 1000 bytes in chunks of 300, 300, 300, 100.
	assert.Equal(t, []string{"a", "a", "a", "a", "c", "c", "c", "c"}, paths[0])
	assert.Equal(t, []string{"b", "b", "b", "b"}, paths[1])
}

// payloads reads every payload chunk of the xbstream in r (copies: the
// reader reuses its buffers).
func payloads(t *testing.T, r io.Reader) []xbstream.Chunk {
	t.Helper()
	var out []xbstream.Chunk
	xr := xbstream.NewReader(r)
	for {
		c, err := xr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		if c.Type == xbstream.ChunkPayload {
			cc := *c
			cc.Payload = bytes.Clone(c.Payload)
			out = append(out, cc)
		}
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// xbstream_write.cc, xb_stream_write_data: a write at least as large as the
// buffer is emitted whole, however large (a delta's 64 MiB cluster), never
// cut to --read-buffer-size; smaller ones are gathered.
func TestDealPassesLargeWritesWhole(t *testing.T) {
	var src bytes.Buffer
	w := xbstream.NewWriter(&src)
	require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkPayload, Path: "t.delta", Offset: 0, Payload: bytes.Repeat([]byte{1}, 1000)}))
	require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkPayload, Path: "t.delta", Offset: 1000, Payload: bytes.Repeat([]byte{2}, 100)}))
	require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkPayload, Path: "t.delta", Offset: 1100, Payload: bytes.Repeat([]byte{3}, 100)}))
	require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkEOF, Path: "t.delta"}))
	var out bytes.Buffer
	require.NoError(t, deal(&src, []io.WriteCloser{nopCloser{&out}}, 300, -1, ""))
	var sizes []int
	for _, c := range payloads(t, &out) {
		sizes = append(sizes, len(c.Payload))
	}
	assert.Equal(t, []int{1000, 200}, sizes)
}

// ds_fifo.cc, fifo_init: my_mkdir(dir, 0600) adds mysys's my_umask_dir
// (0750): the directory is 0750 less the umask, not the caller's 0600.
func TestFIFODirMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fifo")
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	_, _ = openFIFOs(dir, 1, 1) // no reader: times out, the directory stays
	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), st.Mode().Perm())
}

// file_utils.cc, open_fifo_for_write_with_timeout: the open is retried once
// a second whatever its error, not only ENXIO (no reader yet): here the FIFO
// does not exist at the first tries (ENOENT) and appears, with a reader,
// later.
func TestFIFOOpenRetriesAnyError(t *testing.T) {
	t.Setenv("XTRABACKUP_STANDIN_CONTROL_BYTE", "none")
	path := filepath.Join(t.TempDir(), "thread_0")
	done := make(chan error, 1)
	go func() {
		f, err := openForWrite(path, 10)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	defer r.Close()
	select {
	case err := <-done:
		require.NoError(t, err, "opened once the FIFO and a reader were there")
	case <-time.After(15 * time.Second):
		t.Fatal("openForWrite did not retry")
	}
}

// Each stream has a writer of its own (a PXB copy thread writes under its
// stream's lock): while stream 0's reader takes nothing, stream 1 still gets
// its file's chunks; once stream 0 is read, everything arrives.
func TestDealSlowStreamHoldsUpOnlyItself(t *testing.T) {
	var src bytes.Buffer
	w := xbstream.NewWriter(&src)
	for off := range 4 {
		for _, f := range []string{"a", "b"} {
			require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkPayload, Path: f, Offset: uint64(off * 100),
				Payload: bytes.Repeat([]byte{byte(off)}, 100)}))
		}
	}
	slow := &gatedWriter{open: make(chan struct{}), wrote: make(chan struct{}, 1)}
	fast := &syncBuffer{got: make(chan struct{}, 100)}
	done := make(chan error, 1)
	go func() { done <- deal(&src, []io.WriteCloser{slow, fast}, 0, -1, "") }()
	<-slow.wrote // stream 0's writer is stuck in its first write
	select {
	case <-fast.got:
	case <-time.After(10 * time.Second):
		t.Fatal("stream 1 got nothing while stream 0 was not read")
	}
	close(slow.open)
	require.NoError(t, <-done)
	assert.Len(t, payloads(t, &slow.buf), 4)
	assert.Len(t, payloads(t, &fast.buf), 4)
}

// A stream that cannot be written fails the deal with its error, and deal
// returns (its writers stopped) while mariabackup's stream has more.
func TestDealStreamWriteErrorStops(t *testing.T) {
	var src bytes.Buffer
	w := xbstream.NewWriter(&src)
	for off := range 50 {
		require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkPayload, Path: "a", Offset: uint64(off * 100),
			Payload: bytes.Repeat([]byte{1}, 100)}))
	}
	err := deal(&src, []io.WriteCloser{failingWriter{}}, 0, -1, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "broken pipe")
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }
func (failingWriter) Close() error              { return nil }

// gatedWriter says when it is first written to, and writes only once open
// is closed.
type gatedWriter struct {
	open  chan struct{}
	wrote chan struct{}
	buf   bytes.Buffer
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	select {
	case g.wrote <- struct{}{}:
	default:
	}
	<-g.open
	return g.buf.Write(p)
}

func (g *gatedWriter) Close() error { return nil }

// syncBuffer says each time it is written to; read buf only after deal returns.
type syncBuffer struct {
	buf bytes.Buffer
	got chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	n, err := s.buf.Write(p)
	s.got <- struct{}{}
	return n, err
}

func (s *syncBuffer) Close() error { return nil }

// BenchmarkDeal: the stand-in's own cost, from a pipe (as mariabackup's
// stdout reaches it) to n pipes each drained by a reader of 1 MiB reads (as
// the engine reads its FIFOs). 64 files of 4 MiB in chunks of chunkKiB.
func BenchmarkDeal(b *testing.B) {
	for _, n := range []int{2, 16} {
		for _, chunkKiB := range []int{1024, 10240} {
			b.Run(fmt.Sprintf("streams=%d/chunk=%dKiB", n, chunkKiB), func(b *testing.B) {
				stream := benchStream(b, 64, 4<<20, chunkKiB<<10)
				b.SetBytes(int64(len(stream)))
				for b.Loop() {
					benchDealOnce(b, stream, n)
				}
			})
		}
	}
}

func benchStream(b *testing.B, files, size, chunk int) []byte {
	b.Helper()
	data := make([]byte, chunk)
	for i := range data {
		data[i] = byte(i*7 + i>>9)
	}
	var src bytes.Buffer
	w := xbstream.NewWriter(&src)
	for f := range files {
		path := fmt.Sprintf("db/t%d.ibd", f)
		for off := 0; off < size; off += chunk {
			require.NoError(b, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkPayload, Path: path, Offset: uint64(off), Payload: data[:min(chunk, size-off)]}))
		}
		require.NoError(b, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkEOF, Path: path}))
	}
	return src.Bytes()
}

func benchDealOnce(b *testing.B, stream []byte, n int) {
	inR, inW, err := os.Pipe()
	require.NoError(b, err)
	_, _ = unix.FcntlInt(inW.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = inW.Write(stream)
		inW.Close()
	})
	outs := make([]io.WriteCloser, n)
	for i := range outs {
		r, w, err := os.Pipe()
		require.NoError(b, err)
		_, _ = unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20)
		outs[i] = w
		wg.Go(func() {
			buf := make([]byte, 1<<20)
			for {
				if _, err := r.Read(buf); err != nil {
					break
				}
			}
			r.Close()
		})
	}
	err = deal(bufio.NewReaderSize(inR, 1<<20), outs, 0, -1, "")
	for _, o := range outs {
		o.Close()
	}
	inR.Close()
	wg.Wait()
	require.NoError(b, err)
}
