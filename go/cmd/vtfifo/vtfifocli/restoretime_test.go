package vtfifocli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// plantFifo stores a fifo backup's MANIFEST (no lanes: enough for ls)
// with raw stream bytes and redo, on base when base is not "".
func plantFifo(t *testing.T, bs *splitstorage.Storage, dir, name string, raw, redo int64, base string, chainLength int) {
	m := fifobackupengine.Manifest{Source: fifobackupengine.SourceStdout, ToolFlavor: fifobackupengine.FlavorMariabackup, RawBytes: raw,
		Lanes: []fifobackupengine.LaneInfo{{File: "lane-000.xbstream", RawBytes: raw}}}
	m.BackupMethod, m.BackupName = "fifo", name
	m.LSN.To, m.LSN.Last = "1000", strconv.FormatInt(1000+redo, 10)
	if base != "" {
		m.BaseBackup, m.FullBackup, m.ChainLength, m.LSN.From = base, base, chainLength, "900"
	}
	doc, err := json.Marshal(m)
	require.NoError(t, err)
	splitstoragetest.Plant(t, bs, dir, name, string(doc))
}

// TestPredictedRestoreTimes: ls, ls --json and the fleet view predict each
// fifo backup's restore (a delta: its chain's streams, redo and prepares)
// from the latest passed test restores' work and phases, and say from what;
// with no such test restore they say why there is none.
func TestPredictedRestoreTimes(t *testing.T) {
	root := t.TempDir()
	bs := localSplit(t, root)
	ctx := context.Background()
	const mib = 1 << 20
	full, delta := "2026-11-20.000000.zone1-0000000100", "2026-11-21.000000.zone1-0000000100"
	plantFifo(t, bs, "ks/0", full, 1000*mib, 0, "", 0)
	plantFifo(t, bs, "ks/0", delta, 100*mib, 64*mib, full, 1)
	out, _ := runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0")
	assert.Regexp(t, full+`\s.*\s-\s+-\n`, out, "no rates yet: no time, no record")
	assert.Contains(t, out, "\nRestore times: not predicted: no passed test restore has recorded its work and phases yet (vtfifo test-restore records them)\n")

	// Two test restores, of the full (10 s to download 1000 MiB, 2 s of
	// prepare) and of another shard's full with 640 MiB of redo (10 s more
	// of prepare): 100 MiB/s, 2 s per prepare, 64 MiB/s of redo, 3 s start.
	record := func(dir, name string, raw, redo int64, download, prepare float64) {
		bh, err := bs.OpenBackup(ctx, dir, name)
		require.NoError(t, err)
		require.NoError(t, testrestore.Store(ctx, bh, testrestore.Record{Version: 1, Backup: dir + "/" + name, Outcome: testrestore.Passed,
			Started: time.Now(), Work: &fifobackupengine.RestoreWork{StreamBytes: raw, RedoBytes: redo, RedoKnown: true, Prepares: 1},
			Phases: []fifobackupengine.PhaseSeconds{{Phase: "download", Seconds: download}, {Phase: "prepare", Seconds: prepare},
				{Phase: testrestore.PhaseStart, Seconds: 3}, {Phase: testrestore.PhaseCheck, Seconds: 60}}}))
	}
	record("ks/0", full, 1000*mib, 0, 10, 2)
	other := "2026-11-22.000000.zone1-0000000200"
	plantFifo(t, bs, "ks/1", other, 500*mib, 640*mib, "", 0)
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0")
	assert.Contains(t, out, "predicted from the 1 latest passed test restores: download 100 MiB/s, 2.0s per prepare + 64 MiB/s of redo "+
		"(assumed: their redo was too alike to tell), start 3.0s; a replica's catch-up comes on top\n")
	record("ks/1", other, 500*mib, 640*mib, 5, 12)

	// The shard's own view learns from its own test restores: one.
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0", "--json")
	var infos []BackupInfo
	require.NoError(t, json.Unmarshal([]byte(out), &infos), out)
	require.Len(t, infos, 2)
	require.NotNil(t, infos[0].PredictedRestore)
	assert.Equal(t, 15*time.Second, infos[0].PredictedRestore.Total(), "the full, as its own test restore took it")
	// The delta restores 1100 MiB in 11 s, prepares twice (4 s) and
	// applies 64 MiB of redo at the assumed 64 MiB/s (1 s), starts in 3 s:
	// more than the 1000 MiB the shard's one test restore learned from.
	require.NotNil(t, infos[1].PredictedRestore)
	assert.Equal(t, fifobackupengine.PredictedRestore{Download: 11 * time.Second, Prepare: 5 * time.Second, Start: 3 * time.Second, Beyond: true},
		*infos[1].PredictedRestore)
	out, _ = runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0")
	assert.Regexp(t, delta+`\s.*\s~19s\?\s`, out, "the delta's time: larger than what it learned from")

	// The fleet view learns from every shard's: the redo rate is fitted.
	out, _ = runSplit(t, 0, root, "ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6, out)
	assert.Regexp(t, `^KEYSPACE/SHARD\s+BACKUPS\s+NEWEST\s+AGE\s+CHAIN\s+RESTORE-TIME\s+NEWEST-PROVEN`, lines[0])
	assert.Regexp(t, `^ks/0\s+2\s+`+delta+`\s+\S+\s+1\s+~19s\?\s+`+full+`\s`, lines[1], "11 s + 2 x 2 s + 64 MiB at 64 MiB/s + 3 s; "+
		"1100 MiB, more than any of the test restores")
	assert.Regexp(t, `^ks/1\s+1\s+`+other+`\s+\S+\s+0\s+~20s\s+`+other+`\s`, lines[2], "5 s + 2 s + 640 MiB at 64 MiB/s + 3 s")
	assert.Equal(t, "Restore times: predicted from the 2 latest passed test restores: download 100 MiB/s, 2.0s per prepare + 64 MiB/s "+
		"of redo, start 3.0s; a replica's catch-up comes on top", lines[4])
	out, _ = runSplit(t, 0, root, "ls", "--prometheus")
	assert.Contains(t, out, `vtfifo_backup_newest_predicted_restore_seconds{keyspace="ks",shard="0"} 19`+"\n")
}

// TestTestRestoreSaysHowCloseItsPredictionCame: a record with a prediction
// compares it with its download, prepare and start (not its check).
func TestTestRestoreSaysHowCloseItsPredictionCame(t *testing.T) {
	rec := testrestore.Record{Outcome: testrestore.Passed, Phases: []fifobackupengine.PhaseSeconds{{Phase: "download", Seconds: 4},
		{Phase: "prepare", Seconds: 1}, {Phase: testrestore.PhaseStart, Seconds: 1}, {Phase: testrestore.PhaseCheck, Seconds: 30}}}
	assert.Equal(t, 6*time.Second, rec.Served())
	assert.Empty(t, predictionText(rec), "nothing predicted it")
	rec.Predicted = &fifobackupengine.PredictedRestore{Download: 3 * time.Second, Prepare: 1 * time.Second, Start: time.Second}
	assert.Equal(t, "; served in 6s, predicted 5s by the earlier test restores (20 % longer)", predictionText(rec))
	rec.Predicted.Download = 7 * time.Second
	assert.Equal(t, "; served in 6s, predicted 9s by the earlier test restores (33 % shorter)", predictionText(rec))
}

// TestPredictionNeedsTheWholeChain: a delta whose base is not in the shard
// (removed by hand), or whose MANIFEST claims a chain longer than the shard
// holds, is not predicted; the others are.
func TestPredictionNeedsTheWholeChain(t *testing.T) {
	root := t.TempDir()
	bs := localSplit(t, root)
	const mib = 1 << 20
	full, orphan, liar := "2026-11-20.000000.zone1-0000000100", "2026-11-21.000000.zone1-0000000100", "2026-11-22.000000.zone1-0000000100"
	plantFifo(t, bs, "ks/0", full, 100*mib, 0, "", 0)
	plantFifo(t, bs, "ks/0", orphan, 10*mib, 0, "2026-11-19.000000.zone1-0000000100", 1)
	plantFifo(t, bs, "ks/0", liar, 10*mib, 0, full, 1<<40)
	bh, err := bs.OpenBackup(context.Background(), "ks/0", full)
	require.NoError(t, err)
	require.NoError(t, testrestore.Store(context.Background(), bh, testrestore.Record{Version: 1, Backup: "ks/0/" + full, Outcome: testrestore.Passed, Started: time.Now(),
		Work:   &fifobackupengine.RestoreWork{StreamBytes: 100 * mib, RedoKnown: true, Prepares: 1},
		Phases: []fifobackupengine.PhaseSeconds{{Phase: "download", Seconds: 1}, {Phase: "prepare", Seconds: 1}}}))
	out, _ := runSplit(t, 0, root, "ls", "--keyspace=ks", "--shard=0", "--json")
	var infos []BackupInfo
	require.NoError(t, json.Unmarshal([]byte(out), &infos), out)
	require.Len(t, infos, 3)
	assert.NotNil(t, infos[0].PredictedRestore, full)
	assert.Nil(t, infos[1].PredictedRestore, orphan)
	assert.Nil(t, infos[2].PredictedRestore, liar)
}
