package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestGzipLanesJudgedByTheLanes: a pgzip backup of more lanes than the
// host's cores, whose lanes vtfifo and the restore read frame by frame from
// its lane index, on S3 (versitygw behind the fault proxy), with the real
// vtfifo binary. What decides a verdict on the lanes is the lanes, never the
// index or the host: under an index that reads but does not match its good
// lanes (a frame's start moved, the storage's checksums made to agree) the
// whole restore restores the source data, with a warning, and verify fails
// (exit 1) saying a table restore cannot use the index, on any host; a lane damaged the same careful way
// (only the decoder can tell) fails naming backup, lane file and frame, exit
// 1, and does not restore; an index damaged in the store fails verify
// naming its part (verify reads every file) and the whole restore, which does
// not need it, restores the source data; the index or a lane part the store
// refuses to serve is not read, exit 3, and nothing says the backup is
// damaged.
func TestGzipLanesJudgedByTheLanes(t *testing.T) {
	f := newFixture(t)
	p, _ := faultyStore(t, f, splitstorage.BackendS3)
	cfg := f.cfg
	ec := engineConfig()
	ec.Lanes = runtime.NumCPU() + 1 // more lanes than cores: read frame by frame, here and in vtfifo
	ec.Compression.Engine = mysqlctl.PgzipCompressor
	f.useEngine(ec)
	ctx := context.Background()
	require.NoError(t, f.backup(ctx, nil))
	names := f.list(t)
	require.Len(t, names, 1)
	name := names[0]
	const laneFile, laneIndex = "lane-000.xbstream.gz", "lanes.index"
	be, err := splitstorage.OpenBackend(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { be.Close() })
	verify := func(t *testing.T) (int, string, string) {
		code, stdout, stderr := runVtfifo(t, cfg, "verify", "--progress=never")
		t.Logf("vtfifo verify: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		return code, stdout, stderr
	}
	okLine := "OK: backup " + backupDir + "/" + name

	code, stdout, stderr := verify(t)
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, okLine)
	assert.NotContains(t, stdout+stderr, "lane index")

	t.Run("an index that does not match its good lanes", func(t *testing.T) {
		undo := rewritePart(t, be, name, laneIndex, 1, func(doc []byte) []byte {
			var ix fifobackupengine.LaneIndex
			require.NoError(t, json.Unmarshal(doc, &ix))
			require.Greater(t, len(ix.Lanes[0]), 1, "lane 0 has frames to move")
			ix.Lanes[0][1].Stored += 10
			moved, err := json.Marshal(ix)
			require.NoError(t, err)
			return moved
		})
		defer undo()
		code, stdout, stderr := verify(t)
		assert.Equal(t, 1, code, "the lanes are good, the index a table restore reads is not")
		assert.Contains(t, stdout, "FAIL: backup "+backupDir+"/"+name+": 1 problem(s)")
		assert.Contains(t, stdout, "table restores cannot use this backup's lane index (a whole restore does not need it): backup "+name+": "+laneFile+
			" does not match the lane index at frame 0 (stored byte 0): frame 0: unexpected EOF")
		assert.Contains(t, stderr, "backup "+name+": "+laneFile+" does not match its lane index (frame 0: unexpected EOF): the rest of the lane is read as one stream from frame 0")

		logger := logutil.NewMemoryLogger()
		_, err := f.restore(ctx, logger)
		require.NoError(t, err, "the restore reads the lanes, whatever the index says")
		assert.Contains(t, logger.String(), laneFile+" does not match its lane index")
		f.requireSourceData(t, "restore under an index that does not match")
	})

	t.Run("a lane damaged so that only the decoder can tell", func(t *testing.T) {
		undo := rewritePart(t, be, name, laneFile, 1, func(b []byte) []byte {
			b[len(b)/2] ^= 0xff
			return b
		})
		defer undo()
		// The lane decides: a chunk's CRC32 while the frame decodes, or
		// inflate's error, then the lane's own stream from that frame on
		// (where the flipped byte lands in this run's bytes decides which),
		// named by lane, stream offset and file.
		damage := regexp.MustCompile(`lane 0 = ` + regexp.QuoteMeta(laneFile) + `.*: lane 0: offset \d+: \S+: ` +
			`(payload CRC32 mismatch|reading the payload at stream offset \d+: the lane read as one stream from frame \d+ \(stored byte \d+\): )`)
		code, stdout, stderr := verify(t)
		assert.Equal(t, 1, code, "a damaged lane")
		assert.Contains(t, stdout, "FAIL: backup "+backupDir+"/"+name+": 1 problem(s)")
		assert.Regexp(t, damage, stdout)
		assert.NotContains(t, stdout+stderr, "could not be read")

		logger := logutil.NewMemoryLogger()
		_, err := f.restore(ctx, logger)
		require.Error(t, err, "a damaged lane does not restore")
		assert.Contains(t, err.Error(), name)
		assert.Regexp(t, damage, err.Error())
		_, statErr := os.Stat(filepath.Join(f.tb.Cnf.TabletDir(), mysqlctl.RestoreState))
		assert.NoError(t, statErr, "restore_in_progress stays after a failed restore")
		assert.False(t, f.mysqldRunning(), "mysqld is not started on a damaged restore")
	})

	t.Run("an index damaged in the store", func(t *testing.T) {
		undo := flipByte(t, cfg, splitstorage.PartKey(backupDir, name, laneIndex, 1))
		defer undo()
		code, stdout, stderr := verify(t)
		assert.Equal(t, 1, code, "verify reads every file")
		assert.Regexp(t, `file lanes\.index, part 1 \(\S+\): checksum mismatch`, stdout)
		assert.Contains(t, stderr, "reading its lanes as streams, without their frames")

		logger := logutil.NewMemoryLogger()
		_, err := f.restore(ctx, logger)
		require.NoError(t, err, "a whole restore does not need the index")
		assert.Contains(t, logger.String(), "backup "+name+": reading its lanes as streams, without their frames")
		f.requireSourceData(t, "restore with the index damaged")
	})

	for _, file := range []string{laneIndex, laneFile} {
		t.Run(file+" not served", func(t *testing.T) {
			part := path.Base(splitstorage.PartKey(backupDir, name, file, 1))
			p.ClearMatching()
			p.FailMatching("GET", part, splitstoragetest.Forbidden, 1000)
			defer p.ClearMatching()
			code, stdout, stderr := verify(t)
			assert.Equal(t, 3, code, "not read is not damaged")
			assert.Contains(t, stdout, "file "+file+", part 1")
			assert.Contains(t, stdout, "could not be read or reached, so were not checked (nothing says they are damaged)")
			assert.Contains(t, stdout+stderr, "AccessDenied")
			assert.NotContains(t, stdout+stderr, "problem(s)")
		})
	}

	code, stdout, _ = verify(t)
	require.Equal(t, 0, code, "every edit undone")
	assert.Contains(t, stdout, okLine)
	_, err = f.restore(ctx, nil)
	require.NoError(t, err)
	f.requireSourceData(t, "restore with every edit undone")
}

// rewritePart is a careful hand edit of part n of a backup's file on the
// store: the part, its entry in the file's part index and the completion
// marker's byte count all agree with the edit, so the storage's checksums
// pass. It returns what undoes it.
func rewritePart(t *testing.T, be backend.Backend, name, file string, n int, edit func([]byte) []byte) func() {
	t.Helper()
	get := func(key string) []byte { return getObject(t, be, key) }
	put := func(key string, b []byte) { putObject(t, be, key, b) }
	partKey := splitstorage.PartKey(backupDir, name, file, n)
	indexKey := splitstorage.IndexKey(backupDir, name, file)
	completeKey := backupDir + "/" + name + "/.complete"
	saved := map[string][]byte{partKey: get(partKey), indexKey: get(indexKey), completeKey: get(completeKey)}

	data := edit(bytes.Clone(saved[partKey]))
	var idx splitstorage.Index
	require.NoError(t, json.Unmarshal(saved[indexKey], &idx))
	delta := int64(len(data)) - idx.Parts[n-1].Size
	idx.Parts[n-1] = splitstorage.PartEntryOf(data, idx.BlockSize)
	idx.Size += delta
	var c splitstorage.Complete
	require.NoError(t, json.Unmarshal(saved[completeKey], &c))
	c.Bytes += delta
	put(partKey, data)
	put(indexKey, must(json.Marshal(idx)))
	put(completeKey, must(json.Marshal(c)))
	return func() {
		for k, b := range saved {
			put(k, b)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
