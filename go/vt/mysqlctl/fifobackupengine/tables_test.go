package fifobackupengine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// nonInnoDB are the files of tables of other engines: MariaDB's Aria and
// CSV, MySQL 8's MyISAM (an .sdi, no .frm), ARCHIVE, a partitioned Aria.
var nonInnoDB = []string{
	"db/aria.frm", "db/aria.MAD", "db/aria.MAI", "db/csv.frm", "db/csv.CSV", "db/csv.CSM",
	"db/my8_123.sdi", "db/my8.MYD", "db/my8.MYI", "db/arz.frm", "db/arz.ARZ",
	"db/ariap.frm", "db/ariap.par", "db/ariap#P#p0.MAD", "db/ariap#P#p0.MAI",
}

func TestTablePatternsAndFiles(t *testing.T) {
	_, err := ParseTablePatterns([]string{"nodot"})
	require.ErrorContains(t, err, `invalid value "nodot" for --table`)
	_, err = ParseTablePatterns(nil)
	require.ErrorContains(t, err, "--table is required")
	for spec, want := range map[string]TablePattern{"`my.db`.`t.1`": {"my.db", "t.1"}, "d.`a``b`": {"d", "a`b"}, "`d`.*": {"d", "*"}} {
		ps, err := ParseTablePatterns([]string{spec})
		require.NoError(t, err, spec)
		assert.Equal(t, []TablePattern{want}, ps, spec)
	}
	for _, spec := range []string{"a.b.c", "`a.b", "a.`b", "`a`b.c", "d.", ".t", "``.t"} {
		_, err := ParseTablePatterns([]string{spec})
		require.ErrorContains(t, err, "invalid value", spec)
	}
	ps, err := ParseTablePatterns([]string{"db.t", "db2.*"})
	require.NoError(t, err)
	s := &tableSubset{patterns: ps}

	for p, want := range map[string]bool{
		"ibdata1": true, "ib_logfile0": true, "xtrabackup_checkpoints": true, "backup-my.cnf": true, "undo001": true,
		"mysql.ibd": true, "undo_001": true, "undos/u1.ibu": true, "xtrabackup_logfile": true,
		"db/t.ibd": true, "db/t.frm": true, "db/t.ibd.delta": true, "db/t.ibd.meta": true, "db/t#P#p0.ibd": true, "db/t#p#p1.ibd": true,
		"db/tt.ibd": false, "db/t2.ibd": false, "db/db.opt": false, "db/#sql-1.ibd": false, "other/t.ibd": false, "mysql/user.MAD": false,
		"db2/a.ibd": true, "db2/b.frm": true,
		// A FULLTEXT index's tablespaces are no table's.
		"db2/FTS_0000000000000437_00000000000004a2_INDEX_1.ibd": false, "db2/FTS_0000000000000437_CONFIG.ibd": false,
		"db2/fts_0000000000000437_being_deleted_cache.ibd": false, "db2/FTS_notanid_CONFIG.ibd": true,
	} {
		assert.Equal(t, want, s.wants(p), p)
	}
	// Percona's DDL tracker with --lock-ddl=REDUCED (ddl_tracker.cc): a
	// table recopied as t.ibd.new is the table's; the markers by space id
	// name no table and go with every subset.
	for p, want := range map[string]bool{"db/t.ibd.new": true, "db/t#p#p1.ibd.new": true, "db/t.ibd.corrupt": true, "db/tt.ibd.new": false,
		"db/1234.ibd.del": true, "db/77.ibd.ren": true, "9.ibu.del": true, "other/88.ibd.del": true, "db/12a.ibd.del": false} {
		assert.Equal(t, want, s.wants(p), p)
	}
	db, table, ext, _, ok := tableOf("db/t#p#p1.ibd.new")
	assert.True(t, ok)
	assert.Equal(t, []any{"db", "t", "new"}, []any{db, table, ext})
	_, _, _, _, ok = tableOf("db/1234.ibd.del")
	assert.False(t, ok, "a marker by space id is no table's (a table named 1234 would be 1234.ibd)")

	db, table, ext, part, ok := tableOf("my@002ddb/t@0024x#P#p3.ibd")
	assert.True(t, ok)
	assert.Equal(t, []any{"my-db", "t$x", "ibd", true}, []any{db, table, ext, part})
	db, table, _, _, ok = tableOf("donn@0pes/t@0ible_@0p_3.ibd")
	assert.True(t, ok)
	assert.Equal(t, []any{"données", "tâble_é_3"}, []any{db, table}, "letters are '@' and two characters (mysqlfilename)")

	paths := []string{"ibdata1", "db/t.frm", "db/t.ibd", "db2/a.frm", "db2/a#P#p0.ibd", "db2/a#P#p1.new", "db2/a#P#p1.ibd", "db2/v.frm", "db2/n.frm", "db2/n.new"}
	tables, err := s.tables(paths, "b1")
	require.NoError(t, err)
	require.Len(t, tables, 3)
	assert.Equal(t, "db.t", tables[0].Name())
	assert.Equal(t, "db2.a", tables[1].Name())
	// Created while mariabackup ran: only a .new, which --prepare renames.
	assert.Equal(t, "InnoDB", tables[2].Engine)
	assert.Equal(t, []string{"db2/n.cfg", "db2/n.frm", "db2/n.ibd"}, exportedFiles(tables[2]))
	assert.True(t, tables[1].Partitioned)
	assert.Equal(t, []string{"db2/a#P#p0.cfg", "db2/a#P#p0.ibd", "db2/a#P#p1.cfg", "db2/a#P#p1.ibd", "db2/a.frm"}, exportedFiles(tables[1]))

	for spec, msg := range map[string]string{
		"db.nosuch": "no table db.nosuch in backup b1",
		"db2.v":     "db2.v in backup b1 has a definition but no data file",
		"db3.*":     "no table db3.* in backup b1",
		"db.arz":    "table db.arz in backup b1 is ARCHIVE: restore-table imports InnoDB, Aria, MyISAM and CSV tables",
		"db.my8":    "table db.my8 in backup b1 is MyISAM: it has no .frm (MySQL 8",
		"db.ariap":  "table db.ariap in backup b1 is Aria: partitioned tables of engines other than InnoDB are not imported",
	} {
		ps, err := ParseTablePatterns([]string{spec})
		require.NoError(t, err)
		_, err = (&tableSubset{patterns: ps}).tables(append(paths, nonInnoDB...), "b1")
		assert.ErrorContains(t, err, msg, spec)
	}
	// Aria, MyISAM and CSV tables of MariaDB are restored as their files.
	ps, err = ParseTablePatterns([]string{"db.aria", "db.csv"})
	require.NoError(t, err)
	tables, err = (&tableSubset{patterns: ps}).tables(append(paths, nonInnoDB...), "b1")
	require.NoError(t, err)
	require.Len(t, tables, 2)
	assert.Equal(t, "Aria", tables[0].Engine)
	assert.Equal(t, []string{"db/aria.MAD", "db/aria.MAI", "db/aria.frm"}, exportedFiles(tables[0]))
	assert.Equal(t, []string{"db/csv.CSM", "db/csv.CSV", "db/csv.frm"}, exportedFiles(tables[1]))
}

// TestTableRestoreRealMariaDB: a table restore of a real backup reads only
// the frames holding the tables and the tool's files, mariabackup prepares
// them with --export, and each table imports into the live server under
// another name with the same checksum. A backup without a lane index (an
// external compressor) restores the same tables reading its lanes whole.
func TestTableRestoreRealMariaDB(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 300, RowsPerTable: 50, BigTableBytes: 48 << 20})
	f.srv.Exec(t, "CREATE TABLE sample.indexed (id INT PRIMARY KEY, a INT, b VARCHAR(40), KEY (a), KEY (b, a)) ENGINE=InnoDB")
	f.srv.Exec(t, "INSERT INTO sample.indexed SELECT seq, seq % 97, MD5(seq) FROM sample.seq_1_to_3000")
	mariadbtest.Checkpoint(t, f.srv.DB())
	want := mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes")
	useEngine(t, testConfig(2, SourceStdout, zstdConfig()))
	require.NoError(t, f.backup(t, nil))
	bhs := f.backupHandles(t)
	bh := bhs[len(bhs)-1]
	ctx := context.Background()
	m, err := ReadManifest(ctx, bh)
	require.NoError(t, err)
	require.Equal(t, laneIndexFileName, m.LaneIndex)
	ix, err := ReadLaneIndex(ctx, bh, m)
	require.NoError(t, err)
	require.Contains(t, ix.Paths, "sample/t0123.ibd")
	require.Greater(t, len(ix.Lanes[0]), 2, "a lane of %d stream bytes has several frames", m.Lanes[0].RawBytes)

	cfg := testConfig(2, SourceStdout, zstdConfig())
	ps, err := ParseTablePatterns([]string{"sample.t0123", "sample.indexed", "sample.part_t", "sample.aria_t", "sample.myisam_t"})
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "tables")
	rep, err := RestoreToDir(ctx, bh, out, RestoreDirOptions{Config: cfg, Prepare: true, Tables: ps, Logger: logutil.NewMemoryLogger()})
	require.NoError(t, err)
	t.Logf("table restore read %d of %d stored bytes, %d of %d stream bytes", rep.ReadBytes, rep.StoredBytes, rep.ReadStreamBytes, rep.StreamBytes)
	// The system tablespace (about half of this small stream) is read; the
	// 48 MiB big table is not, but for the frames it shares.
	assert.Less(t, rep.ReadStreamBytes, rep.StreamBytes-40<<20, "only the frames holding the tables and the tool's files are read")
	assert.Less(t, rep.ReadBytes, rep.StoredBytes)
	var names, engines []string
	for _, tb := range rep.Tables {
		names, engines = append(names, tb.Name()), append(engines, tb.Engine)
	}
	assert.Equal(t, []string{"sample.aria_t", "sample.indexed", "sample.myisam_t", "sample.part_t", "sample.t0123"}, names)
	assert.Equal(t, []string{"Aria", "InnoDB", "MyISAM", "InnoDB", "InnoDB"}, engines)
	assert.True(t, rep.Tables[3].Partitioned)
	assert.Equal(t, []string{"sample/aria_t.MAD", "sample/aria_t.MAI", "sample/aria_t.frm"}, rep.Tables[0].Exported)
	_, err = os.Stat(filepath.Join(out, "sample", "big.ibd"))
	require.ErrorIs(t, err, os.ErrNotExist, "the big table is not restored")
	for _, tb := range rep.Tables {
		for _, p := range tb.Exported {
			_, err := os.Stat(filepath.Join(out, p))
			require.NoError(t, err, p)
		}
		if tb.Partitioned || tb.Engine != "InnoDB" {
			continue // imported by tableimport (its own tests)
		}
		importAs(t, f, out, tb.Table, tb.Table+"_restored")
		got := mariadbtest.Checksums(t, f.srv.DB(), sampleDB)
		assert.Equal(t, want[tb.Table], got[tb.Table+"_restored"], tb.Name())
	}

	t.Run("bad input", func(t *testing.T) {
		for spec, msg := range map[string]string{
			"sample.nosuch": "no table sample.nosuch in backup " + bh.Name(),
		} {
			ps, err := ParseTablePatterns([]string{spec})
			require.NoError(t, err)
			out := filepath.Join(t.TempDir(), "tables")
			_, err = RestoreToDir(ctx, bh, out, RestoreDirOptions{Config: cfg, Prepare: true, Tables: ps, Logger: logutil.NewMemoryLogger()})
			require.ErrorContains(t, err, msg)
			_, err = os.Stat(out)
			require.ErrorIs(t, err, os.ErrNotExist, "nothing is left behind")
		}
	})

	t.Run("no lane index", func(t *testing.T) {
		ext := cfg
		ext.Compression = CompressionConfig{Enabled: true, Engine: "external", Level: 1, ExternalCompressor: "zstd -1 -c", ExternalExtension: ".zst",
			ExternalDecompressor: "zstd -d -c"}
		useEngine(t, ext)
		require.NoError(t, f.backup(t, nil))
		bhs := f.backupHandles(t)
		bh := bhs[len(bhs)-1]
		m, err := ReadManifest(ctx, bh)
		require.NoError(t, err)
		require.Empty(t, m.LaneIndex)
		ps, err := ParseTablePatterns([]string{"sample.t0042"})
		require.NoError(t, err)
		out := filepath.Join(t.TempDir(), "tables")
		logger := logutil.NewMemoryLogger()
		rep, err := RestoreToDir(ctx, bh, out, RestoreDirOptions{Config: ext, Prepare: true, Tables: ps, Logger: logger})
		require.NoError(t, err)
		assert.Contains(t, logger.String(), "has no lane index")
		assert.GreaterOrEqual(t, rep.ReadBytes, m.StoredBytes, "the lanes are read whole")
		assert.Equal(t, m.RawBytes, rep.ReadStreamBytes)
		require.Len(t, rep.Tables, 1)
		importAs(t, f, out, "t0042", "t0042_restored")
		got := mariadbtest.Checksums(t, f.srv.DB(), sampleDB)
		assert.Equal(t, want["t0042"], got["t0042_restored"])
	})
}

// importAs imports table from a table restore in dir into the fixture's
// server as sample.as, with MariaDB's steps: CREATE TABLE with the live
// table's definition, DISCARD TABLESPACE, copy .ibd and .cfg, IMPORT.
func importAs(t *testing.T, f *fixture, dir, table, as string) {
	t.Helper()
	var name, create string
	require.NoError(t, f.srv.DB().QueryRow("SHOW CREATE TABLE sample."+table).Scan(&name, &create))
	create = strings.Replace(create, "CREATE TABLE `"+table+"`", "CREATE TABLE `sample`.`"+as+"`", 1)
	f.srv.Exec(t, create)
	f.srv.Exec(t, "ALTER TABLE sample."+as+" DISCARD TABLESPACE")
	var copied []string
	for _, ext := range []string{".ibd", ".cfg"} {
		b, err := os.ReadFile(filepath.Join(dir, "sample", table+ext))
		require.NoError(t, err)
		dst := filepath.Join(f.tb.Cnf.DataDir, "sample", as+ext)
		require.NoError(t, os.WriteFile(dst, b, 0o660))
		copied = append(copied, dst)
	}
	require.NoError(t, matchOwner(f.tb.Cnf, copied))
	f.srv.Exec(t, "ALTER TABLE sample."+as+" IMPORT TABLESPACE")
}

// TestTableRestoreChainRealMariaDB: a table restore of an incremental
// backup takes the tables' files from every backup of its chain (the deltas'
// .delta and .meta), applies them in order and exports: the tables import
// with their data at the last delta.
func TestTableRestoreChainRealMariaDB(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 20, BigTableBytes: 48 << 20})
	useEngine(t, incrementalConfig())
	var static map[string]string
	for round := range 3 {
		static = f.changeStatic(t, round+1)
		mariadbtest.Checkpoint(t, f.srv.DB())
		require.NoError(t, f.backup(t, nil))
	}
	last := f.latestManifest(t)
	require.Equal(t, 2, last.ChainLength)
	bhs := f.backupHandles(t)
	ps, err := ParseTablePatterns([]string{"sample.t0001", "sample.t0002"})
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "tables")
	rep, err := RestoreToDir(context.Background(), bhs[len(bhs)-1], out, RestoreDirOptions{Config: incrementalConfig(), Prepare: true, Tables: ps,
		Logger: logutil.NewMemoryLogger()})
	require.NoError(t, err)
	require.Len(t, rep.Chain, 3)
	t.Logf("chain table restore read %d of %d stream bytes", rep.ReadStreamBytes, rep.StreamBytes)
	assert.Less(t, rep.ReadStreamBytes, rep.StreamBytes-40<<20, "the big table is not read")
	for _, table := range []string{"t0001", "t0002"} {
		importAs(t, f, out, table, table+"_restored")
		got := mariadbtest.Checksums(t, f.srv.DB(), sampleDB)
		assert.Equal(t, static[table], got[table+"_restored"], "%s at the last delta", table)
	}
}

// TestTableRestoreEncryptedRealMariaDB: on S3 (versitygw) with a key file,
// a table restore reads its frames by range through the storage's
// encryption frames (each 256 KiB block verified and opened before use) and
// the table imports with its checksum; without the key it fails naming the
// key ID, before anything is written.
func TestTableRestoreEncryptedRealMariaDB(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 50, BigTableBytes: 16 << 20})
	useEngine(t, testConfig(2, SourceStdout, zstdConfig()))
	srv := splitstoragetest.Start(t, splitstorage.BackendS3)
	srv.Setenv(t)
	f.encryptedStorage(t, srv, splitstoragetest.KeyFile(t, "k1"))
	want := mariadbtest.Checksums(t, f.srv.DB(), sampleDB, "writes")
	require.NoError(t, f.backup(t, nil))
	bhs := f.backupHandles(t)
	ps, err := ParseTablePatterns([]string{"sample.t0077"})
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "tables")
	rep, err := RestoreToDir(context.Background(), bhs[len(bhs)-1], out, RestoreDirOptions{Config: testConfig(2, SourceStdout, zstdConfig()),
		Prepare: true, Tables: ps, Logger: logutil.NewMemoryLogger()})
	require.NoError(t, err)
	assert.Less(t, rep.ReadBytes, rep.StoredBytes)
	importAs(t, f, out, "t0077", "t0077_restored")
	assert.Equal(t, want["t0077"], mariadbtest.Checksums(t, f.srv.DB(), sampleDB)["t0077_restored"])

	f.encryptedStorage(t, srv, "")
	bhs = f.backupHandles(t)
	_, err = RestoreToDir(context.Background(), bhs[len(bhs)-1], filepath.Join(t.TempDir(), "t"), RestoreDirOptions{
		Config: testConfig(2, SourceStdout, zstdConfig()), Prepare: true, Tables: ps, Logger: logutil.NewMemoryLogger()})
	require.ErrorContains(t, err, `key ID "k1"`)
}

// TestTableRestoreOfEveryCodecChecksItsFrames: a table restore reads
// stretches of frames and checks each frame's length and CRC-32C against
// the lane index; with every codec whose lanes have frames (none, pgzip,
// pargzip, lz4, zstd) a stretch decompresses to exactly the frames' stream
// bytes, so a good backup's table restore passes those checks, and verify
// passes its check of the same frames.
func TestTableRestoreOfEveryCodecChecksItsFrames(t *testing.T) {
	f := newFixture(t, mariadbtest.Options{Tables: 200, RowsPerTable: 20, BigTableBytes: 24 << 20})
	f.useFileStorage(t)
	configs := map[string]CompressionConfig{
		"none":    {},
		"pgzip":   {Enabled: true, Engine: mysqlctl.PgzipCompressor, Level: 1, BlockSize: 250000, Blocks: 2},
		"pargzip": {Enabled: true, Engine: mysqlctl.PargzipCompressor, Level: 1, BlockSize: 250000, Blocks: 2},
		"lz4":     {Enabled: true, Engine: mysqlctl.Lz4Compressor, Level: 1},
		"zstd":    zstdConfig(),
	}
	for _, name := range []string{"none", "pgzip", "pargzip", "lz4", "zstd"} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(2, SourceStdout, configs[name])
			useEngine(t, cfg)
			require.NoError(t, f.backup(t, nil))
			bh, m := f.latestBackup(t)
			ctx := context.Background()
			ix, err := ReadLaneIndex(ctx, bh, m)
			require.NoError(t, err)
			require.Greater(t, len(ix.Lanes[0]), 3, "frames to read stretches of")
			ps, err := ParseTablePatterns([]string{"sample.big", "sample.t0007"})
			require.NoError(t, err)
			rep, err := RestoreToDir(ctx, bh, filepath.Join(t.TempDir(), "t"), RestoreDirOptions{Config: cfg, Prepare: true, Tables: ps,
				Logger: logutil.NewMemoryLogger()})
			require.NoError(t, err)
			require.Len(t, rep.Tables, 2)
			assert.Less(t, rep.ReadStreamBytes, rep.StreamBytes, "some frames, not the whole lanes")
			_, err = Verify(ctx, bh, VerifyOptions{Logger: logutil.NewMemoryLogger()})
			require.NoError(t, err)
		})
	}
}
