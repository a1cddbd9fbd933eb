package fifobackupengine

import (
	"context"
	"io"
	"time"

	"vitess.io/vitess/go/ioutil"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl/backupstorage"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// ExportOptions configures Export.
type ExportOptions struct {
	// Compression is the local decompressor configuration, as restore uses it.
	Compression CompressionConfig
	// OnManifest, if set, is called once the MANIFEST is read and checked;
	// OnRead with the stored bytes read from a lane (progress).
	OnManifest func(*Manifest)
	OnRead     func(lane int, n int)
	Logger     logutil.Logger
}

// Export writes a backup to w as one stock xbstream, the stream Percona's
// `xbstream -x` and MariaDB's `mbstream -x` extract into the tool's files:
// the lanes are read through the storage and the decompressor as restore
// reads them (storedLanes) and merged back (xbstream.Merge: split lanes in
// their original chunk order by their sequence records, FIFO lanes one after
// another), every chunk's CRC32 checked on the way and every lane's length
// against the MANIFEST. It is how a backup is restored where there is no
// Vitess. It returns the bytes written. Tested with MariaDB's mbstream only;
// Percona's xbstream reads the same format but cannot run here.
func Export(ctx context.Context, bh backupstorage.BackupHandle, w io.Writer, opts ExportOptions) (int64, error) {
	if opts.Logger == nil {
		opts.Logger = logutil.NewConsoleLogger()
	}
	m, err := ReadManifest(ctx, bh)
	if err != nil {
		return 0, err
	}
	if opts.OnManifest != nil {
		opts.OnManifest(m)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	from := &storedLanes{bh: bh, m: m, comp: opts.Compression, stats: newPhaseStats(nil), onRead: opts.OnRead, logger: opts.Logger}
	lanes := from.lanes(ctx)
	readers := make([]io.Reader, len(lanes))
	var opened []io.Closer
	// Merge reads every lane from this goroutine: once it has returned, no
	// Read is in progress and the lanes can be closed, the context cancelled
	// first (an external decompressor still writing exits only when killed).
	defer func() {
		cancel()
		for _, c := range opened {
			c.Close()
		}
	}()
	for i, open := range lanes {
		rc, err := open(ctx)
		if err != nil {
			return 0, errtext.Wrapf(err, "backup %s: lane %d", bh.Name(), i)
		}
		opened = append(opened, rc)
		readers[i] = rc
	}
	var written int64
	out := ioutil.NewMeteredWriter(w, func(n int, _ time.Duration) { written += int64(n) })
	if err := xbstream.Merge(out, readers); err != nil {
		return written, from.judge(errtext.Wrapf(err, "backup %s: lanes (%s)", bh.Name(), laneNames(m)))
	}
	return written, nil
}
