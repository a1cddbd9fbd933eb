package fifobackupengine

import (
	"context"
	"io"
	"time"

	"vitess.io/vitess/go/ioutil"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"
	"vitess.io/vitess/go/vt/vterrors"

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
}

func (s *storedLanes) lanes() []xbstream.Lane {
	srcRead := s.stats.bytesFunc("Source:Read")
	decRead := s.stats.bytesFunc("Decompressor:Read")
	lanes := make([]xbstream.Lane, len(s.m.Lanes))
	for i, lane := range s.m.Lanes {
		lanes[i] = func(ctx context.Context) (io.ReadCloser, error) {
			start := time.Now()
			src, err := s.bh.ReadFile(ctx, lane.File)
			s.stats.since("Source:Open", start)
			if err != nil {
				return nil, vterrors.Wrapf(err, "%s: cannot open", lane.File)
			}
			metered := func(n int, d time.Duration) {
				srcRead(n, d)
				if s.onRead != nil {
					s.onRead(i, n)
				}
			}
			dec, err := newDecompressor(ctx, s.m, s.comp, ioutil.NewMeteredReader(src, metered), s.logger)
			if err != nil {
				src.Close()
				return nil, vterrors.Wrapf(err, "%s", lane.File)
			}
			return &storedLane{Reader: ioutil.NewMeteredReader(dec, decRead), dec: dec, src: src, stats: s.stats}, nil
		}
	}
	return lanes
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
