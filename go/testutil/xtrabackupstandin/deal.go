package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/vtfifo/vtfifo/go/xbstream"
)

// deal copies mariabackup's stream to the outputs, each file to the output
// chosen round-robin when the file is opened (its first chunk), as
// ds_xbstream.cc's xbstream_open does. With readBuffer > 0, consecutive
// payload chunks of one file are merged into chunks of readBuffer bytes.
//
// Each output is written by a goroutine of its own, as each of PXB's copy
// threads writes its file's chunks under its stream's own lock
// (xbstream_write.cc): a stream whose reader is slow holds up only what is
// dealt to it, once its queue is full (one chunk waiting, one being written:
// about a copy thread's buffers). Chunks keep the CRC32 the reader verified.
// It returns once every writer has stopped.
func deal(src io.Reader, outs []io.WriteCloser, readBuffer, failAfter int64, drop string) error {
	ctx, fail := context.WithCancelCause(context.Background())
	defer fail(nil)
	d := &dealer{
		queues: make([]chan *xbstream.Chunk, len(outs)), free: make(chan []byte, 2*len(outs)+2),
		readBuffer: readBuffer, failAfter: failAfter, drop: drop,
		assigned: map[string]int{}, pending: map[string]*xbstream.Chunk{},
	}
	var wg sync.WaitGroup
	for i, o := range outs {
		q := make(chan *xbstream.Chunk, 1)
		d.queues[i] = q
		wg.Go(func() { d.write(ctx, fail, o, q) })
	}
	err := d.run(ctx, src)
	for _, q := range d.queues {
		close(q)
	}
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil {
		return cause // a stream could not be written
	}
	return err
}

// dealer is deal's state: which output each open file goes to, and the
// merged payload not yet handed over, per file.
type dealer struct {
	queues                []chan *xbstream.Chunk
	free                  chan []byte // payload buffers the writers are done with
	readBuffer, failAfter int64
	drop                  string
	assigned              map[string]int
	next                  int
	payload               int64
	// Merged payload not yet written, per file: copy threads read each file
	// read-buffer-size at a time, whatever the other threads interleave.
	pending map[string]*xbstream.Chunk
}

// run reads the stream and hands each chunk (a copy: the reader reuses its
// buffers) to its file's output.
func (d *dealer) run(ctx context.Context, src io.Reader) error {
	r := xbstream.NewReader(src)
	for {
		c, err := r.Next()
		if err == io.EOF {
			for p := range d.pending {
				if err := d.flush(ctx, p); err != nil {
					return err
				}
			}
			return nil
		}
		if err != nil {
			return err
		}
		if d.drop != "" && strings.HasPrefix(strings.TrimPrefix(c.Path, "./"), d.drop) {
			continue
		}
		if _, ok := d.assigned[c.Path]; !ok {
			d.assigned[c.Path] = d.next % len(d.queues)
			d.next++
		}
		if d.readBuffer > 0 && c.Type == xbstream.ChunkPayload && int64(len(c.Payload)) < d.readBuffer {
			err = d.gather(ctx, c)
		} else if err = d.flush(ctx, c.Path); err == nil {
			err = d.send(ctx, c.Path, d.own(c))
		}
		if err != nil {
			return err
		}
		if c.Type == xbstream.ChunkEOF {
			delete(d.assigned, c.Path)
		}
		d.payload += int64(len(c.Payload))
		if d.failAfter >= 0 && d.payload >= d.failAfter {
			return fmt.Errorf("failing on purpose after %d bytes (XTRABACKUP_STANDIN_FAIL_AFTER)", d.payload)
		}
	}
}

// gather adds c's payload to its file's pending chunk, handing over every
// chunk that reaches readBuffer bytes; a payload that does not continue the
// pending one hands that over first.
func (d *dealer) gather(ctx context.Context, c *xbstream.Chunk) error {
	p := d.pending[c.Path]
	if p != nil && p.Offset+uint64(len(p.Payload)) != c.Offset {
		if err := d.flush(ctx, c.Path); err != nil {
			return err
		}
		p = nil
	}
	for rest, off := c.Payload, c.Offset; len(rest) > 0; {
		if p == nil {
			p = &xbstream.Chunk{Type: xbstream.ChunkPayload, Path: c.Path, Offset: off, Payload: d.buffer(int(d.readBuffer))}
			d.pending[c.Path] = p
		}
		k := min(int64(len(rest)), d.readBuffer-int64(len(p.Payload)))
		p.Payload = append(p.Payload, rest[:k]...)
		rest, off = rest[k:], off+uint64(k)
		if int64(len(p.Payload)) == d.readBuffer {
			if err := d.flush(ctx, c.Path); err != nil {
				return err
			}
			p = nil
		}
	}
	return nil
}

// flush hands over path's pending merged chunk, if it has one.
func (d *dealer) flush(ctx context.Context, path string) error {
	p := d.pending[path]
	if p == nil {
		return nil
	}
	delete(d.pending, path)
	if len(p.Payload) == 0 {
		return nil
	}
	return d.send(ctx, path, p)
}

// send queues c for path's output; it waits while that output's queue is
// full, and gives up once a writer has failed.
func (d *dealer) send(ctx context.Context, path string, c *xbstream.Chunk) error {
	select {
	case d.queues[d.assigned[path]] <- c:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// own copies c out of the reader's buffers, keeping its verified CRC.
func (d *dealer) own(c *xbstream.Chunk) *xbstream.Chunk {
	cc := *c
	cc.Payload = nil // never the reader's buffer, even empty: writers recycle what they are given
	if len(c.Payload) > 0 {
		cc.Payload = append(d.buffer(len(c.Payload)), c.Payload...)
	}
	cc.Sparse = slices.Clone(c.Sparse)
	return &cc
}

// buffer is an empty payload buffer of at least n bytes' capacity, one a
// writer is done with where it is large enough.
func (d *dealer) buffer(n int) []byte {
	select {
	case b := <-d.free:
		if cap(b) >= n {
			return b[:0]
		}
	default:
	}
	return make([]byte, 0, n)
}

// write writes the chunks queued for one output; after a failure (its own
// or another output's) it drops them, so the dealer never waits on it.
func (d *dealer) write(ctx context.Context, fail context.CancelCauseFunc, out io.Writer, q <-chan *xbstream.Chunk) {
	w := xbstream.NewWriter(out)
	for c := range q {
		if ctx.Err() == nil {
			if err := w.WriteVerbatim(c); err != nil {
				fail(err)
			}
		}
		if cap(c.Payload) > 0 {
			select {
			case d.free <- c.Payload:
			default:
			}
		}
	}
}
