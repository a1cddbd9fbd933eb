package fifobackupengine

import (
	"bytes"
	"context"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/xbstream"
)

// TestZstdFramesLeaveTheChecksumToTheChunks: the engine's zstd frames
// carry no content checksum (the frame header's Content_Checksum_flag,
// RFC 8878 3.1.1.1.1, clear), and a damaged byte anywhere in a lane's
// compressed data is still caught when it is read: by the decoder or by
// the xbstream chunk's CRC32.
func TestZstdFramesLeaveTheChecksumToTheChunks(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(7))
	var stream bytes.Buffer
	w := xbstream.NewWriter(&stream)
	for i := range 8 {
		payload := make([]byte, 64<<10)
		for j := range payload {
			payload[j] = byte(rng.Intn(8)) // compressible
		}
		require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkPayload, Path: "ibdata1", Offset: uint64(i * len(payload)), Payload: payload}))
	}
	require.NoError(t, w.WriteChunk(&xbstream.Chunk{Type: xbstream.ChunkEOF, Path: "ibdata1"}))

	var lane bytes.Buffer
	zw, err := zstdWriter(ctx, &CompressionConfig{Enabled: true, Engine: "zstd", Level: 1}, &lane, newMemoryLogger())
	require.NoError(t, err)
	_, err = zw.Write(stream.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	b := lane.Bytes()
	require.Equal(t, []byte{0x28, 0xb5, 0x2f, 0xfd}, b[:4], "a zstd frame")
	assert.Zero(t, b[4]&0x04, "Content_Checksum_flag")

	verify := func(data []byte) error {
		r, err := zstdReader(ctx, nil, CompressionConfig{}, bytes.NewReader(data), newMemoryLogger())
		require.NoError(t, err)
		defer r.Close()
		_, err = xbstream.Verify(ctx, xbstream.ReaderLanes(r), xbstream.ExtractOptions{})
		return err
	}
	require.NoError(t, verify(b))
	for at := 8; at < len(b); at += max(len(b)/97, 1) {
		damaged := bytes.Clone(b)
		damaged[at] ^= 0x10
		assert.Error(t, verify(damaged), "a byte changed at %d of %d", at, len(b))
	}
}
