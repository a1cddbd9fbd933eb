package fifobackupengine

import (
	"bytes"
	"context"
	"io"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
)

// TestFramesOfEveryCodec: each codec's lane, its compressor restarted with
// nextFrame, decodes whole as one stream (a full restore) and from the
// start of any frame on its own (a table restore's ranged read).
func TestFramesOfEveryCodec(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	frames := make([][]byte, 5)
	for i := range frames {
		frames[i] = make([]byte, 300_000+rng.Intn(700_000))
		for j := range frames[i] {
			frames[i][j] = byte(rng.Intn(16)) // compressible
		}
	}
	ctx := context.Background()
	logger := logutil.NewMemoryLogger()
	for _, engine := range []string{mysqlctl.ZstdCompressor, mysqlctl.PgzipCompressor, mysqlctl.PargzipCompressor, mysqlctl.Lz4Compressor, "none"} {
		t.Run(engine, func(t *testing.T) {
			c := CompressionConfig{Enabled: engine != "none", Engine: engine, Level: 1, BlockSize: 250000, Blocks: 2}
			var lane bytes.Buffer
			comp, err := c.newCompressor(ctx, &lane, logger)
			require.NoError(t, err)
			var starts []int
			for i, f := range frames {
				if i > 0 {
					comp, err = c.nextFrame(ctx, comp, &lane, logger)
					require.NoError(t, err)
				}
				starts = append(starts, lane.Len())
				_, err := comp.Write(f)
				require.NoError(t, err)
			}
			require.NoError(t, comp.Close())
			m := &Manifest{Compressed: c.Enabled, CompressionEngine: engine}
			decode := func(from int) []byte {
				d, err := newDecompressor(ctx, m, c, bytes.NewReader(lane.Bytes()[from:]), logger)
				require.NoError(t, err)
				got, err := io.ReadAll(d)
				require.NoError(t, err)
				require.NoError(t, d.Close())
				return got
			}
			assert.True(t, bytes.Equal(bytes.Join(frames, nil), decode(0)), "the whole lane")
			for i := range frames {
				assert.True(t, bytes.Equal(bytes.Join(frames[i:], nil), decode(starts[i])), "from frame %d", i)
			}
		})
	}
}
