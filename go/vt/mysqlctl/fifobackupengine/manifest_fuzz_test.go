package fifobackupengine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manifestSeed is a MANIFEST as the engine writes one (3 zstd lanes).
const manifestSeed = `{"BackupMethod":"fifo","Position":"MariaDB/0-1-42","PurgedPosition":"","FromPosition":"","Incremental":false,` +
	`"BackupTime":"2026-02-01T10:00:00Z","FinishedTime":"2026-02-01T10:01:00Z","ServerUUID":"","TabletAlias":"zone1-0000000101","Keyspace":"ks",` +
	`"Shard":"0","MySQLVersion":"10.11.11-MariaDB","UpgradeSafe":true,"Source":"stdout","Lanes":[{"File":"lane-000.xbstream.zst","RawBytes":100,` +
	`"StoredBytes":40,"Chunks":3},{"File":"lane-001.xbstream.zst","RawBytes":200,"StoredBytes":60,"Chunks":4,"StreamCRC32C":"0a1b2c3d"},{"File":"lane-002.xbstream.zst",` +
	`"RawBytes":300,"StoredBytes":90}],"RawBytes":600,"StoredBytes":190,"Compressed":true,"CompressionEngine":"zstd","CompressionLevel":1,` +
	`"CompressionExtension":".zst","ToolFlavor":"mariabackup","ToolVersion":"10.11.11","LSN":{"BackupType":"full-backuped","To":"12345"}}`

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest([]byte(manifestSeed))
	require.NoError(t, err)
	assert.Len(t, m.Lanes, 3)
	assert.Equal(t, "0-1-42", m.Position.String())

	for edit, want := range map[string]string{
		`"RawBytes":600`:                 "not the sums over the lanes",
		`"StoredBytes":40`:               "not the sums over the lanes",
		`"RawBytes":100`:                 "negative byte or chunk count",
		`"CompressionEngine":"zstd"`:     "writes \".lz4\" files",
		`"CompressionExtension":".zst"`:  "lane 0 has file name",
		`"BackupMethod":"fifo"`:          "BackupMethod",
		`"File":"lane-001.xbstream.zst"`: "lane 1 has file name",
		`"Source":"stdout"`:              "unknown source",
		`"Compressed":true`:              "not compressed but CompressionExtension",
		`"Position":"MariaDB/0-1-42"`:    "MANIFEST",
		`"StreamCRC32C":"0a1b2c3d"`:      `lane 1 (lane-001.xbstream.zst) has StreamCRC32C "0A1B2C3D": not 8 lower-case hex digits`,
	} {
		replacement := map[string]string{
			`"RawBytes":600`:                 `"RawBytes":601`,
			`"StoredBytes":40`:               `"StoredBytes":41`,
			`"RawBytes":100`:                 `"RawBytes":-100`,
			`"CompressionEngine":"zstd"`:     `"CompressionEngine":"lz4"`,
			`"CompressionExtension":".zst"`:  `"CompressionExtension":".gz"`,
			`"BackupMethod":"fifo"`:          `"BackupMethod":"xtrabackup"`,
			`"File":"lane-001.xbstream.zst"`: `"File":"../lane-001.xbstream.zst"`,
			`"Source":"stdout"`:              `"Source":"tape"`,
			`"Compressed":true`:              `"Compressed":false`,
			`"Position":"MariaDB/0-1-42"`:    `"Position":"MariaDB/not-a-gtid"`,
			`"StreamCRC32C":"0a1b2c3d"`:      `"StreamCRC32C":"0A1B2C3D"`,
		}[edit]
		doc := strings.Replace(manifestSeed, edit, replacement, 1)
		require.NotEqual(t, manifestSeed, doc, edit)
		_, err := ParseManifest([]byte(doc))
		require.Error(t, err, "edit %s -> %s accepted", edit, replacement)
		assert.Contains(t, err.Error(), want, "edit %s -> %s", edit, replacement)
	}
	_, err = ParseManifest([]byte(manifestSeed + `{}`))
	require.ErrorContains(t, err, "data after")
}

// FuzzManifest: ParseManifest (what restore and fifoverify run on a stored
// MANIFEST) never panics, and what it accepts is safe to use: lane names are
// the engine's own (no path can leave the backup), 1..64 lanes, totals add up,
// and it survives a re-encode.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(manifestSeed))
	f.Add([]byte(strings.Replace(manifestSeed, `"Compressed":true`, `"Compressed":false`, 1)))
	f.Add([]byte(`{"BackupMethod":"fifo","Lanes":[{"File":"lane-000.xbstream"}],"Source":"fifo","ToolFlavor":"xtrabackup"}`))
	f.Add([]byte(`{"BackupMethod":"fifo","Position":"MySQL56/00000000-0000-0000-0000-000000000000:1-5","Lanes":[]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		m, err := ParseManifest(doc)
		if err != nil {
			return
		}
		if len(m.Lanes) < 1 || len(m.Lanes) > maxLanes {
			t.Fatalf("accepted %d lanes", len(m.Lanes))
		}
		var raw int64
		for i, l := range m.Lanes {
			if l.File != laneFileName(i, m.CompressionExtension) || strings.ContainsAny(l.File, "/\\\x00") || strings.Contains(l.File, "..") {
				t.Fatalf("accepted lane %d file %q", i, l.File)
			}
			raw += l.RawBytes
		}
		if raw != m.RawBytes {
			t.Fatalf("accepted RawBytes %d, lanes add up to %d", m.RawBytes, raw)
		}
		again, err := json.Marshal(m)
		require.NoError(t, err)
		_, err = ParseManifest(again)
		require.NoError(t, err, "re-encoded MANIFEST refused: %s", again)
	})
}
