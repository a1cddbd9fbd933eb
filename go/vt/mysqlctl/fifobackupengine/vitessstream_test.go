package fifobackupengine

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// filesHandle is a backup handle over files in memory (ReadFile only).
type filesHandle struct {
	backupstorage.BackupHandle
	name  string
	files map[string][]byte
	// fail: opening the file fails so; failAfter: reading it fails so
	// halfway.
	fail, failAfter map[string]error
}

func (h *filesHandle) Name() string      { return h.name }
func (h *filesHandle) Directory() string { return "ks/0" }
func (h *filesHandle) ReadFile(_ context.Context, name string) (io.ReadCloser, error) {
	if err := h.fail[name]; err != nil {
		return nil, err
	}
	b, ok := h.files[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, os.ErrNotExist)
	}
	if err := h.failAfter[name]; err != nil {
		return io.NopCloser(io.MultiReader(bytes.NewReader(b[:len(b)/2]), iotest.ErrReader(err))), nil
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// vitessStriped lays stream out as Vitess's xtrabackup engine stores it:
// dealt to stripes in blocks round robin, each stripe gzipped on its own,
// and the MANIFEST naming them.
func vitessStriped(t *testing.T, stream []byte, stripes, block int) *filesHandle {
	const base = "backup.xbstream.gz"
	raw := make([][]byte, max(stripes, 1))
	for i := 0; len(stream) > 0; i = (i + 1) % len(raw) {
		n := min(block, len(stream))
		if stripes <= 1 {
			n = len(stream)
		}
		raw[i] = append(raw[i], stream[:n]...)
		stream = stream[n:]
	}
	h := &filesHandle{name: "2026-11-20.000000.zone1-0000000100", files: map[string][]byte{}}
	for i, r := range raw {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		_, err := w.Write(r)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		name := base
		if stripes > 1 {
			name = fmt.Sprintf("%s-%03d", base, i)
		}
		h.files[name] = z.Bytes()
	}
	h.files["MANIFEST"] = fmt.Appendf(nil, `{"BackupMethod":"xtrabackup","BackupName":%q,"FileName":%q,"NumStripes":%d,"StripeBlockSize":%d,`+
		`"StreamMode":"xbstream","CompressionEngine":"pargzip","MySQLVersion":"10.11.6-MariaDB-log"}`, h.name, base, stripes, block)
	return h
}

// testStream is an xbstream of two files, with what they hold.
func testStream(t *testing.T) ([]byte, map[string][]byte) {
	rng := rand.New(rand.NewSource(1))
	want := map[string][]byte{"ibdata1": make([]byte, 300<<10), "db/t.ibd": make([]byte, 50<<10)}
	var buf bytes.Buffer
	w := xbstream.NewWriter(&buf)
	for _, path := range []string{"ibdata1", "db/t.ibd"} {
		data := want[path]
		rng.Read(data)
		for off := 0; off < len(data); off += 100 << 10 {
			end := min(off+100<<10, len(data))
			require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkPayload, Path: path, Offset: uint64(off), Payload: data[off:end]}))
		}
		require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkEOF, Path: path}))
	}
	return buf.Bytes(), want
}

// TestVitessXtrabackupStream: a backup laid out as Vitess's xtrabackup
// engine stores it (one file, or stripes of blocks dealt round robin, each
// gzipped) verifies and extracts to the tool's files; a stripe short of a
// block, a damaged stripe and a stream mode this does not read fail naming
// the backup and the file.
func TestVitessXtrabackupStream(t *testing.T) {
	ctx := context.Background()
	stream, want := testStream(t)
	for _, stripes := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("stripes-%d", stripes), func(t *testing.T) {
			h := vitessStriped(t, stream, stripes, 64<<10)
			rep, err := Verify(ctx, h, VerifyOptions{ListFiles: true, Logger: newMemoryLogger()})
			require.NoError(t, err)
			assert.Equal(t, map[string]int64{"ibdata1": 300 << 10, "db/t.ibd": 50 << 10}, rep.FileSizes)
			assert.Equal(t, FlavorMariabackup, rep.Manifest.ToolFlavor)

			dir := filepath.Join(t.TempDir(), "data")
			_, err = RestoreToDir(ctx, h, dir, RestoreDirOptions{Logger: newMemoryLogger()})
			require.NoError(t, err)
			for path, data := range want {
				got, err := os.ReadFile(filepath.Join(dir, path))
				require.NoError(t, err)
				assert.True(t, bytes.Equal(data, got), path)
			}
		})
	}

	t.Run("a-stripe-short-of-a-block", func(t *testing.T) {
		// 350 KiB in 64 KiB blocks over 3 stripes: stripe 1 holds blocks 1
		// and 4; without block 4 the stream would end after block 3.
		h := vitessStriped(t, stream, 3, 64<<10)
		short := stream[64<<10 : 128<<10] // block 1 alone
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		_, err := w.Write(short)
		require.NoError(t, err)
		require.NoError(t, w.Close())
		h.files["backup.xbstream.gz-001"] = z.Bytes()
		_, err = Verify(ctx, h, VerifyOptions{Logger: newMemoryLogger()})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "backup 2026-11-20.000000.zone1-0000000100: the stream of backup.xbstream.gz-000, backup.xbstream.gz-001, backup.xbstream.gz-002")
		assert.Contains(t, err.Error(), "stripe 1 ended while stripe 2 has more")
	})

	t.Run("a-damaged-stripe", func(t *testing.T) {
		// A byte of its data: the chunk's CRC32 names the file and offset.
		h := vitessStriped(t, stream, 3, 64<<10)
		f := h.files["backup.xbstream.gz-002"]
		f[len(f)/2] ^= 0xff
		_, err := Verify(ctx, h, VerifyOptions{Logger: newMemoryLogger()})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "backup 2026-11-20.000000.zone1-0000000100: the stream of backup.xbstream.gz-000")
		assert.Contains(t, err.Error(), "ibdata1: payload CRC32 mismatch")
		// Its gzip trailer: the decompressor names the stripe.
		h = vitessStriped(t, stream, 3, 64<<10)
		f = h.files["backup.xbstream.gz-002"]
		f[len(f)-6] ^= 0xff
		_, err = Verify(ctx, h, VerifyOptions{Logger: newMemoryLogger()})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "backup 2026-11-20.000000.zone1-0000000100: backup.xbstream.gz-002: gzip: invalid checksum")
	})

	t.Run("a-stripe-that-cannot-be-read-is-not-damage", func(t *testing.T) {
		// Denied at open, or timing out halfway: unreadable, which the
		// commands report as exit 3, never as a damaged backup.
		denied := vitessStriped(t, stream, 3, 64<<10)
		denied.fail = map[string]error{"backup.xbstream.gz-001": fmt.Errorf("open: %w", fs.ErrPermission)}
		_, err := Verify(ctx, denied, VerifyOptions{Logger: newMemoryLogger()})
		require.Error(t, err)
		assert.True(t, unreadable.Is(err), "%v", err)
		assert.Contains(t, err.Error(), "backup 2026-11-20.000000.zone1-0000000100: cannot read backup.xbstream.gz-001")
		slow := vitessStriped(t, stream, 3, 64<<10)
		slow.failAfter = map[string]error{"backup.xbstream.gz-002": fmt.Errorf("read: %w", os.ErrDeadlineExceeded)}
		_, err = Verify(ctx, slow, VerifyOptions{Logger: newMemoryLogger()})
		require.Error(t, err)
		assert.True(t, unreadable.Is(err), "%v", err)
		assert.Contains(t, err.Error(), "backup 2026-11-20.000000.zone1-0000000100: backup.xbstream.gz-002: read: ")
	})

	t.Run("a-tar-stream", func(t *testing.T) {
		h := vitessStriped(t, stream, 1, 64<<10)
		h.files["MANIFEST"] = bytes.Replace(h.files["MANIFEST"], []byte(`"StreamMode":"xbstream"`), []byte(`"StreamMode":"tar"`), 1)
		_, err := Verify(ctx, h, VerifyOptions{Logger: newMemoryLogger()})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "backup 2026-11-20.000000.zone1-0000000100: MANIFEST: its stream is tar (--xtrabackup-stream-mode): only xbstream is read here")
	})
}

// TestUnstripedReadsWhatVitessDealt: the stripes read back into the stream
// Vitess's copyToStripes dealt, whatever the stream's length against the
// blocks, from readers that return the end with their last bytes (as
// decompressors do).
func TestUnstripedReadsWhatVitessDealt(t *testing.T) {
	const block = 10
	for _, size := range []int{0, 1, 9, 10, 11, 29, 30, 31, 60, 61, 95} {
		for _, stripes := range []int{2, 3} {
			stream := make([]byte, size)
			rand.New(rand.NewSource(int64(size))).Read(stream)
			raw := make([][]byte, stripes)
			for i, off := 0, 0; off < size; i, off = (i+1)%stripes, off+block {
				raw[i] = append(raw[i], stream[off:min(off+block, size)]...)
			}
			readers := make([]io.Reader, stripes)
			for i, r := range raw {
				readers[i] = iotest.DataErrReader(bytes.NewReader(r))
			}
			got, err := io.ReadAll(&unstriped{stripes: readers, block: block, left: block})
			require.NoError(t, err, "size %d, %d stripes", size, stripes)
			assert.Equal(t, stream, got, "size %d, %d stripes", size, stripes)
		}
	}
}
