package fifobackupengine

import (
	"hash/crc32"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamSumThenIsTheSumOfTheBytesJoined: folding a frame's CRC-32C into
// the stream's gives the CRC-32C of the bytes one after another, for any
// split (empty frames, one byte, lengths of every bit pattern), and a lane
// writer's sums (one pass) are those of its frames' and its stream's bytes.
func TestStreamSumThenIsTheSumOfTheBytesJoined(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	data := make([]byte, 3<<20)
	rng.Read(data)
	sumOf := func(p []byte) streamSum { return streamSum(crc32.Checksum(p, castagnoli)) }
	for _, cut := range []int{0, 1, 2, 7, 8, 255, 256, 4095, 1 << 20, 3<<20 - 1, 3 << 20} {
		a, b := data[:cut], data[cut:]
		assert.Equal(t, sumOf(data), sumOf(a).then(sumOf(b), int64(len(b))), "cut at %d", cut)
	}
	for range 50 {
		n := rng.Intn(len(data))
		a, b := data[:rng.Intn(n+1)], data[:n]
		b = b[len(a):]
		require.Equal(t, sumOf(data[:n]), sumOf(a).then(sumOf(b), int64(len(b))), "%d then %d", len(a), len(b))
	}

	var sums laneSums
	var want []streamSum
	for rest := data; len(rest) > 0; {
		frame := rest[:min(len(rest), 1+rng.Intn(1<<20))]
		for p := frame; len(p) > 0; { // written in pieces
			k := min(len(p), 1+rng.Intn(70000))
			sums.add(p[:k])
			p = p[k:]
		}
		want = append(want, sumOf(frame))
		assert.Equal(t, want[len(want)-1], sums.endFrame())
		rest = rest[len(frame):]
	}
	require.Greater(t, len(want), 3)
	assert.Equal(t, sumOf(data), sums.stream)
	assert.Equal(t, sumOf(data), sums.total())
	var open laneSums
	open.add(data[:1000])
	open.endFrame()
	open.add(data[1000:5000])
	assert.Equal(t, sumOf(data[:5000]), open.total(), "a frame still open is in the total")
	assert.Equal(t, streamSum(0), sums.endFrame(), "no bytes since: an empty frame")
	assert.Equal(t, sumOf(data), sums.stream)
}
