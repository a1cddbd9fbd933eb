package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// runVerify runs the fifoverify binary against the fixture's storage.
func runVerify(t testing.TB, cfg splitstorage.Config, env []string, args ...string) (int, string) {
	t.Helper()
	argv := append([]string{"--backup-storage-implementation=split", "--keyspace=" + keyspace, "--shard=" + shard, "--progress=never"}, cfg.Args()...)
	argv = append(argv, args...)
	cmd := exec.Command(fifoverifyBin, argv...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "fifoverify did not run: %v", err)
		code = ee.ExitCode()
	}
	return code, string(out)
}

// TestCorruptionDetected: one flipped byte, one truncated part, one missing
// part, a MANIFEST edited by hand (bytes only, and a careful edit with its
// index fixed up), a part index edited by hand. For each, fifoverify exits 1
// naming the backup, file and part (or lane and offset), the restore fails
// naming the same damage, and mysqld is not started on the partial data
// (restore_in_progress stays). With the damage undone, fifoverify says OK
// and the restore gives back the source data.
func TestCorruptionDetected(t *testing.T) {
	f := newFixture(t)
	cfg := splitstoragetest.Local(t).Config
	cfg.PartSize = 1 << 20
	f.useStorage(t, cfg)
	ctx := context.Background()
	require.NoError(t, f.backup(ctx, nil))
	names := f.list(t)
	require.Len(t, names, 1)
	name := names[0]
	bdir := filepath.Join(cfg.File.Root, backupDir, name)
	key := func(file string, part int) string {
		return filepath.Join(cfg.File.Root, filepath.FromSlash(splitstorage.PartKey(backupDir, name, file, part)))
	}
	idxPath := func(file string) string {
		return filepath.Join(cfg.File.Root, filepath.FromSlash(splitstorage.IndexKey(backupDir, name, file)))
	}
	entries, err := os.ReadDir(bdir)
	require.NoError(t, err)
	var objs []string
	for _, e := range entries {
		objs = append(objs, e.Name())
	}
	t.Logf("backup %s: %d objects: %s", name, len(objs), strings.Join(objs, " "))

	code, out := runVerify(t, cfg, nil)
	require.Equal(t, 0, code, "fifoverify on the good backup:\n%s", out)
	require.Contains(t, out, "OK: backup "+backupDir+"/"+name)
	t.Logf("good backup: %s", strings.TrimSpace(out))

	type damage struct {
		name  string
		apply func(t *testing.T)
		want  []string // in both fifoverify's output and restore's error
	}
	save := func(t *testing.T, path string) []byte {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, os.WriteFile(path, b, 0o640)) })
		return bytes.Clone(b)
	}
	rewriteWithIndex := func(t *testing.T, file string, data []byte) {
		// A careful hand edit: the part and its index entry both updated.
		require.LessOrEqual(t, len(data), int(cfg.PartSize))
		p := key(file, 1)
		old := save(t, p)
		ip := idxPath(file)
		doc := save(t, ip)
		var idx splitstorage.Index
		require.NoError(t, json.Unmarshal(doc, &idx))
		require.Len(t, idx.Parts, 1)
		idx.Parts[0] = splitstorage.PartEntryOf(data, idx.BlockSize)
		idx.Size = int64(len(data))
		nd, _ := json.Marshal(idx)
		require.NoError(t, os.WriteFile(p, data, 0o640))
		require.NoError(t, os.WriteFile(ip, nd, 0o640))
		// ... and the completion marker's byte count.
		cp := filepath.Join(bdir, ".complete")
		cdoc := save(t, cp)
		var c splitstorage.Complete
		require.NoError(t, json.Unmarshal(cdoc, &c))
		c.Bytes += int64(len(data)) - int64(len(old))
		nc, _ := json.Marshal(c)
		require.NoError(t, os.WriteFile(cp, nc, 0o640))
	}
	damages := []damage{
		{"flipped byte", func(t *testing.T) {
			b := save(t, key("lane-001.xbstream.zst", 1))
			b[len(b)/2] ^= 0x10
			require.NoError(t, os.WriteFile(key("lane-001.xbstream.zst", 1), b, 0o640))
		}, []string{"file lane-001.xbstream.zst, part 1", "checksum mismatch"}},
		{"truncated part", func(t *testing.T) {
			b := save(t, key("lane-000.xbstream.zst", 1))
			require.NoError(t, os.WriteFile(key("lane-000.xbstream.zst", 1), b[:len(b)-100], 0o640))
		}, []string{"file lane-000.xbstream.zst, part 1", "size mismatch"}},
		{"missing part", func(t *testing.T) {
			save(t, key("lane-002.xbstream.zst", 1))
			require.NoError(t, os.Remove(key("lane-002.xbstream.zst", 1)))
		}, []string{"file lane-002.xbstream.zst, part 1", "part missing"}},
		{"MANIFEST bytes edited", func(t *testing.T) {
			b := save(t, key("MANIFEST", 1))
			nb := bytes.Replace(b, []byte(`"stdout"`), []byte(`"stdouT"`), 1)
			require.NotEqual(t, b, nb)
			require.NoError(t, os.WriteFile(key("MANIFEST", 1), nb, 0o640))
		}, []string{"file MANIFEST, part 1", "checksum mismatch"}},
		{"MANIFEST edited with its index", func(t *testing.T) {
			b, err := os.ReadFile(key("MANIFEST", 1))
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal(b, &m))
			m["Lanes"].([]any)[1].(map[string]any)["RawBytes"] = m["Lanes"].([]any)[1].(map[string]any)["RawBytes"].(float64) + 1
			nb, _ := json.Marshal(m)
			rewriteWithIndex(t, "MANIFEST", nb)
		}, []string{"MANIFEST", "RawBytes", "not the sums over the lanes"}},
		{"MANIFEST lane lengths edited consistently", func(t *testing.T) {
			b, err := os.ReadFile(key("MANIFEST", 1))
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal(b, &m))
			lane := m["Lanes"].([]any)[1].(map[string]any)
			lane["RawBytes"] = lane["RawBytes"].(float64) + 1
			m["RawBytes"] = m["RawBytes"].(float64) + 1
			nb, _ := json.Marshal(m)
			rewriteWithIndex(t, "MANIFEST", nb)
		}, []string{"lane 1 (lane-001.xbstream.zst): read", "the MANIFEST says"}},
		{"part index edited", func(t *testing.T) {
			ip := idxPath("lane-001.xbstream.zst")
			doc := save(t, ip)
			var idx splitstorage.Index
			require.NoError(t, json.Unmarshal(doc, &idx))
			idx.Parts[0].CRC32C ^= 1
			nd, _ := json.Marshal(idx)
			require.NoError(t, os.WriteFile(ip, nd, 0o640))
		}, []string{"file lane-001.xbstream.zst, part 1", "checksum mismatch"}},
		{"part index sizes edited", func(t *testing.T) {
			ip := idxPath("lane-000.xbstream.zst")
			doc := save(t, ip)
			var idx splitstorage.Index
			require.NoError(t, json.Unmarshal(doc, &idx))
			idx.Size += 10
			nd, _ := json.Marshal(idx)
			require.NoError(t, os.WriteFile(ip, nd, 0o640))
		}, []string{"file lane-000.xbstream.zst", "corrupt index"}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			d.apply(t)
			start := time.Now()
			code, out := runVerify(t, cfg, nil)
			t.Logf("fifoverify (%v, exit %d):\n%s", time.Since(start).Round(time.Millisecond), code, out)
			assert.Equal(t, 1, code, "fifoverify must exit 1 on a damaged backup")
			assert.Contains(t, out, "FAIL: backup "+backupDir+"/"+name)
			for _, w := range d.want {
				assert.Contains(t, out, w, "fifoverify output names the damage")
			}

			logger := logutil.NewMemoryLogger()
			_, err := f.restore(ctx, logger)
			require.Error(t, err, "restore of a damaged backup must fail")
			t.Logf("restore error: %v", err)
			// Vitess itself reads the MANIFEST to pick the backup: when it
			// cannot, it logs why and fails with "none are complete".
			said := err.Error() + "\n" + logger.String()
			assert.Contains(t, said, name, "the restore error or log names the backup")
			for _, w := range d.want {
				assert.Contains(t, said, w, "the restore error or log names the damage")
			}
			if !strings.HasPrefix(d.name, "MANIFEST bytes") { // Vitess picks a backup whose MANIFEST reads
				assert.Contains(t, logger.String(), "fifo restore: "+name+", the backup Vitess picked, cannot be restored: ", "the log says how to "+
					"have Vitess pick an older backup")
				assert.Contains(t, logger.String(), "vtfifo test-restore --backup="+name+" fails on the same and quarantines it")
			}
			_, statErr := os.Stat(filepath.Join(f.tb.Cnf.TabletDir(), mysqlctl.RestoreState))
			assert.NoError(t, statErr, "restore_in_progress must stay after a failed restore")
			assert.False(t, f.mysqldRunning(), "mysqld must not be started on a damaged restore")
		})
	}

	// Undone (the subtests' cleanups restored every object): good again.
	code, out = runVerify(t, cfg, nil)
	require.Equal(t, 0, code, "fifoverify after undoing the damage:\n%s", out)
	_, err = f.restore(ctx, nil)
	require.NoError(t, err)
	f.requireSourceData(t, "restore after the damage was undone")

	// --sample checks a subset of parts, and still sees a missing part.
	code, out = runVerify(t, cfg, nil, "--sample=50%", "--sample-seed=7")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "parts checked")
	b, err := os.ReadFile(key("lane-002.xbstream.zst", 1))
	require.NoError(t, err)
	require.NoError(t, os.Remove(key("lane-002.xbstream.zst", 1)))
	code, out = runVerify(t, cfg, nil, "--sample=1%")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "part missing")
	require.NoError(t, os.WriteFile(key("lane-002.xbstream.zst", 1), b, 0o640))
}
