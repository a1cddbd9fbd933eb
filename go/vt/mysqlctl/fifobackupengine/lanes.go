package fifobackupengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"vitess.io/vitess/go/ioutil"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/backuphandle"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// storedLanes opens the lanes of a stored backup as restore, verify and the
// operator's tools read them: the storage's reader, then the decompressor the
// MANIFEST names, metered on both sides (Source:* and Decompressor:* in
// stats). xbstream.Extract and Verify open each lane in its own goroutine
// with a context they cancel at the first error, and close it once its reads
// have stopped.
type storedLanes struct {
	bh     backupstorage.BackupHandle
	m      *Manifest
	comp   CompressionConfig // the local decompressor settings
	stats  *phaseStats
	onRead func(lane, n int) // stored bytes read (progress); may be nil
	logger logutil.Logger
	// stretches, if set, has for each lane the stretches of whole frames to
	// read, one after another (a table restore, laneindex.go); nil reads
	// every lane whole.
	stretches [][]stretch
	// storageErr is the first error the storage gave a read of any lane
	// (judge).
	storageErr firstError
	// checkIndex reads every lane frame by frame where the codec can and
	// the backup has a lane index, whatever the host's cores, so that
	// verify's verdict on the index is the same everywhere; indexMismatch
	// is the first lane that did not decode as its index says.
	checkIndex    bool
	indexMismatch firstError
	// sums, if set, takes each whole lane's CRC-32C (verify's index check:
	// frame by frame, indexCheck.summer); nil: in one sum.
	sums func(lane int) streamSummer
	// index is the lane index once read (laneIndex), read at most once.
	index     *LaneIndex
	indexErr  error
	indexRead bool
}

// laneIndex is the backup's lane index (ReadLaneIndex), read once for the
// framed lanes and for verify's check of it.
func (s *storedLanes) laneIndex(ctx context.Context) (*LaneIndex, error) {
	if !s.indexRead {
		s.index, s.indexErr = ReadLaneIndex(ctx, s.bh, s.m)
		s.indexRead = true
	}
	return s.index, s.indexErr
}

// judge is the verdict a failure to read the lanes supports. Lanes that
// only this host's external decompressor decodes (it may not be the command
// they were written for) are proved damaged by the storage alone: its own
// error where it gave one, else none (unreadable: nothing says the backup
// is damaged). Any other codec is this program's own, and its failure is
// about the backup.
func (s *storedLanes) judge(err error) error {
	if err == nil || !s.m.LanesDecodedByHostCommand() || unreadable.Is(err) {
		return err
	}
	if serr := s.storageErr.get(); serr != nil {
		return errtext.Wrapf(serr, "backup %s: the storage", s.m.BackupName)
	}
	return unreadable.Error(fmt.Errorf("%s; the storage reported nothing wrong with what it gave: the lanes did not decode with this host's "+
		"external decompressor, which is no proof about the backup: give --external-decompressor the command that reads the %q files it was "+
		"written with", err.Error(), s.m.CompressionExtension))
}

// firstError keeps the first error it is given, from any goroutine.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// storageReader is a lane's stored bytes as the storage gives them; it
// keeps the storage's error (not a cancellation: the lanes are cancelled
// together once one fails) for judge.
type storageReader struct {
	io.ReadCloser
	file string
	into *firstError
}

func (r storageReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil && err != io.EOF && !errors.Is(err, context.Canceled) {
		r.into.set(errtext.Wrapf(err, "%s", r.file))
	}
	return n, err
}

// lanes are the backup's lanes as xbstream reads them, decompressed: each
// whole, checked at its end against the MANIFEST (checkedLane), or the
// stretches of frames a table restore reads.
func (s *storedLanes) lanes(ctx context.Context) []xbstream.Lane {
	srcRead := s.stats.bytesFunc("Source:Read")
	decRead := s.stats.bytesFunc("Decompressor:Read")
	framed := s.framedLanes(ctx)
	lanes := make([]xbstream.Lane, len(s.m.Lanes))
	for i, lane := range s.m.Lanes {
		// decompress reads src, a whole lane or a stretch of whole frames.
		decompress := func(ctx context.Context, src io.ReadCloser) (io.ReadCloser, error) {
			src = storageReader{ReadCloser: src, file: lane.File, into: &s.storageErr}
			metered := func(n int, d time.Duration) {
				srcRead(n, d)
				if s.onRead != nil {
					s.onRead(i, n)
				}
			}
			var dec io.ReadCloser
			var err error
			if framed != nil {
				src = &onceCloser{ReadCloser: src}
				resume := func(off int64, frame int, why error) (io.ReadCloser, error) {
					s.logger.Warningf("fifo: backup %s: %s does not match its lane index (%v): the rest of the lane is read as one stream from frame %d", s.m.BackupName, lane.File, why, frame)
					if s.checkIndex { // verify's verdict on the index; a restore goes on without it
						s.indexMismatch.set(errtext.Errorf(vtrpcpb.Code_DATA_LOSS, "backup %s: %s does not match the lane index at frame %d (stored byte %d): %v",
							s.m.BackupName, lane.File, frame, off, why))
					}
					src.Close() // read no further; its read-ahead goes back to the storage's budget
					return s.streamFrom(ctx, lane, off, metered)
				}
				dec = newFramedLane(ioutil.NewMeteredReader(src, metered), framed[i], codecs[s.m.CompressionEngine].frames(), resume)
			} else {
				dec, err = newDecompressor(ctx, s.m, s.comp, ioutil.NewMeteredReader(src, metered), s.logger)
			}
			if err != nil {
				src.Close()
				return nil, errtext.Wrapf(err, "%s", lane.File)
			}
			return &storedLane{Reader: ioutil.NewMeteredReader(dec, decRead), dec: dec, src: src, stats: s.stats}, nil
		}
		open := func(ctx context.Context, r *byteRange) (io.ReadCloser, error) {
			start := time.Now()
			var src io.ReadCloser
			var err error
			if r == nil {
				src, err = s.bh.ReadFile(ctx, lane.File)
			} else {
				src, err = s.bh.(backuphandle.RangeReader).ReadFileRange(ctx, lane.File, r.off, r.n)
			}
			s.stats.since("Source:Open", start)
			if err != nil {
				return nil, errtext.Wrapf(err, "%s: cannot open", lane.File)
			}
			return decompress(ctx, src)
		}
		switch {
		case s.stretches == nil:
			lanes[i] = func(ctx context.Context) (io.ReadCloser, error) {
				rc, err := open(ctx, nil)
				if err != nil {
					return nil, err
				}
				return &checkedLane{ReadCloser: rc, backup: s.m.BackupName, index: i, lane: lane, sum: s.summer(i)}, nil
			}
		case isRangeReader(s.bh):
			lanes[i] = func(ctx context.Context) (io.ReadCloser, error) {
				return &stretchReader{stretches: s.stretches[i], open: func(st stretch) (io.ReadCloser, error) {
					rc, err := open(ctx, &st.byteRange)
					return s.checkFrames(rc, err, i, st)
				}}, nil
			}
		default:
			lanes[i] = func(ctx context.Context) (io.ReadCloser, error) {
				start := time.Now()
				whole, err := s.bh.ReadFile(ctx, lane.File)
				s.stats.since("Source:Open", start)
				if err != nil {
					return nil, errtext.Wrapf(err, "%s: cannot open", lane.File)
				}
				skip := &skippingReader{r: whole}
				return &stretchReader{stretches: s.stretches[i], whole: whole, open: func(st stretch) (io.ReadCloser, error) {
					src, err := skip.stretch(st.byteRange)
					if err != nil {
						return nil, errtext.Wrapf(err, "%s", lane.File)
					}
					rc, err := decompress(ctx, src)
					return s.checkFrames(rc, err, i, st)
				}}, nil
			}
		}
		lanes[i] = markLaneFaults(lanes[i])
	}
	return lanes
}

// summer takes lane i's CRC-32C as it is read whole.
func (s *storedLanes) summer(i int) streamSummer {
	if s.sums != nil {
		return s.sums(i)
	}
	return new(streamSum)
}

// checkFrames checks the frames of stretch st of lane i as they are read
// (checkedFrames), once opened.
func (s *storedLanes) checkFrames(rc io.ReadCloser, err error, i int, st stretch) (io.ReadCloser, error) {
	if err != nil {
		return nil, err
	}
	return &checkedFrames{ReadCloser: rc, walk: newFrameWalk(st.frames), backup: s.m.BackupName, index: i, file: s.m.Lanes[i].File}, nil
}

// framedLanes is, for each lane read whole, its frames' stored sizes where
// the backup has a lane index and its codec decodes frames (codec.frames),
// to check them (checkIndex) or because it reads them faster from memory;
// nil reads each lane as one stream. A whole lane needs no index: one that
// cannot be read leaves the lanes to their streams.
func (s *storedLanes) framedLanes(ctx context.Context) [][]int64 {
	c := codecs[s.m.CompressionEngine]
	if s.stretches != nil || !s.m.Compressed || c.frames == nil || !(s.checkIndex || c.framesFaster && lanesKeepCoresBusy(len(s.m.Lanes))) {
		return nil
	}
	ix, err := s.laneIndex(ctx)
	if err != nil {
		s.logger.Warningf("fifo: backup %s: reading its lanes as streams, without their frames: %s", s.m.BackupName, errtext.Text(err))
		return nil
	}
	if ix == nil {
		return nil
	}
	sizes := make([][]int64, len(s.m.Lanes))
	for i, lane := range s.m.Lanes {
		if len(ix.Lanes[i]) == 0 && lane.StoredBytes > 0 {
			return nil // no frame recorded: the lane is one stream
		}
		sizes[i] = frameSizes(ix.Lanes[i], lane.StoredBytes)
	}
	return sizes
}

// streamFrom reads lane from stored byte off to its end as one decompressed
// stream: a framed lane's frames from one that did not decode as the lane
// index says (framedLane).
func (s *storedLanes) streamFrom(ctx context.Context, lane LaneInfo, off int64, metered func(int, time.Duration)) (io.ReadCloser, error) {
	var src io.ReadCloser
	var err error
	if rr, ok := s.bh.(backuphandle.RangeReader); ok {
		src, err = rr.ReadFileRange(ctx, lane.File, off, lane.StoredBytes-off)
	} else if src, err = s.bh.ReadFile(ctx, lane.File); err == nil {
		if _, err = io.CopyN(io.Discard, src, off); err != nil {
			src.Close()
			err = fmt.Errorf("skipping to %d: %w", off, noEOF(err))
		}
	}
	if err != nil {
		return nil, errtext.Wrapf(err, "%s: cannot open at stored byte %d", lane.File, off)
	}
	dec, err := newDecompressor(ctx, s.m, s.comp, ioutil.NewMeteredReader(src, metered), s.logger)
	if err != nil {
		src.Close()
		return nil, errtext.Wrapf(err, "%s", lane.File)
	}
	return &storedLane{Reader: dec, dec: dec, src: src, stats: s.stats}, nil
}

// onceCloser closes its reader once however often it is asked: a framed lane
// closes the storage's reader when it turns to a stream of its own, and the
// lane's Close comes later.
type onceCloser struct {
	io.ReadCloser
	once sync.Once
	err  error
}

func (c *onceCloser) Close() error {
	c.once.Do(func() { c.err = c.ReadCloser.Close() })
	return c.err
}

func isRangeReader(bh backupstorage.BackupHandle) bool {
	_, ok := bh.(backuphandle.RangeReader)
	return ok
}

// stretchReader reads stretches of a lane one after another, each opened
// (and decompressed) on its own when the previous one ends.
type stretchReader struct {
	stretches []stretch
	open      func(stretch) (io.ReadCloser, error)
	cur       io.ReadCloser
	whole     io.Closer // the lane read whole, where the storage has no ranges
}

func (s *stretchReader) Read(p []byte) (int, error) {
	for {
		if s.cur == nil {
			if len(s.stretches) == 0 {
				return 0, io.EOF
			}
			cur, err := s.open(s.stretches[0])
			if err != nil {
				return 0, err
			}
			s.cur, s.stretches = cur, s.stretches[1:]
		}
		n, err := s.cur.Read(p)
		if err == io.EOF {
			err = s.cur.Close()
			s.cur = nil
			if n > 0 || err != nil {
				return n, err
			}
			continue
		}
		return n, err
	}
}

func (s *stretchReader) Close() error {
	var err error
	if s.cur != nil {
		err = s.cur.Close()
	}
	if s.whole != nil {
		if werr := s.whole.Close(); err == nil {
			err = werr
		}
	}
	return err
}

// skippingReader hands out stretches of a file read from its start,
// discarding what lies between them.
type skippingReader struct {
	r   io.Reader
	pos int64
}

func (s *skippingReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.pos += int64(n)
	return n, err
}

func (s *skippingReader) stretch(r byteRange) (io.ReadCloser, error) {
	if r.off < s.pos {
		return nil, fmt.Errorf("stretch at %d is behind the read position %d", r.off, s.pos)
	}
	if _, err := io.CopyN(io.Discard, s, r.off-s.pos); err != nil {
		return nil, fmt.Errorf("skipping to %d: %w", r.off, err)
	}
	return io.NopCloser(io.LimitReader(s, r.n)), nil
}

// storedLane is one open lane; Close closes the decompressor, then the
// storage's reader.
type storedLane struct {
	io.Reader
	dec, src io.Closer
	stats    *phaseStats
}

func (l *storedLane) Close() error {
	start := time.Now()
	err := l.dec.Close()
	l.stats.since("Decompressor:Close", start)
	start = time.Now()
	if serr := l.src.Close(); err == nil {
		err = serr
	}
	l.stats.since("Source:Close", start)
	return err
}
