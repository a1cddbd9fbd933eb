package fifobackupengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"vitess.io/vitess/go/ioutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
)

// laneIndex is the index of seekable lanes, nil when they are not.
func (b *backupRun) laneIndex() *LaneIndex {
	frames := make([]*laneFrames, len(b.lanes))
	for i, l := range b.lanes {
		if l.frames == nil {
			return nil
		}
		frames[i] = l.frames
	}
	return buildLaneIndex(frames)
}

func loadAll(v []atomic.Int64) []int64 {
	out := make([]int64, len(v))
	for i := range v {
		out[i] = v[i].Load()
	}
	return out
}

// laneWriter is one lane: compressor, then the backup file in storage.
type laneWriter struct {
	index  int
	name   string
	file   io.WriteCloser // from BackupHandle.AddFile
	comp   io.WriteCloser // compressor writing into file
	in     io.Writer      // metered compressor input
	raw    atomic.Int64
	sums   laneSums // of the raw bytes: the stream's, each frame's
	stored atomic.Int64
	chunks int64
	closed bool

	// Seekable lanes (laneindex.go): frames is nil when the compressor
	// cannot restart (an external command). Their compressors come from
	// pool, and comp is nil between frames.
	frames *laneFrames
	pool   *framePool
	dest   io.Writer // the metered lane file, under the compressor
	// compressed meters Compressor:Write, which also counts a frame's end:
	// a block codec (lz4) compresses most of a 1 MiB frame only then.
	compressed func(int, time.Duration)
}

// compressorInput writes to the lane's current compressor (restarted at
// each frame), so the meter in front of it stays one.
type compressorInput struct{ l *laneWriter }

func (c compressorInput) Write(p []byte) (int, error) {
	l := c.l
	if l.comp == nil { // a frame starts
		comp, err := l.pool.get(l.dest)
		if err != nil {
			return 0, fmt.Errorf("starting the compressor: %w", err)
		}
		l.comp = comp
	}
	return l.comp.Write(p)
}

// BeginChunk is xbstream.ChunkObserver: past frameSize raw bytes, the chunk
// starts a new compressed frame; the frame's files are recorded.
func (l *laneWriter) BeginChunk(path string) error {
	if l.frames == nil {
		return nil
	}
	raw := l.raw.Load()
	if l.frames.startsFrame(raw) {
		if len(l.frames.frames) > 0 {
			if err := l.endFrame(); err != nil { // a cut or end record may have opened one
				return err
			}
		}
		l.sealFrame()
		l.frames.add(Frame{Stored: l.stored.Load(), Raw: raw})
	}
	l.frames.note(path)
	return nil
}

// EndChunk is xbstream.ChunkEndObserver: a frame past frameSize raw bytes
// ends now, not when the next chunk comes, and its compressor goes back to
// the pool for whichever lane writes next (framePool).
func (l *laneWriter) EndChunk() error {
	if l.frames == nil || len(l.frames.frames) == 0 || !l.frames.startsFrame(l.raw.Load()) {
		return nil
	}
	return l.endFrame()
}

// endFrame closes the open frame, if any: everything it was given reaches
// the lane file.
func (l *laneWriter) endFrame() error {
	if l.comp == nil {
		return nil
	}
	comp := l.comp
	l.comp = nil
	start := time.Now()
	err := l.pool.end(comp)
	l.compressed(0, time.Since(start))
	if err != nil {
		return fmt.Errorf("lane %d (%s): ending a compressed frame: %w", l.index, l.name, err)
	}
	return nil
}

// sealFrame records the CRC-32C of the lane's last frame, whose bytes end
// here (before the next frame's first, or at the lane's end), and folds it
// into the stream's.
func (l *laneWriter) sealFrame() {
	sum := l.sums.endFrame()
	if l.frames != nil && len(l.frames.frames) > 0 {
		l.frames.frames[len(l.frames.frames)-1].CRC32C = sum.String()
	}
}

func (l *laneWriter) Write(p []byte) (int, error) {
	n, err := l.in.Write(p)
	l.raw.Add(int64(n))
	l.sums.add(p[:n])
	if err != nil {
		return n, fmt.Errorf("lane %d (%s): %w", l.index, l.name, err)
	}
	return n, nil
}

func (b *backupRun) openLanes(ctx context.Context) error {
	ext := b.cfg.Compression.Extension()
	compression := b.cfg.Compression.forLanes(b.cfg.Lanes)
	if compression.serialInLane {
		b.logger.Infof("fifo backup: %d lanes on %d cores: each lane's %s runs in the lane alone (the lanes keep the cores busy)", b.cfg.Lanes,
			runtime.GOMAXPROCS(0), compression.Engine)
	}
	destWrite := b.stats.bytesFunc("Destination:Write")
	compWrite := b.stats.bytesFunc("Compressor:Write")
	pool := newFramePool(ctx, compression, b.logger)
	for i := 0; i < b.cfg.Lanes; i++ {
		l := &laneWriter{index: i, name: laneFileName(i, ext)}
		start := time.Now()
		f, err := b.bh.AddFile(ctx, l.name, backupstorage.FileSizeUnknown)
		b.stats.since("Destination:Open", start)
		if err != nil {
			return errtext.Wrapf(err, "cannot add lane file %s to the backup", l.name)
		}
		l.file = f
		l.dest = ioutil.NewMeteredWriter(f, destWrite, func(n int, _ time.Duration) { l.stored.Add(int64(n)) })
		l.pool = pool
		l.compressed = compWrite
		l.in = ioutil.NewMeteredWriter(compressorInput{l}, compWrite)
		b.lanes = append(b.lanes, l)
		if compression.seekable() {
			l.frames = newLaneFrames() // the first frame takes its compressor at its first byte
			continue
		}
		comp, err := pool.get(l.dest) // one stream per lane, started now (an external command)
		if err != nil {
			return errtext.Wrapf(err, "lane %d: cannot start the compressor", i)
		}
		l.comp = comp
	}
	return nil
}

// closeLanes flushes every compressor and closes every lane file, the lanes
// at once: a lane file's close stores its last part and its index, and one
// lane after another made a backup's end as long as all of those in a row
// (the storage bounds its own uploads). Lanes:Close is its wall time. Any
// error fails the backup, since a lane that did not close is incomplete.
func (b *backupRun) closeLanes() error {
	defer b.stats.since("Lanes:Close", time.Now())
	errs := make([]error, len(b.lanes))
	var wg sync.WaitGroup
	for i, l := range b.lanes {
		if l.closed {
			continue
		}
		l.closed = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.closeLane(l)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// closeLane flushes l's compressor into its file, then closes the file.
func (b *backupRun) closeLane(l *laneWriter) error {
	l.sealFrame()
	var errs []error
	if l.comp != nil {
		start := time.Now()
		if err := l.comp.Close(); err != nil {
			errs = append(errs, fmt.Errorf("lane %d (%s): closing the compressor: %w", l.index, l.name, err))
		}
		b.stats.since("Compressor:Close", start)
	}
	start := time.Now()
	if err := l.file.Close(); err != nil {
		errs = append(errs, fmt.Errorf("lane %d (%s): closing the file in storage: %w", l.index, l.name, err))
	}
	b.stats.since("Destination:Close", start)
	return errors.Join(errs...)
}
