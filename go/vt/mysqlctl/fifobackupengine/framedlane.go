package fifobackupengine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// A whole lane read frame by frame, each frame's stored bytes first read
// into memory: klauspost's inflate reads its input through ReadByte, which
// a *bytes.Reader inlines and the *bufio.Reader it otherwise wraps a stream
// in does not; decoding gzip from memory took 27 % less CPU (a 64 MiB lane
// of 1 MiB frames: 135 against 98 MB/s per core). The frames' sizes come
// from the lane index (laneindex.go). Verify reads every codec's lanes so
// (zstd's and lz4's too, on any host), to check the index against them.

// frameDecoder decodes one frame, read from src to its end; a lane's
// decoder is reused from frame to frame.
type frameDecoder func(src io.Reader) (io.Reader, error)

// maxFrameInMemory bounds a lane's frame buffer: a larger frame (a single
// chunk of many MiB) is decoded from the stream instead.
const maxFrameInMemory = 2 << 20

// framedLane is a whole lane's decompressed stream, decoded frame by frame.
// Every frame must decode to exactly its stored bytes, and the lane must
// end with its last frame. Where it does not, the lane index and the lane
// disagree, and only the lane can say which is wrong: the rest of the lane
// is read as one stream from the start of that frame (resume), and the
// stream's verdict is the lane's, as on a host that read it as a stream
// from the start. A storage read error is returned as it is.
type framedLane struct {
	src    *sourceReader
	sizes  []int64 // the stored size of each frame not yet started
	decode frameDecoder
	resume laneResumer
	frame  int   // the frame being decoded, from 0
	stored int64 // where the frame starts in the lane
	given  int64 // the bytes its decoder gave so far
	cur    io.Reader
	rest   io.ReadCloser // the lane's stream from a frame on, once resumed
	// the current frame's stored bytes: in memory, or from the stream.
	mem    bytes.Reader
	buf    []byte
	stream *bufio.Reader
	from   frameSource // &mem or stream
}

// frameSource is a frame's stored bytes; ReadByte after its codec's end
// tells whether the frame has bytes left.
type frameSource interface {
	io.Reader
	io.ByteReader
}

// A laneResumer reads the lane as one decompressed stream from stored byte
// off, a frame's start, after that frame did not decode as the index says
// (why); the caller closes it.
type laneResumer func(off int64, frame int, why error) (io.ReadCloser, error)

// sourceReader keeps the storage's read error: a frame that could not be
// read says nothing about the index or the lane.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

func newFramedLane(src io.Reader, sizes []int64, decode frameDecoder, resume laneResumer) *framedLane {
	return &framedLane{src: &sourceReader{r: src}, sizes: sizes, decode: decode, resume: resume, frame: -1}
}

// frameSizes is each frame's stored size in a lane of storedBytes whose
// frames start at frames.
func frameSizes(frames []Frame, storedBytes int64) []int64 {
	sizes := make([]int64, len(frames))
	for j, fr := range frames {
		end := storedBytes
		if j+1 < len(frames) {
			end = frames[j+1].Stored
		}
		sizes[j] = end - fr.Stored
	}
	return sizes
}

func (f *framedLane) Read(p []byte) (int, error) {
	if f.rest != nil {
		return f.readRest(p)
	}
	n, err := f.readFrames(p)
	if err == nil || err == io.EOF || f.src.err != nil {
		return n, err
	}
	if err := f.resumeStream(err); err != nil {
		return n, err
	}
	if n > 0 {
		return n, nil
	}
	return f.readRest(p)
}

// resumeStream turns to the lane's stream from the current frame's start,
// past the bytes the frame already gave.
func (f *framedLane) resumeStream(why error) error {
	rest, err := f.resume(f.stored, f.frame, why)
	if err != nil {
		return f.restErr(err)
	}
	f.rest = rest
	if _, err := io.CopyN(io.Discard, rest, f.given); err != nil {
		return f.restErr(fmt.Errorf("the %d bytes frame %d gave: %w", f.given, f.frame, noEOF(err)))
	}
	return nil
}

func (f *framedLane) readRest(p []byte) (int, error) {
	n, err := f.rest.Read(p)
	if err != nil && err != io.EOF {
		err = f.restErr(err)
	}
	return n, err
}

func (f *framedLane) restErr(err error) error {
	return fmt.Errorf("the lane read as one stream from frame %d (stored byte %d): %w", f.frame, f.stored, err)
}

// readFrames reads the lane frame by frame.
func (f *framedLane) readFrames(p []byte) (int, error) {
	for {
		if f.cur == nil {
			if err := f.next(); err != nil {
				return 0, err
			}
		}
		n, err := f.cur.Read(p)
		f.given += int64(n)
		if err == io.EOF {
			if _, rerr := f.from.ReadByte(); rerr != io.EOF {
				return n, fmt.Errorf("frame %d: its codec's stream ends before the frame's %d stored bytes", f.frame, f.sizes[0])
			}
			f.stored, f.given = f.stored+f.sizes[0], 0
			f.cur, f.sizes = nil, f.sizes[1:]
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			err = fmt.Errorf("frame %d: %w", f.frame, err)
		}
		return n, err
	}
}

// next starts the next frame, or says the lane has ended (io.EOF) once its
// source has too.
func (f *framedLane) next() error {
	f.frame++
	if len(f.sizes) == 0 {
		var one [1]byte
		if n, err := io.ReadFull(f.src, one[:]); n > 0 || err != io.EOF {
			if err == nil || err == io.ErrUnexpectedEOF {
				return fmt.Errorf("bytes after the lane's last frame (%d frames)", f.frame)
			}
			return err
		}
		return io.EOF
	}
	size := f.sizes[0]
	if size <= maxFrameInMemory {
		if int64(cap(f.buf)) < size {
			f.buf = make([]byte, size)
		}
		if _, err := io.ReadFull(f.src, f.buf[:size]); err != nil {
			return fmt.Errorf("frame %d: reading its %d stored bytes: %w", f.frame, size, noEOF(err))
		}
		f.mem.Reset(f.buf[:size])
		f.from = &f.mem
	} else {
		limited := io.LimitReader(f.src, size)
		if f.stream == nil {
			f.stream = bufio.NewReaderSize(limited, 256<<10)
		} else {
			f.stream.Reset(limited)
		}
		f.from = f.stream
	}
	cur, err := f.decode(f.from)
	if err != nil {
		return fmt.Errorf("frame %d: %w", f.frame, noEOF(err))
	}
	f.cur = cur
	return nil
}

// noEOF: a frame cut short is an unexpected end, not the lane's end.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Close closes the lane's stream, if it turned to it; the frames' decoder
// holds nothing to release.
func (f *framedLane) Close() error {
	if f.rest != nil {
		return f.rest.Close()
	}
	return nil
}
