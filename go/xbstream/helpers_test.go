package xbstream

import (
	"bytes"
	"context"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	mariadbtest.CleanupCache()
	os.Exit(code)
}

// sb builds streams for tests.
type sb struct {
	t   testing.TB
	buf bytes.Buffer
	w   *Writer
}

func newSB(t testing.TB) *sb {
	s := &sb{t: t}
	s.w = NewWriter(&s.buf)
	return s
}

func (s *sb) chunk(c Chunk) *sb {
	require.NoError(s.t, s.w.WriteChunk(&c))
	return s
}

func (s *sb) p(path string, off uint64, data string) *sb {
	return s.chunk(Chunk{Type: ChunkPayload, Path: path, Offset: off, Payload: []byte(data)})
}

func (s *sb) e(path string) *sb { return s.chunk(Chunk{Type: ChunkEOF, Path: path}) }

// file writes data as payload chunks of at most size bytes, then 'E'.
func (s *sb) file(path string, data []byte, size int) *sb {
	for off := 0; off < len(data); off += size {
		end := min(off+size, len(data))
		s.chunk(Chunk{Type: ChunkPayload, Path: path, Offset: uint64(off), Payload: data[off:end]})
	}
	return s.e(path)
}

func (s *sb) bytes() []byte { return bytes.Clone(s.buf.Bytes()) }

// splitBytes splits stream into n in-memory lanes.
func splitBytes(t testing.TB, stream []byte, n int) [][]byte {
	t.Helper()
	out, err := trySplit(stream, n)
	require.NoError(t, err)
	return out
}

func trySplit(stream []byte, n int) ([][]byte, error) {
	bufs := make([]*bytes.Buffer, n)
	ws := make([]io.Writer, n)
	for i := range bufs {
		bufs[i] = &bytes.Buffer{}
		ws[i] = bufs[i]
	}
	_, err := Split(context.Background(), bytes.NewReader(stream), ws, SplitOptions{})
	out := make([][]byte, n)
	for i := range bufs {
		out[i] = bufs[i].Bytes()
	}
	return out, err
}

func readers(lanes [][]byte) []Lane { return ReaderLanes(byteReaders(lanes)...) }

func byteReaders(lanes [][]byte) []io.Reader {
	rs := make([]io.Reader, len(lanes))
	for i, l := range lanes {
		rs[i] = bytes.NewReader(l)
	}
	return rs
}

// readTree returns path -> content of the regular files under dir.
func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	}))
	return out
}

func patterned(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func crcOf(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
