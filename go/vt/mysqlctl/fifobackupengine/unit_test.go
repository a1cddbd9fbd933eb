package fifobackupengine

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/mysql/replication"
	"vitess.io/vitess/go/vt/logutil"
	"vitess.io/vitess/go/vt/mysqlctl"
	"vitess.io/vitess/go/vt/mysqlctl/backupstats"
	"vitess.io/vitess/go/vt/vterrors"

	"github.com/vtfifo/vtfifo/go/internal/flagvalue"
	"github.com/vtfifo/vtfifo/go/internal/unreadable"
	"github.com/vtfifo/vtfifo/go/xbstream"

	vtrpcpb "vitess.io/vitess/go/vt/proto/vtrpc"
)

func validConfig() Config {
	return testConfig(4, SourceAuto, zstdConfig())
}

// Every invalid value fails validation naming the flag and what is allowed.
func TestValidateNamesFlagAndAllowedValues(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		want   []string
	}{
		{"lanes negative", func(c *Config) { c.Lanes = -1 }, []string{"--fifo-backup-lanes", "0 (auto) or 1..64"}},
		{"lanes too many", func(c *Config) { c.Lanes = 65 }, []string{"--fifo-backup-lanes", "0 (auto) or 1..64"}},
		{"source", func(c *Config) { c.Source = "pipe" }, []string{"--fifo-backup-source", "auto, fifo, stdout"}},
		{"flavor", func(c *Config) { c.ToolFlavor = "mysqlbackup" }, []string{"--fifo-backup-tool-flavor", "xtrabackup, mariabackup"}},
		{"parallel", func(c *Config) { c.Parallel = 0 }, []string{"--fifo-backup-parallel", "1..256"}},
		{"read buffer on mariabackup", func(c *Config) { c.ToolFlavor = FlavorMariabackup; c.ReadBufferSize = 8 << 20 },
			[]string{"--fifo-backup-read-buffer-size", "0 with --fifo-backup-tool-flavor=mariabackup"}},
		{"fifo on mariabackup", func(c *Config) { c.ToolFlavor = FlavorMariabackup; c.Source = SourceFIFO }, []string{"--fifo-backup-source",
			"auto, stdout with --fifo-backup-tool-flavor=mariabackup", "8.0.33"}},
		{"fifo timeout", func(c *Config) { c.FIFOTimeout = 0 }, []string{"--fifo-backup-fifo-timeout", "2s..1h"}},
		{"external tablespace dir relative", func(c *Config) { c.ExternalTablespaceDirs = []string{"/ok", "rel/dir"} },
			[]string{"--fifo-backup-external-tablespace-dirs", `"rel/dir"`, "absolute, clean"}},
		{"external tablespace dir unclean", func(c *Config) { c.ExternalTablespaceDirs = []string{"/a/../b"} },
			[]string{"--fifo-backup-external-tablespace-dirs", "absolute, clean"}},
		{"fifo streams", func(c *Config) { c.FIFOStreams = 65 }, []string{"--fifo-backup-fifo-streams", "0 (as many as --fifo-backup-lanes) or 1..64"}},
		// A chunk is as large as Percona's read buffer: above what a restore takes, refused.
		{"read buffer above the largest chunk", func(c *Config) { c.ReadBufferSize = 65 << 20 }, []string{"--fifo-backup-read-buffer-size",
			"128KiB..64MiB in steps of 64KiB"}},
		{"read buffer below Percona's minimum", func(c *Config) { c.ReadBufferSize = 64 << 10 }, []string{"--fifo-backup-read-buffer-size", "128KiB..64MiB"}},
		{"read buffer off its step", func(c *Config) { c.ReadBufferSize = 1000000 }, []string{"--fifo-backup-read-buffer-size", "steps of 64KiB"}},
		{"tool flag --compress", func(c *Config) { c.BackupFlags = "--slave-info --compress" }, []string{"--fifo-backup-backup-flags", "--compress",
			"never decompresses"}},
		{"tool flag --compress-threads", func(c *Config) { c.BackupFlags = "--compress_threads=4" }, []string{"--fifo-backup-backup-flags", "--compress-threads"}},
		{"tool flag --encrypt", func(c *Config) { c.BackupFlags = "--encrypt=AES256" }, []string{"--fifo-backup-backup-flags", "--encrypt", "never decrypts"}},
		{"tool flag --read-buffer-size", func(c *Config) { c.BackupFlags = "--read-buffer-size=256M" }, []string{"--fifo-backup-backup-flags",
			"use --fifo-backup-read-buffer-size"}},
		{"tool flag --fifo-streams", func(c *Config) { c.BackupFlags = "--fifo-streams 8" }, []string{"--fifo-backup-backup-flags",
			"use --fifo-backup-fifo-streams"}},
		{"progress", func(c *Config) { c.Progress = -time.Second }, []string{"--fifo-backup-progress-interval", "0 (off) or a positive duration"}},
		{"full interval", func(c *Config) { c.FullInterval = time.Second }, []string{"--fifo-backup-full-interval", "0 (off: every backup is full) or 1m..8760h"}},
		{"incremental base", func(c *Config) { c.IncrementalBase = "previous" }, []string{"--fifo-backup-incremental-base", "full, latest"}},
		{"max chain length", func(c *Config) { c.MaxChainLength = 0 }, []string{"--fifo-backup-max-chain-length", "1..1000"}},
		{"tool flag --incremental-lsn", func(c *Config) { c.BackupFlags = "--incremental-lsn=5" }, []string{"--fifo-backup-backup-flags",
			"--incremental-lsn", "--fifo-backup-full-interval"}},
		{"tool flag --incremental-basedir", func(c *Config) { c.BackupFlags = "--incremental-basedir=/b" }, []string{"--fifo-backup-backup-flags",
			"--incremental-basedir"}},
		{"tool flag --databases", func(c *Config) { c.BackupFlags = "--databases=a" }, []string{"--fifo-backup-backup-flags", "--databases", "listed as a full one"}},
		{"tool flag --tables-exclude", func(c *Config) { c.BackupFlags = "--tables_exclude=a.b" }, []string{"--fifo-backup-backup-flags",
			"--tables-exclude", "listed as a full one"}},
		{"tool flag --no-lock", func(c *Config) { c.BackupFlags = "--no-lock" }, []string{"--fifo-backup-backup-flags", "--no-lock", "--slave-info", "xb_init"}},
		{"tool flag --backup-incremental-base", func(c *Config) { c.BackupFlags = "--backup-incremental-base=/b" }, []string{"--fifo-backup-backup-flags",
			"--backup-incremental-base"}},
		{"prepare flag --apply-redo-only", func(c *Config) { c.PrepareFlags = "--apply-redo-only" }, []string{"--fifo-backup-prepare-flags",
			"--apply-redo-only", "the engine sets it"}},
		{"prepare flag --incremental-dir", func(c *Config) { c.PrepareFlags = "--incremental-dir=/d" }, []string{"--fifo-backup-prepare-flags",
			"--incremental-dir", "--prepare-incremental-from-dir from 8.4.0-8"}},
		{"backup flags", func(c *Config) { c.BackupFlags = `--x="unterminated` }, []string{"--fifo-backup-backup-flags", "balanced quotes"}},
		{"prepare flags", func(c *Config) { c.PrepareFlags = `'` }, []string{"--fifo-backup-prepare-flags", "balanced quotes"}},
		{"compression engine", func(c *Config) { c.Compression.Engine = "brotli" }, []string{"--compression-engine-name", "pgzip, pargzip, zstd, lz4, external"}},
		{"external without extension", func(c *Config) {
			c.Compression.Engine = mysqlctl.ExternalCompressor
			c.Compression.ExternalCompressor = "zstd -c"
		}, []string{"--external-compressor-extension", "allowed values"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			require.NoError(t, c.Validate())
			tc.mutate(&c)
			err := c.Validate()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// Flags parse from a real flag set, sizes with units, and bad sizes fail
// naming the flag.
func TestFlagsParse(t *testing.T) {
	saved := flagConfig
	defer func() { flagConfig = saved }()
	fs := pflag.NewFlagSet("vttablet", pflag.ContinueOnError)
	RegisterFlags(fs)
	require.NoError(t, fs.Parse([]string{"--fifo-backup-lanes=8", "--fifo-backup-source=stdout", "--fifo-backup-use-memory=1GiB",
		"--fifo-backup-read-buffer-size=8MiB"}))
	assert.Equal(t, 8, flagConfig.Lanes)
	assert.Equal(t, SourceStdout, flagConfig.Source)
	assert.Equal(t, int64(1<<30), flagConfig.UseMemory)
	assert.Equal(t, int64(8<<20), flagConfig.ReadBufferSize)

	fs = pflag.NewFlagSet("vttablet", pflag.ContinueOnError)
	RegisterFlags(fs)
	err := fs.Parse([]string{"--fifo-backup-use-memory=lots"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fifo-backup-use-memory")
	assert.Contains(t, err.Error(), "allowed values are auto (twice the redo to apply, 128MiB..4GiB, at most half of what this host or its cgroup has available), 0 (tool default) or a size up to 1PiB")

	// Registering sets the defaults again, whatever an earlier parse left.
	fs = pflag.NewFlagSet("vttablet", pflag.ContinueOnError)
	RegisterFlags(fs)
	assert.Equal(t, defaultFlagConfig(), flagConfig)
}

func TestParseToolVersion(t *testing.T) {
	x, err := parseToolVersion("/usr/bin/xtrabackup", "xtrabackup version 8.0.35-30 based on MySQL server 8.0.35 Linux (x86_64) (revision id: 6beb4b49)\n")
	require.NoError(t, err)
	assert.Equal(t, FlavorXtrabackup, x.Flavor)
	assert.True(t, x.supportsFIFO())

	old, err := parseToolVersion("/usr/bin/xtrabackup", "xtrabackup version 8.0.32-26 based on MySQL server 8.0.32 Linux (x86_64)")
	require.NoError(t, err)
	assert.False(t, old.supportsFIFO())

	// FIFO streams came with 8.0.33-28 (PXB-2514): the build number decides.
	for v, want := range map[string]bool{"8.0.33-27": false, "8.0.33-28": true, "8.0.33": false, "8.0.34-29": true, "8.4.0-1": true, "2.4.29": false} {
		x, err := parseToolVersion("/usr/bin/xtrabackup", "xtrabackup version "+v+" based on MySQL server 8.0.33 Linux (x86_64) (revision id: 1)")
		require.NoError(t, err)
		assert.Equal(t, want, x.supportsFIFO(), v)
	}

	m, err := parseToolVersion("/usr/bin/mariabackup", "mariabackup based on MariaDB server 10.11.6-MariaDB debian-linux-gnu (x86_64)")
	require.NoError(t, err)
	assert.Equal(t, FlavorMariabackup, m.Flavor)
	assert.False(t, m.supportsFIFO())

	_, err = parseToolVersion("/bin/true", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--fifo-backup-tool-flavor")
}

func TestSourceFor(t *testing.T) {
	percona := &backupTool{Flavor: FlavorXtrabackup, Major: 8, Minor: 0, Patch: 35, Build: 30}
	maria := &backupTool{Flavor: FlavorMariabackup}
	cfg := validConfig()
	src, err := percona.sourceFor(&cfg)
	require.NoError(t, err)
	assert.Equal(t, SourceFIFO, src)
	src, err = maria.sourceFor(&cfg)
	require.NoError(t, err)
	assert.Equal(t, SourceStdout, src)
	cfg.Source = SourceFIFO
	_, err = maria.sourceFor(&cfg)
	require.Error(t, err)
	cfg.Lanes = 1
	src, err = percona.sourceFor(&cfg)
	require.NoError(t, err)
	assert.Equal(t, SourceStdout, src, "Percona's --fifo-streams=1 is stdout")
	cfg.FIFOStreams = 4
	src, err = percona.sourceFor(&cfg)
	require.NoError(t, err)
	assert.Equal(t, SourceFIFO, src, "4 FIFO streams into 1 lane")
}

func TestBackupArgsNeverUseAShellAndRefuseChunkSizeOnMariabackup(t *testing.T) {
	cfg := validConfig()
	cfg.BackupFlags = `--lock-ddl-per-table='a b' --slave-info`
	percona := &backupTool{Flavor: FlavorXtrabackup, Major: 8, Patch: 35, Build: 30}
	args, err := percona.backupArgs(&cfg, "/my.cnf", "/sock", "vt_dba", "/w", SourceFIFO, "/w/fifo", 0)
	require.NoError(t, err)
	assert.Equal(t, "--defaults-file=/my.cnf", args[0])
	assert.Contains(t, args, "--fifo-streams=4")
	assert.Contains(t, args, "--parallel=4")

	// N streams, M lanes; --parallel raised to N as Percona would.
	cfg.FIFOStreams, cfg.Lanes = 8, 2
	args, err = percona.backupArgs(&cfg, "/my.cnf", "/sock", "vt_dba", "/w", SourceFIFO, "/w/fifo", 0)
	require.NoError(t, err)
	assert.Contains(t, args, "--fifo-streams=8")
	assert.Contains(t, args, "--parallel=8")
	assert.Contains(t, args, "--fifo-dir=/w/fifo")
	assert.Contains(t, args, "--lock-ddl-per-table=a b")

	cfg.ReadBufferSize = 8 << 20
	args, err = percona.backupArgs(&cfg, "/my.cnf", "/sock", "vt_dba", "/w", SourceStdout, "", 0)
	require.NoError(t, err)
	assert.Contains(t, args, "--read-buffer-size=8388608")
	_, err = (&backupTool{Flavor: FlavorMariabackup}).backupArgs(&cfg, "/my.cnf", "/sock", "vt_dba", "/w", SourceStdout, "", 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--fifo-backup-read-buffer-size")
}

func TestManifestCheckRejectsHandEdits(t *testing.T) {
	good := func() *Manifest {
		m := &Manifest{Source: SourceStdout, ToolFlavor: FlavorMariabackup, CompressionExtension: ".zst"}
		m.BackupMethod = engineName
		for i := range 3 {
			m.Lanes = append(m.Lanes, LaneInfo{File: laneFileName(i, ".zst")})
		}
		return m
	}
	require.NoError(t, good().check())
	for name, mutate := range map[string]func(*Manifest){
		"method":             func(m *Manifest) { m.BackupMethod = "xtrabackup" },
		"no lanes":           func(m *Manifest) { m.Lanes = nil },
		"lane path":          func(m *Manifest) { m.Lanes[1].File = "../../etc/passwd" },
		"lane twice":         func(m *Manifest) { m.Lanes[2] = m.Lanes[1] },
		"source":             func(m *Manifest) { m.Source = "tape" },
		"flavor":             func(m *Manifest) { m.ToolFlavor = "" },
		"vitess incremental": func(m *Manifest) { m.Incremental = true },
		"chain without base": func(m *Manifest) { m.ChainLength = 1 },
		"base without chain": func(m *Manifest) { m.BaseBackup, m.FullBackup, m.LSN.From = "b", "b", "5" },
		"base without lsn":   func(m *Manifest) { m.BaseBackup, m.FullBackup, m.ChainLength = "b", "b", 1 },
		"its own base": func(m *Manifest) {
			m.BaseBackup, m.FullBackup, m.ChainLength, m.LSN.From, m.BackupName = "b", "b", 1, "5", "b"
		},
	} {
		m := good()
		mutate(m)
		assert.Error(t, m.check(), name)
	}
}

func TestPositionFromInfo(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "xtrabackup_info", "binlog_pos = filename 'vt-bin.000001', position '1234', GTID of the last change '0-1-42'\n")
	p, name, err := positionFromInfo(dir, "MariaDB")
	require.NoError(t, err)
	assert.Equal(t, "0-1-42", p.String())
	assert.Equal(t, "xtrabackup_info", name)

	writeFile(t, dir, "xtrabackup_info", "binlog_pos = filename 'vt-bin.000001', position '1234'\n")
	_, _, err = positionFromInfo(dir, "MariaDB")
	require.Error(t, err)
}

// TestCheckPositionAgainstTheBackupsOwnFiles: a restore's MANIFEST position
// must be the one the backup's own xtrabackup_info records; one that differs,
// or a file that records none, is damage (data loss) naming both; a backup
// without it is not checked, and the log says so.
func TestCheckPositionAgainstTheBackupsOwnFiles(t *testing.T) {
	pos, err := replication.DecodePosition("MariaDB/0-1-42")
	require.NoError(t, err)
	m := &Manifest{}
	m.BackupName, m.Position = "b1", pos
	info := func(gtid string) map[string][]byte {
		return map[string][]byte{"mariadb_backup_info": []byte("binlog_pos = filename 'vt-bin.000001', position '1234'" + gtid + "\n")}
	}
	logger := logutil.NewMemoryLogger()

	require.NoError(t, checkPosition(m, map[string][]byte{}, logger))
	assert.Contains(t, logger.String(), "fifo: backup b1: its files hold no xtrabackup_info: the MANIFEST's position was not checked against it")
	logger.Clear()

	require.NoError(t, checkPosition(m, info(", GTID of the last change '0-1-42'"), logger))
	assert.Empty(t, logger.String())

	err = checkPosition(m, info(", GTID of the last change '0-1-41'"), logger)
	assert.EqualError(t, err, "backup b1: the MANIFEST gives position MariaDB/0-1-42, but its own mariadb_backup_info records MariaDB/0-1-41: a "+
		"server restored from it would replicate from the wrong transaction (the MANIFEST was edited, or is another backup's)")
	assert.Equal(t, vtrpcpb.Code_DATA_LOSS, vterrors.Code(err))

	err = checkPosition(m, info(""), logger)
	assert.EqualError(t, err, "backup b1: the MANIFEST gives position MariaDB/0-1-42, but its own mariadb_backup_info records none: no "+
		"\"GTID of the last change\" in the tool's mariadb_backup_info")
	assert.Equal(t, vtrpcpb.Code_DATA_LOSS, vterrors.Code(err))
}

func TestStatsTable(t *testing.T) {
	p := newPhaseStats(backupstats.NoStats())
	f := p.bytesFunc("Compressor:Write")
	f(1<<20, time.Second)
	p.timed("Prepare", 2*time.Second)
	tab := p.Table("t", 3*time.Second)
	assert.Contains(t, tab, "Compressor")
	assert.Contains(t, tab, "1.0")
	assert.True(t, strings.Contains(tab, "Prepare"))
}

func TestLineLoggerSplitsLines(t *testing.T) {
	logger := newMemoryLogger()
	l := newTailLogger(logger, "x: ", 2)
	_, _ = l.Write([]byte("one\ntw"))
	_, _ = l.Write([]byte("o\nthree"))
	l.flush()
	assert.Equal(t, "two\nthree", l.tail())
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
}

func newMemoryLogger() *logutil.MemoryLogger { return logutil.NewMemoryLogger() }

// file_utils.cc, open_fifo_for_write_with_timeout writes one control byte
// before the stream; the engine takes it by position: one byte, then the
// chunk magic or the end.
func TestSkipControlByte(t *testing.T) {
	cases := map[string]struct {
		in   string
		rest string
		err  string
	}{
		"control byte X, then a chunk": {in: "X" + xbstream.Magic + "rest", rest: xbstream.Magic + "rest"},
		"control byte 0x01":            {in: "\x01" + xbstream.Magic, rest: xbstream.Magic},
		"no control byte":              {in: xbstream.Magic + "rest", rest: xbstream.Magic + "rest"},
		"control byte, empty stream":   {in: "X", rest: ""},
		"nothing":                      {in: "", err: "ended before Percona XtraBackup's control byte"},
		"two bytes then a chunk":       {in: "ab" + xbstream.Magic, err: "does not start the way"},
		"garbage":                      {in: "hello, world", err: "does not start the way"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			defer r.Close()
			go func() { w.WriteString(tc.in); w.Close() }()
			br, err := skipControlByte(r, "thread_0")
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Contains(t, err.Error(), "thread_0")
				return
			}
			require.NoError(t, err)
			rest, err := io.ReadAll(br)
			require.NoError(t, err)
			assert.Equal(t, tc.rest, string(rest))
		})
	}
}

// TestOpenFilesLimitPassed: both the backup and the prepare get
// --open-files-limit, before the operator's own flags (which win).
func TestOpenFilesLimitPassed(t *testing.T) {
	cfg := validConfig()
	cfg.BackupFlags, cfg.PrepareFlags = "--open-files-limit=777", ""
	tool := &backupTool{Flavor: FlavorMariabackup}
	args, err := tool.backupArgs(&cfg, "/my.cnf", "/sock", "vt_dba", "/w", SourceStdout, "", 4096)
	require.NoError(t, err)
	i, j := slices.Index(args, "--open-files-limit=4096"), slices.Index(args, "--open-files-limit=777")
	assert.True(t, i > 0 && j > i, "ours, then the operator's: %v", args)
	args, err = tool.prepareArgs(&cfg, prepareStep{DefaultsFile: "/my.cnf", TargetDir: "/staging", OpenFiles: 4096})
	require.NoError(t, err)
	assert.Contains(t, args, "--open-files-limit=4096")
	args, err = tool.prepareArgs(&cfg, prepareStep{DefaultsFile: "/my.cnf", TargetDir: "/staging"})
	require.NoError(t, err)
	assert.NotContains(t, strings.Join(args, " "), "--open-files-limit")
}

type writableFiles int

func (w writableFiles) WritableFilesAtOnce() int { return int(w) }

// TestAutoLanes: --fifo-backup-lanes=0 is one lane per CPU, at most 64, and at
// most what the storage's handle says it can write at once.
func TestAutoLanes(t *testing.T) {
	for _, c := range []struct {
		cpus int
		bh   any
		want int
	}{
		{1, nil, 1}, {2, nil, 2}, {9, nil, 9}, {16, nil, 16}, {64, nil, 64}, {128, nil, 64},
		{1, writableFiles(8), 1}, {9, writableFiles(8), 8}, {128, writableFiles(8), 8},
		{128, writableFiles(100), 64},
		{16, writableFiles(0), 1}, // the storage then refuses the lane, naming its budget
	} {
		assert.Equal(t, c.want, AutoLanes(c.cpus, c.bh), "%d CPUs, storage %v", c.cpus, c.bh)
	}
}

// A restore logs what it has read of the MANIFEST's stored bytes, the rate
// and the ETA (--fifo-backup-progress-interval).
func TestRestoreProgressLine(t *testing.T) {
	assert.Equal(t, "0.50 GiB of 2.00 GiB stored read (25%), 51.2 MiB/s, ETA 30s", restoreProgressLine(512<<20, 2<<30, 10*time.Second))
	assert.Equal(t, "2.00 GiB of 2.00 GiB stored read (100%), 204.8 MiB/s", restoreProgressLine(2<<30, 2<<30, 10*time.Second))
}

// A restore's target directory: one it created goes when the restore
// fails; one that was there (empty) is the operator's and stays. Either
// way only what the restore made goes: its files, written into its own
// subdirectory and moved up once whole, never a file the operator put in
// the directory meanwhile. One that is not empty is refused.
func TestTargetDirRemovesOnlyWhatTheRestoreWrote(t *testing.T) {
	parent := t.TempDir()
	write := func(d TargetDir) {
		require.NoError(t, os.MkdirAll(filepath.Join(d.Files(), "db"), 0o750))
		require.NoError(t, os.WriteFile(filepath.Join(d.Files(), "db", "t.ibd"), []byte("x"), 0o640))
		require.NoError(t, os.WriteFile(filepath.Join(d.Files(), "ibdata1"), []byte("x"), 0o640))
	}
	names := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var n []string
		for _, e := range entries {
			n = append(n, e.Name())
		}
		return n
	}

	created, err := claimEmptyDir(filepath.Join(parent, "new"))
	require.NoError(t, err)
	assert.True(t, created.Created)
	write(created)
	require.NoError(t, created.RemoveRestored())
	assert.NoDirExists(t, created.Path)

	// One it created, where the operator put a file meanwhile: the file
	// and the directory stay.
	created, err = claimEmptyDir(filepath.Join(parent, "new"))
	require.NoError(t, err)
	write(created)
	require.NoError(t, os.WriteFile(filepath.Join(created.Path, "notes"), nil, 0o640))
	require.NoError(t, created.RemoveRestored())
	assert.Equal(t, []string{"notes"}, names(created.Path))

	mine := filepath.Join(parent, "mine")
	require.NoError(t, os.Mkdir(mine, 0o700))
	existing, err := claimEmptyDir(mine)
	require.NoError(t, err)
	assert.False(t, existing.Created)
	write(existing)
	require.NoError(t, os.WriteFile(filepath.Join(mine, "notes"), nil, 0o640))
	require.NoError(t, existing.RemoveRestored())
	assert.Equal(t, []string{"notes"}, names(mine))
	fi, err := os.Stat(mine)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the operator's directory is kept as it was")
	require.NoError(t, os.Remove(filepath.Join(mine, "notes")))

	// Done moves the files up; removing them afterwards (restore-table's
	// import done) removes those, not the operator's file beside them.
	done, err := claimEmptyDir(mine)
	require.NoError(t, err)
	write(done)
	require.NoError(t, done.Done(false, logutil.NewMemoryLogger()))
	assert.Equal(t, []string{"db", "ibdata1"}, names(mine))
	require.NoError(t, os.WriteFile(filepath.Join(mine, "notes"), nil, 0o640))
	require.NoError(t, done.RemoveRestored())
	assert.Equal(t, []string{"notes"}, names(mine))

	// An entry the operator removed and made again by its name is theirs,
	// though the file system gave it the freed inode number (as ext4 and
	// tmpfs do at once): it stays.
	require.NoError(t, os.Remove(filepath.Join(mine, "notes")))
	done, err = claimEmptyDir(mine)
	require.NoError(t, err)
	write(done)
	require.NoError(t, done.Done(false, logutil.NewMemoryLogger()))
	before, err := os.Lstat(filepath.Join(mine, "ibdata1"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(mine, "ibdata1")))
	require.NoError(t, os.WriteFile(filepath.Join(mine, "ibdata1"), []byte("theirs"), 0o640))
	after, err := os.Lstat(filepath.Join(mine, "ibdata1"))
	require.NoError(t, err)
	t.Logf("the operator's ibdata1 has the restored one's inode number: %v", os.SameFile(before, after))
	require.NoError(t, done.RemoveRestored())
	assert.Equal(t, []string{"ibdata1"}, names(mine))
	require.NoError(t, os.Remove(filepath.Join(mine, "ibdata1")))
	require.NoError(t, os.WriteFile(filepath.Join(mine, "notes"), nil, 0o640))

	// A name the operator took meanwhile is never written over: Done
	// fails, and the removal leaves the operator's entry as it is.
	require.NoError(t, os.Remove(filepath.Join(mine, "notes")))
	clash, err := claimEmptyDir(mine)
	require.NoError(t, err)
	write(clash)
	require.NoError(t, os.WriteFile(filepath.Join(mine, "ibdata1"), []byte("theirs"), 0o640))
	err = clash.Done(false, logutil.NewMemoryLogger())
	assert.EqualError(t, err, "cannot move the restored ibdata1 into "+mine+": something was put there by that name during the restore, "+
		"and a restore never writes over it: move it away and restore again")
	assert.True(t, flagvalue.IsContradiction(err), "%v", err)
	assert.Equal(t, []string{"db", "ibdata1"}, names(clash.Files()), "db, moved up before the clash, is back beside the others")
	assert.Equal(t, []string{restoringMark, restoringDir, "ibdata1"}, names(mine))
	require.NoError(t, clash.RemoveRestored())
	assert.Equal(t, []string{"ibdata1"}, names(mine))
	b, err := os.ReadFile(filepath.Join(mine, "ibdata1"))
	require.NoError(t, err)
	assert.Equal(t, "theirs", string(b))
	require.NoError(t, os.Remove(filepath.Join(mine, "ibdata1")))

	// Two restores that found one directory empty at once: the second's
	// mark is refused, naming the first, and removes nothing of it.
	first, err := claimEmptyDir(mine)
	require.NoError(t, err)
	write(first)
	second := TargetDir{Path: mine}
	err = second.mark()
	assert.ErrorContains(t, err, "the target directory "+mine+" is not empty: a restore never writes over files; a restore is writing "+
		"into it now (pid "+strconv.Itoa(os.Getpid())+")")
	assert.True(t, flagvalue.IsContradiction(err), "%v", err)
	assert.FileExists(t, filepath.Join(first.Files(), "db", "t.ibd"))
	require.NoError(t, first.RemoveRestored())
	assert.Empty(t, names(mine))

	require.NoError(t, os.WriteFile(filepath.Join(mine, "theirs"), nil, 0o640))
	_, err = claimEmptyDir(mine)
	assert.ErrorContains(t, err, "the target directory "+mine+" is not empty: a restore never writes over files")
	assert.FileExists(t, filepath.Join(mine, "theirs"))

	// A directory that cannot be made says nothing of the backup: under a
	// missing parent, a usage error; under a file, this host's.
	_, err = claimEmptyDir(filepath.Join(parent, "missing", "r"))
	assert.ErrorContains(t, err, "its parent must be a directory that can hold it")
	assert.True(t, flagvalue.IsContradiction(err), "%v", err)
	_, err = claimEmptyDir(filepath.Join(mine, "theirs", "r"))
	assert.ErrorContains(t, err, "not a directory")
	assert.Equal(t, "the target directory cannot be made, read or written here", unreadable.HostFault(err))
}

// TestToolRelease: the tool's own release, not one in the path it ran by.
func TestToolRelease(t *testing.T) {
	for line, want := range map[string]string{
		"xtrabackup version 8.0.35-30 based on MySQL server 8.0.35 Linux (x86_64) (revision id: 1)":     "8.0.35",
		"/opt/mariadb-10.6.1/bin/mariabackup based on MariaDB server 10.11.19-MariaDB debian-linux-gnu": "10.11.19",
		"a tool that says nothing": "",
	} {
		assert.Equal(t, want, toolRelease(line), line)
	}
}
