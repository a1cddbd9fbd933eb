package fifobackupengine

import (
	"context"
	"io"
	"sync"

	"vitess.io/vitess/go/vt/logutil"
)

// framePool keeps the compressors of ended frames for the next frame of any
// lane. A lane holds a compressor only while a frame is open: it ends its
// frame as soon as the chunk that takes the frame past frameSize is written
// (laneWriter.EndChunk), and takes one back for the next chunk. The dealer
// hands out 1 MiB pieces, so with many lanes most of them wait between
// pieces with no frame open: the compressors in memory follow the lanes
// writing at once (one per core, at least 8: xbstream's chunksInFlight, and
// the frames left open by small files), not the lane count. Each zstd or gzip state is about 2 MiB:
// at 64 lanes, one per lane was ~130 MiB live, and with the collector's
// headroom the backup's RSS grew by up to 322 MiB.
type framePool struct {
	cfg    CompressionConfig
	ctx    context.Context
	logger logutil.Logger

	mu   sync.Mutex
	idle []io.WriteCloser // closed compressors
}

func newFramePool(ctx context.Context, cfg CompressionConfig, logger logutil.Logger) *framePool {
	return &framePool{cfg: cfg, ctx: ctx, logger: logger}
}

// get returns a compressor writing a new frame to w.
func (p *framePool) get(w io.Writer) (io.WriteCloser, error) {
	p.mu.Lock()
	var comp io.WriteCloser
	if n := len(p.idle); n > 0 {
		comp, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	if comp == nil {
		return p.cfg.newCompressor(p.ctx, w, p.logger)
	}
	return p.cfg.reuse(p.ctx, comp, w, p.logger)
}

// end closes comp, which ends its frame, and keeps it for another.
func (p *framePool) end(comp io.WriteCloser) error {
	if err := comp.Close(); err != nil {
		return err
	}
	p.mu.Lock()
	p.idle = append(p.idle, comp)
	p.mu.Unlock()
	return nil
}
