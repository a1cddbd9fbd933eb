package fifobackupengine

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/logutil"
)

// TestOptionFileAsTheToolReadsIt: groups matched without case, comments,
// quotes, loose-/skip- forms, !include and !includedir resolved (mysys
// my_default.cc, search_default_file_with_ext), the suffix groups of
// MYSQL_GROUP_SUFFIX.
func TestOptionFileAsTheToolReadsIt(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf.d")
	require.NoError(t, os.Mkdir(conf, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(conf, "b.cnf"), []byte("[XtraBackup]\nloose_compress_threads = 4\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(conf, "a.cnf"), []byte("[mysqld]\ninnodb_undo_directory='/u' # undo\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(conf, "skipped.txt"), []byte("[xtrabackup]\ncompress\n"), 0o600))
	inc := filepath.Join(dir, "inc.cnf")
	require.NoError(t, os.WriteFile(inc, []byte("[client]\nskip-compress\n"), 0o600))
	main := filepath.Join(dir, "my.cnf")
	require.NoError(t, os.WriteFile(main, []byte("# top\nignored-before-any-group\n[mysqld]\nport = 3306\n!include "+inc+"\n!include "+dir+
		"/missing.cnf\n!includedir "+conf+"\n[xtrabackup-x]\ndatabases=d\n"), 0o600))

	lines, err := readOptionFile(main)
	require.NoError(t, err)
	var got []string
	for _, l := range lines {
		got = append(got, l.Group+" "+l.Name+"="+l.Value)
	}
	assert.Equal(t, []string{"mysqld port=3306", "client compress=", "mysqld innodb-undo-directory=/u", "xtrabackup compress-threads=4",
		"xtrabackup-x databases=d"}, got)
	assert.True(t, lines[1].Off, "skip-compress turns it off")
	assert.Equal(t, filepath.Join(conf, "b.cnf"), lines[3].File)
	assert.Equal(t, 2, lines[3].Line)

	own := inGroups(lines, toolOptionGroups(FlavorXtrabackup))
	assert.Len(t, own, 2, "[client] and [xtrabackup], not [mysqld] nor a suffixed group")
	t.Setenv("MYSQL_GROUP_SUFFIX", "-x")
	assert.Len(t, inGroups(lines, toolOptionGroups(FlavorXtrabackup)), 3, "with MYSQL_GROUP_SUFFIX=-x, [xtrabackup-x] too")

	// The first option that changes what is copied or written fails the
	// backup, naming the file, the line and the group.
	_, err = checkToolOptionFile(main, FlavorXtrabackup)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(conf, "b.cnf")+" line 2 sets [xtrabackup] compress-threads")
}

// TestOptionFileRefusals: every option that changes what the tool copies or
// how it writes files, in any group the tool reads its own options from
// (PXB xtrabackup.cc xb_server_default_groups/xb_client_default_groups;
// mariabackup handle_options), is refused; the server's own groups and the
// options the engine's command line overrides are not.
func TestOptionFileRefusals(t *testing.T) {
	for _, tc := range []struct {
		flavor, text, want string // want "": accepted
	}{
		{FlavorMariabackup, "[mariabackup]\ncompress\n", "[mariabackup] compress, which mariabackup reads as its own --compress"},
		{FlavorMariabackup, "[client]\ncompress\n", "[client] compress"},
		{FlavorMariabackup, "[client-server]\ndatabases = shop\n", "listed as a full one"},
		{FlavorMariabackup, "[mariadb-backup]\ntables-exclude=shop.t\n", "tables-exclude"},
		{FlavorXtrabackup, "[xtrabackup]\nencrypt=AES256\nencrypt-key-file=/k\n", "[xtrabackup] encrypt"},
		{FlavorXtrabackup, "[client]\ndatabases_file=/d\n", "databases-file"},
		{FlavorXtrabackup, "[xtrabackup]\nno-lock\n", "--slave-info"},
		{FlavorXtrabackup, "[xtrabackup]\nfifo-streams=4\n", "--fifo-backup-fifo-streams"},
		{FlavorXtrabackup, "[xtrabackup]\nincremental-basedir=/b\n", "--fifo-backup-full-interval"},
		{FlavorXtrabackup, "[mariabackup]\ncompress\n", ""},                                  // not a group PXB reads
		{FlavorXtrabackup, "[mysqld]\nencrypt-binlog\ncompress\n", ""},                       // the server's groups
		{FlavorMariabackup, "[client]\nskip-compress\ndatabase=shop\n", ""},                  // off; the mysql client's database
		{FlavorXtrabackup, "[xtrabackup]\ntarget-dir=/b\nparallel=8\nstream=xbstream\n", ""}, // the command line wins
	} {
		t.Run(tc.flavor+" "+strings.ReplaceAll(tc.text, "\n", " "), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "my.cnf")
			require.NoError(t, os.WriteFile(p, []byte(tc.text), 0o600))
			_, err := checkToolOptionFile(p, tc.flavor)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), p+" line 2 sets")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestPrepareNamesByVersion: Percona XtraBackup 8.4.0-8 and 9.7.2-2 renamed
// --apply-log-only and --incremental-dir (an old and a new name together are
// an error); 8.0 and earlier 8.4/9.7 builds keep the old names.
// --check-tables exists from 8.4.0-6 and 9.7.1.
func TestPrepareNamesByVersion(t *testing.T) {
	cfg := validConfig()
	step := prepareStep{TargetDir: "/t", DeltaDir: "/d", RedoOnly: true, CheckTables: true}
	for _, tc := range []struct {
		version     [4]int
		renamed     bool
		checkTables bool
	}{
		{[4]int{8, 0, 35, 30}, false, false},
		{[4]int{8, 4, 0, 5}, false, false},
		{[4]int{8, 4, 0, 6}, false, true},
		{[4]int{8, 4, 0, 8}, true, true},
		{[4]int{8, 4, 1, 1}, true, true},
		{[4]int{9, 7, 1, 0}, false, true},
		{[4]int{9, 7, 2, 1}, false, true},
		{[4]int{9, 7, 2, 2}, true, true},
		{[4]int{9, 8, 0, 1}, true, true},
	} {
		v := tc.version
		tool := &backupTool{Flavor: FlavorXtrabackup, Major: v[0], Minor: v[1], Patch: v[2], Build: v[3]}
		args, err := tool.prepareArgs(&cfg, step)
		require.NoError(t, err)
		argv := strings.Join(args, " ")
		if tc.renamed {
			assert.Contains(t, argv, "--apply-redo-only --prepare-incremental-from-dir=/d", "%v", v)
			assert.NotContains(t, argv, "--apply-log-only", "%v", v)
			assert.NotContains(t, argv, "--incremental-dir", "%v", v)
		} else {
			assert.Contains(t, argv, "--apply-log-only --incremental-dir=/d", "%v", v)
			assert.NotContains(t, argv, "redo-only", "%v", v)
		}
		assert.Equal(t, tc.checkTables, strings.Contains(argv, "--check-tables"), "%v", v)
	}
	maria := &backupTool{Flavor: FlavorMariabackup}
	ariaArgs, err := maria.prepareArgs(&cfg, prepareStep{TargetDir: "/t", AriaLogInTarget: true})
	require.NoError(t, err)
	assert.Contains(t, ariaArgs, "--aria-log-dir-path=/t", "the prepare reads the backup's Aria log, not the live server's")
	args, err := maria.prepareArgs(&cfg, step)
	require.NoError(t, err)
	assert.Equal(t, []string{"--defaults-file=/t/backup-my.cnf", "--prepare", "--target-dir=/t", "--incremental-dir=/d"}, args[:4],
		"mariabackup's prepare reads the encryption plugin's settings from the backup's own option file")
	assert.NotContains(t, strings.Join(args, " "), "--check-tables")
	step.DefaultsFile = "/t.prepare.cnf"
	args, err = maria.prepareArgs(&cfg, step)
	require.NoError(t, err)
	assert.Equal(t, []string{"--defaults-file=/t.prepare.cnf", "--prepare"}, args[:2],
		"one option file, no --defaults-extra-file (mysys ignores it beside a --defaults-file)")
}

// TestStreamFilesRefuseToolTransformedFiles: a file the tool compressed or
// encrypted (PXB: name.zst, name.lz4, name.xbcrypt; mariabackup: name.qp)
// stops the backup at once, naming it.
func TestStreamFilesRefuseToolTransformedFiles(t *testing.T) {
	files := streamFiles{}
	require.NoError(t, files.fileEnded("./shop/orders.ibd"))
	require.NoError(t, files.fileEnded("shop/t@002ezst.ibd"))
	for _, name := range []string{"shop/orders.ibd.zst", "xtrabackup_logfile.lz4", "ibdata1.xbcrypt", "shop/t.frm.qp"} {
		err := files.fileEnded(name)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "the backup tool wrote "+name)
	}
	assert.True(t, files.holds("shop/orders.ibd"))
}

// TestToolInfoRefusesPartialCompressedEncrypted: xtrabackup_info's own
// record (xtrabackup.cc write_xtrabackup_info: "partial = Y",
// "compressed = compressed", "encrypted = Y").
func TestToolInfoRefusesPartialCompressedEncrypted(t *testing.T) {
	for _, tc := range []struct{ info, want string }{
		{"partial = N\ncompressed = N\nencrypted = N\n", ""},
		{"partial = Y\n", "partial"},
		{"compressed = compressed\n", "compressed"},
		{"encrypted = Y\n", "encrypted"},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "mariadb_backup_info"), []byte("tool_name = mariabackup\n"+tc.info), 0o600))
		err := checkToolInfo(dir)
		if tc.want == "" {
			require.NoError(t, err)
			continue
		}
		require.Error(t, err, tc.info)
		assert.Contains(t, err.Error(), tc.want)
	}
}

// TestCheckCompleteNamesMissingTables: a table the server had from start to
// end with no file in the stream fails the backup, naming it; a table
// dropped during the backup does not; a delta stands for its .ibd.
func TestCheckCompleteNamesMissingTables(t *testing.T) {
	files := streamFiles{"shop/orders.frm": {}, "shop/items.ibd.delta": {}}
	before := []tableFile{{"shop.orders", "shop/orders.frm", "1"}, {"shop.items", "shop/items.ibd", "2"}, {"shop.gone", "shop/gone.frm", "3"},
		{"crm.users", "crm/users.frm", "4"}, {"crm.again", "crm/again.frm", "5"}}
	// crm.again was dropped and created again during the backup: not the same table.
	after := []tableFile{before[0], before[1], before[3], {"crm.again", "crm/again.frm", "6"}}
	err := checkComplete(files, before, after)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lacks 1 tables or databases")
	assert.Contains(t, err.Error(), "crm.users (crm/users.frm)")
	assert.NotContains(t, err.Error(), "shop.gone")
	files["crm/users.frm"] = struct{}{}
	require.NoError(t, checkComplete(files, before, after))
}

// TestServerTableFiles: the files each flavor's server has for a table, from
// its own catalogue (MySQL 8: INNODB_TABLES names as the files are named).
func TestServerTableFiles(t *testing.T) {
	query := func(answers map[string][][]string) queryRows {
		return func(_ context.Context, q string) ([][]string, error) {
			for k, v := range answers {
				if strings.Contains(q, k) {
					return v, nil
				}
			}
			return nil, nil
		}
	}
	got, err := serverTableFiles(context.Background(), query(map[string][][]string{
		"INNODB_SYS_TABLES": {{"shop/orders", "17"}, {"shop/p#P#p0", "18"}, {"shop/p#P#p1", "19"}},
		"information_schema.TABLES": {{"shop", "orders", "2026-11-25 10:00:00"}, {"my-db", "t 1", "2026-11-25 10:00:01"}, {"shop", "café", "x"},
			{"shop", "p", "y"}},
		"information_schema.SCHEMATA": {{"shop"}, {"empty"}},
	}), true)
	require.NoError(t, err)
	assert.Equal(t, []tableFile{{"shop.orders", "shop/orders.frm", "17"}, {"my-db.t 1", "my@002ddb/t@00201.frm", "2026-11-25 10:00:01"},
		{"shop.p", "shop/p.frm", "18"},
		{"database shop", "shop/db.opt", ""}, {"database empty", "empty/db.opt", ""}}, got, "a name with a two-character code is left out")

	got, err = serverTableFiles(context.Background(), query(map[string][][]string{
		"INNODB_TABLES":                        {{"shop/orders", "1066"}, {"shop/p#p#p0", "1067"}},
		"ENGINE IN ('MyISAM','CSV','ARCHIVE')": {{"shop", "m", "MyISAM", "t1"}, {"mysql", "general_log", "CSV", "t2"}},
	}), false)
	require.NoError(t, err)
	assert.Equal(t, []tableFile{{"shop.orders", "shop/orders.ibd", "1066"}, {"shop.p#p#p0", "shop/p#p#p0.ibd", "1067"}, {"shop.m", "shop/m.MYD", "t1"},
		{"mysql.general_log", "mysql/general_log.CSV", "t2"}}, got)
}

// TestPlanScan: --page-tracking on every backup of a Percona XtraBackup >=
// 8.0.27 whose server has component_mysqlbackup; a delta scans everything
// without it, with the reduced DDL lock (forced), and always on mariabackup.
func TestPlanScan(t *testing.T) {
	withComponent := func(_ context.Context, q string) ([][]string, error) {
		return [][]string{{mysqlbackupComponent}}, nil
	}
	without := func(_ context.Context, q string) ([][]string, error) { return nil, nil }
	pxb := &backupTool{Flavor: FlavorXtrabackup, Major: 8, Minor: 0, Patch: 35, Build: 30}
	run := func(tool *backupTool, delta bool, flags string, q queryRows, opts []optionLine) scanPlan {
		b := &backupRun{tool: tool, cfg: Config{BackupFlags: flags}, logger: logutil.NewMemoryLogger()}
		if delta {
			b.base = &member{m: &Manifest{}}
		}
		return b.planScan(context.Background(), q, opts)
	}
	assert.Equal(t, scanPlan{args: []string{"--page-tracking"}}, run(pxb, false, "", withComponent, nil), "a full starts the tracking")
	assert.Equal(t, scanPlan{args: []string{"--page-tracking"}, mode: ScanPageTracking}, run(pxb, true, "", withComponent, nil))
	assert.Equal(t, scanPlan{mode: ScanFull}, run(pxb, true, "", without, nil))
	assert.Equal(t, scanPlan{args: []string{"--incremental-force-scan"}, mode: ScanFull}, run(pxb, true, "--lock-ddl=REDUCED", withComponent, nil))
	assert.Equal(t, scanPlan{args: []string{"--incremental-force-scan"}, mode: ScanFull}, run(pxb, true, "", withComponent,
		[]optionLine{{Name: "lock-ddl", Value: "REDUCED"}}))
	assert.Equal(t, scanPlan{}, run(pxb, false, "--lock_ddl=reduced", withComponent, nil))
	old := &backupTool{Flavor: FlavorXtrabackup, Major: 8, Minor: 0, Patch: 26, Build: 18}
	assert.Equal(t, scanPlan{mode: ScanFull}, run(old, true, "", withComponent, nil))
	assert.Equal(t, scanPlan{mode: ScanFull}, run(&backupTool{Flavor: FlavorMariabackup}, true, "", withComponent, nil))
}

// TestCheckKeyring: a server with encrypted tablespaces gets a backup only
// when its prepare will have the keyring (xtrabackup.cc keyring_init_offline:
// a component_keyring_*.cnf in the backup, or a keyring option).
func TestCheckKeyring(t *testing.T) {
	encrypted := func(_ context.Context, q string) ([][]string, error) {
		return [][]string{{"shop/cards"}, {"shop/secrets"}}, nil
	}
	err := checkKeyring(context.Background(), encrypted, streamFiles{"shop/cards.ibd": {}}, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 encrypted tablespaces (shop/cards, shop/secrets)")
	assert.Contains(t, err.Error(), "--component-keyring-config")
	require.NoError(t, checkKeyring(context.Background(), encrypted, streamFiles{"component_keyring_file.cnf": {}}, ""))
	require.NoError(t, checkKeyring(context.Background(), encrypted, streamFiles{}, "--keyring_file_data=/k"))
	none := func(_ context.Context, q string) ([][]string, error) { return nil, nil }
	require.NoError(t, checkKeyring(context.Background(), none, streamFiles{}, ""))
}

// TestEncryptedTablesRefusedWithoutKeyring: a table restore of a MySQL 8
// backup refuses, naming it, a table whose tablespace is encrypted (page 0's
// FSP flags, bit 13: fsp0types.h FSP_FLAGS_POS_ENCRYPTION) when nothing gives
// the prepare the keyring.
func TestEncryptedTablesRefusedWithoutKeyring(t *testing.T) {
	dir := t.TempDir()
	page := func(flags uint32) []byte {
		b := make([]byte, 16<<10)
		binary.BigEndian.PutUint32(b[fspSpaceFlagsOffset:], flags)
		return b
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "shop"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shop", "cards.ibd"), page(fspFlagEncryption|1<<5), 0o640))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shop", "orders.ibd"), page(1<<5), 0o640))
	tables := []*TableFiles{{DB: "shop", Table: "cards", Paths: []string{"shop/cards.ibd"}}, {DB: "shop", Table: "orders", Paths: []string{"shop/orders.ibd"}}}
	err := checkEncryptedTables(dir, tables, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shop.cards: encrypted InnoDB tablespace")
	assert.NotContains(t, err.Error(), "shop.orders")
	require.NoError(t, checkEncryptedTables(dir, tables[1:], ""))
	require.NoError(t, checkEncryptedTables(dir, tables, "--component-keyring-config=/etc/k.cnf"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "component_keyring_file.cnf"), []byte("{}"), 0o640))
	require.NoError(t, checkEncryptedTables(dir, tables, ""))
}
