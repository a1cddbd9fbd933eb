package vtfifocli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestInvalidFlags: every bad value stops fifoverify at startup (exit 2)
// with a message naming the flag and the allowed values.
func TestInvalidFlags(t *testing.T) {
	root := t.TempDir()
	// Flag variables are process globals: every case sets what others change.
	base := []string{"--backup-storage-implementation=split", "--split-storage-backend=file", "--split-storage-part-size=4MiB",
		"--split-storage-upload-concurrency=2", "--split-storage-root=" + root, "--keyspace=ks", "--shard=0"}
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--sample=0%"}, []string{"--sample", "(0%, 100%]"}},
		{[]string{"--sample=101%"}, []string{"--sample", "(0%, 100%]"}},
		{[]string{"--sample=lots"}, []string{"--sample", "(0%, 100%]"}},
		{[]string{"--progress=sometimes"}, []string{"--progress", "auto, always, never"}},
		{[]string{"--progress-interval=1ms"}, []string{"--progress-interval", "100ms or more"}},
		{[]string{"--concurrency=0"}, []string{"--concurrency", "1..64"}},
		{[]string{"--concurrency=65"}, []string{"--concurrency", "1..64"}},
		{[]string{"--timeout=-1s"}, []string{"--timeout"}},
		{[]string{"--incomplete-min-age=-1h"}, []string{"--incomplete-min-age"}},
		{[]string{"--backup=../other"}, []string{"--backup", "no '/'"}},
		{[]string{"--backup=.started"}, []string{"--backup", "not starting with '.'"}},
		{[]string{"--backup=a\\b"}, []string{`invalid value "a\\b" for --backup: allowed values are a backup name as GetBackups lists it`}},
		{[]string{"--backup=a\x01"}, []string{"--backup", "control characters"}},
		{[]string{"--shard=0/"}, []string{`invalid value "0/" for --shard: allowed values are a shard name as Vitess spells it: one name, without '/'`}},
		{[]string{"--shard=.0"}, []string{`invalid value "ks/.0" for --keyspace/--shard: allowed values are a keyspace/shard path`}},
		{[]string{"--list-incomplete", "--remove-incomplete"}, []string{"exclusive"}},
		{[]string{"--backup-storage-implementation=tape"}, []string{"--backup-storage-implementation", "split", "file"}},
		{[]string{"--split-storage-backend=tape"}, []string{"--split-storage-backend"}},
		{[]string{"--split-storage-part-size=1KiB"}, []string{"--split-storage-part-size"}},
		{[]string{"--split-storage-upload-concurrency=0"}, []string{"--split-storage-upload-concurrency"}},
		{[]string{"--backup-storage-implementation=file", "--sample=5%"}, []string{"--sample", "split"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Verify(context.Background(), "fifoverify", append(append([]string{}, base...), tc.args...), &out, &errOut)
			assert.Equal(t, 2, code, "stdout: %s\nstderr: %s", out.String(), errOut.String())
			for _, w := range tc.want {
				assert.Contains(t, errOut.String(), w)
			}
		})
	}
	t.Run("no keyspace", func(t *testing.T) {
		var out, errOut bytes.Buffer
		code := Verify(context.Background(), "fifoverify", []string{"--backup-storage-implementation=split", "--split-storage-root=" + root}, &out, &errOut)
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut.String(), "--keyspace and --shard (or --backup-dir) are required")
	})
	// A directory the split storage would refuse fails as a usage error
	// naming the flag, never as a storage that cannot be read (exit 3).
	for _, dir := range []string{"../../etc", "/ks/0", "ks//0", "ks/0/", "ks/./0", "ks/.0", "ks\\0"} {
		t.Run("backup-dir "+dir, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Verify(context.Background(), "fifoverify", []string{"--backup-storage-implementation=split", "--split-storage-root=" + root,
				"--backup-dir=" + dir}, &out, &errOut)
			assert.Equal(t, 2, code)
			assert.Contains(t, errOut.String(), fmt.Sprintf("invalid value %q for --backup-dir: allowed values are a keyspace/shard path: names "+
				"joined by single '/', none empty or starting with '.', without '..', backslashes or control characters", dir))
			assert.Empty(t, out.String())
		})
	}
}

// TestVerifyAllSampleAndTimeout: --all checks every complete backup (one
// line each, exit 1 when one is damaged); a sample so small it picks no
// part still reads one; a check cut short by --timeout is exit 3, not
// damage.
func TestVerifyAllSampleAndTimeout(t *testing.T) {
	root := t.TempDir()
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root, cfg.PartSize = root, 1<<20
	splitCopyAs(t, cfg, "2026-11-20.000000.zone1-0000000100")
	splitCopyAs(t, cfg, "2026-11-21.000000.zone1-0000000100")
	args := []string{"--split-storage-part-size=1MiB", "--keyspace=ks", "--shard=0", "--progress=never"}
	verify := func(code int, extra ...string) (string, string) {
		return runSplit(t, code, root, append(append([]string{"verify"}, args...), extra...)...)
	}

	out, _ := verify(0, "--all")
	assert.Regexp(t, `^OK: backup ks/0/2026-11-20.000000.zone1-0000000100: .*\nOK: backup ks/0/2026-11-21.000000.zone1-0000000100: .*\n$`, out)

	out, errOut := verify(0, "--sample=0.0001%", "--sample-seed=3")
	assert.Regexp(t, `^OK: backup ks/0/2026-11-21.000000.zone1-0000000100: \d+ files, 1 of \d+ parts checked`, out)
	assert.Contains(t, errOut, "sampling 0.0001% of the parts (--sample-seed=3)")

	part := filepath.Join(root, "ks", "0", "2026-11-21.000000.zone1-0000000100", "lane-001.xbstream.zst.part-00000001")
	b, err := os.ReadFile(part)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(part, b, 0o644))
	out, _ = verify(1, "--all")
	assert.Regexp(t, `^OK: backup ks/0/2026-11-20.000000.zone1-0000000100: .*\nFAIL: backup ks/0/2026-11-21.000000.zone1-0000000100: `, out)

	// Three damaged parts: a full check names each (decoding stops at the first).
	for _, p := range []string{"lane-000.xbstream.zst.part-00000001", "lane-002.xbstream.zst.part-00000001"} {
		p = filepath.Join(root, "ks", "0", "2026-11-21.000000.zone1-0000000100", p)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		b[len(b)/3] ^= 0xff
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	out, _ = verify(1, "--backup=2026-11-21.000000.zone1-0000000100")
	assert.Contains(t, out, "FAIL: backup ks/0/2026-11-21.000000.zone1-0000000100: 3 problem(s)")
	assert.Regexp(t, `(?s)file lane-000.xbstream.zst, part 1 .*: checksum mismatch.*file lane-001.xbstream.zst, part 1 .*file lane-002.xbstream.zst, part 1 `, out,
		"every damaged part, in order")

	out, _ = verify(1, "--all", "--json")
	var results []VerifyResult
	require.NoError(t, json.Unmarshal([]byte(out), &results), out)
	require.Len(t, results, 2)
	assert.True(t, results[0].OK)
	assert.Contains(t, results[0].Summary, "every part and chunk checked")
	assert.False(t, results[1].OK)
	assert.Equal(t, "ks/0/2026-11-21.000000.zone1-0000000100", results[1].Backup)
	assert.NotEmpty(t, results[1].Problems)

	out, errOut = verify(3, "--timeout=1ns")
	assert.Empty(t, out)
	assert.Contains(t, errOut, "context deadline exceeded")

	_, errOut = verify(2, "--all", "--backup=x")
	assert.Equal(t, "vtfifo verify: --all checks every complete backup: leave out --backup, --list-incomplete and --remove-incomplete\n", errOut)
}

// TestABackupThatIsNotWhatItsManifestSaysFails: a lane whose stream is not
// the one its MANIFEST recorded (length and CRC-32C) and a MANIFEST whose
// replication position is not the one the backup's own xtrabackup_info
// records fail verify and restore, exit 1, naming backup, lane and
// positions on the command's output, nothing restored; the backup as
// written verifies. On Vitess's file storage, which has no checksums of its
// own: the MANIFEST is edited in place.
func TestABackupThatIsNotWhatItsManifestSaysFails(t *testing.T) {
	root, args := storageCopy(t)
	name := "2026-11-23.050519.zone1-0000004989"
	path := filepath.Join(root, "ks", "0", name, "MANIFEST")
	written, err := os.ReadFile(path)
	require.NoError(t, err)
	edit := func(change func(m map[string]any)) {
		var m map[string]any
		require.NoError(t, json.Unmarshal(written, &m))
		change(m)
		doc, err := json.Marshal(m)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, doc, 0o640))
	}
	for _, c := range []struct {
		what   string
		change func(m map[string]any)
		want   string
	}{
		{"a lane's CRC-32C", func(m map[string]any) { m["Lanes"].([]any)[1].(map[string]any)["StreamCRC32C"] = "0badc0de" },
			"backup " + name + ": lane 1 (lane-001.xbstream.zst): its stream's CRC-32C is "},
		{"the position", func(m map[string]any) { m["Position"] = "MariaDB/0-1509955704-403" },
			"backup " + name + ": the MANIFEST gives position MariaDB/0-1509955704-403, but its own xtrabackup_info records " +
				"MariaDB/0-1509955704-404: a server restored from it would replicate from the wrong transaction (the MANIFEST was edited, or is another backup's)"},
	} {
		t.Run(c.what, func(t *testing.T) {
			edit(c.change)
			stdout, stderr := runArgs(t, 1, append([]string{"verify", "--quiet"}, args...)...)
			assert.Contains(t, stdout, "FAIL: backup ks/0/"+name+": 1 problem(s)")
			assert.Contains(t, stdout, c.want)
			assert.Empty(t, stderr)

			target := filepath.Join(t.TempDir(), "restored")
			stdout, stderr = runArgs(t, 1, append([]string{"restore", "--quiet", "--target-dir=" + target}, args...)...)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, "vtfifo restore: FAIL: fifo restore of backup "+name+" into "+target+" failed: ")
			assert.Contains(t, stderr, c.want)
			assert.NoDirExists(t, target)
		})
	}
	require.NoError(t, os.WriteFile(path, written, 0o640))
	runArgs(t, 0, append([]string{"verify", "--quiet"}, args...)...)
}

// TestAFrameThatIsNotItsIndexsFailsATableRestore: a table restore reads
// the frames the lane index names, not whole lanes, and checks each
// frame's bytes against the CRC-32C the index records for it. Here the test
// backup gets an index of one frame a lane (as a backup of lanes under a
// frame's size has) whose CRC-32Cs are not the lanes': restore-table is
// exit 1 naming backup, lane and frame, and says verify tells a damaged
// lane from a wrong index; nothing is left. Verify reads the whole lanes,
// finds them good and says the index is what is wrong.
func TestAFrameThatIsNotItsIndexsFailsATableRestore(t *testing.T) {
	root, args := storageCopy(t)
	name := "2026-11-23.050519.zone1-0000004989"
	dir := filepath.Join(root, "ks", "0", name)
	var m map[string]any
	require.NoError(t, json.Unmarshal(must(os.ReadFile(filepath.Join(dir, "MANIFEST"))), &m))
	lanes := m["Lanes"].([]any)
	ix := fifobackupengine.LaneIndex{Version: 1, FrameSize: 1 << 20}
	held := map[string]bool{}
	var laneFiles [][]string
	var sums []string
	for i := range lanes {
		z := must(os.Open(filepath.Join(dir, lanes[i].(map[string]any)["File"].(string))))
		d := must(zstd.NewReader(z))
		stream := must(io.ReadAll(d))
		d.Close()
		z.Close()
		var files []string
		r := xbstream.NewReader(bytes.NewReader(stream))
		for c, err := r.Next(); err != io.EOF; c, err = r.Next() {
			require.NoError(t, err)
			if c.Path != "" && !slices.Contains(files, c.Path) {
				files, held[c.Path] = append(files, c.Path), true
			}
		}
		laneFiles = append(laneFiles, files)
		sums = append(sums, fmt.Sprintf("%08x", crc32.Checksum(stream, crc32.MakeTable(crc32.Castagnoli))))
	}
	for p := range held {
		ix.Paths = append(ix.Paths, p)
	}
	slices.Sort(ix.Paths)
	for i, files := range laneFiles {
		fr := fifobackupengine.Frame{CRC32C: "0badc0de"}
		for _, p := range files {
			fr.Paths = append(fr.Paths, slices.Index(ix.Paths, p))
		}
		slices.Sort(fr.Paths)
		ix.Lanes = append(ix.Lanes, []fifobackupengine.Frame{fr})
		require.NotEqual(t, "0badc0de", sums[i])
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lanes.index"), must(json.Marshal(ix)), 0o640))
	m["LaneIndex"] = "lanes.index"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "MANIFEST"), must(json.Marshal(m)), 0o640))

	// The restore fails before any prepare: a prepare would fail the test.
	tool := standInTool(t, "exit 9")
	target := filepath.Join(t.TempDir(), "tables")
	stdout, stderr := runArgs(t, 1, append([]string{"restore-table", "--table=sample.t0001", "--target-dir=" + target, "--quiet",
		"--fifo-backup-tool-path=" + tool}, args...)...)
	assert.Empty(t, stdout)
	assert.Regexp(t, `backup `+name+`: lane \d \(lane-00\d\.xbstream\.zst\): frame 0 \(stream bytes 0 to \d+\): its CRC-32C is [0-9a-f]{8}, `+
		`the lane index says 0badc0de: some of its bytes are not those the backup wrote`, stderr)
	assert.Contains(t, stderr, "(a damaged lane, or an index that does not match it: vtfifo verify reads the whole lanes and says which; a whole "+
		"restore does not need the index)")
	assert.NoDirExists(t, target)

	stdout, stderr = runArgs(t, 1, append([]string{"verify", "--quiet"}, args...)...)
	assert.Contains(t, stdout, "FAIL: backup ks/0/"+name+": 1 problem(s)")
	assert.Contains(t, stdout, "table restores cannot use this backup's lane index (a whole restore does not need it): backup "+name+
		": lane-000.xbstream.zst does not match the lane index: frame 0 (stream bytes 0 to "+fmt.Sprint(int64(lanes[0].(map[string]any)["RawBytes"].(float64)))+
		"): its CRC-32C is "+sums[0]+", the lane index says 0badc0de")
	assert.Empty(t, stderr)
}
