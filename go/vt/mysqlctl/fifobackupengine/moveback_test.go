package fifobackupengine

import (
	"os"

	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// makeTree creates files (content = their name; a trailing / makes a directory).
func makeTree(t *testing.T, root string, files map[string]string) {
	for name, content := range files {
		p := filepath.Join(root, name)
		if strings.HasSuffix(name, "/") {
			require.NoError(t, os.MkdirAll(p, 0o750))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
		if content == "" {
			content = name
		}
		require.NoError(t, os.WriteFile(p, []byte(content), 0o640))
	}
}

func testLayout(root string) restoreLayout {
	return restoreLayout{
		DataDir:      filepath.Join(root, "data"),
		DataHomeDir:  filepath.Join(root, "innodb/data"),
		LogHomeDir:   filepath.Join(root, "innodb/logs"),
		UndoDir:      filepath.Join(root, "undo"),
		BinLogPath:   filepath.Join(root, "bin-logs/vt-0000000100-bin"),
		ExternalDirs: []string{filepath.Join(root, "ext")},
	}
}

// requirePlaced checks that each file (relative to root) holds what the
// backup's file of that name held, and that nothing else was placed.
func requirePlaced(t *testing.T, root string, want map[string]string) {
	for dst, src := range want {
		p := filepath.Join(root, dst)
		if strings.HasSuffix(dst, "/") {
			assert.DirExists(t, p)
			continue
		}
		b, err := os.ReadFile(p)
		if assert.NoError(t, err, "%s must be at %s", src, dst) {
			assert.Equal(t, src, string(b), dst)
		}
	}
}

// TestMoveBackMySQL8Tree: a prepared backup shaped as Percona XtraBackup
// 8.0.35 and 8.4 leave it (backup_copy.cc copy_back, space_map.cc
// serialize, xtrabackup.cc xtrabackup_close_temp_log: #innodb_redo emptied
// but kept) goes where copy-back puts it.
func TestMoveBackMySQL8Tree(t *testing.T) {
	root := t.TempDir()
	staging := filepath.Join(root, "staging")
	ext := filepath.Join(root, "ext")
	tablespaces := `{"version":2,"external_tablespaces":[` +
		`{"file_name":"` + ext + `/db1/t2.ibd","tablespace_name":"db1/t2","tablespace_type":"TABLESPACE"},` +
		`{"file_name":"` + ext + `/db1/t3#p#p0.ibd","tablespace_name":"db1/t3#p#p0","tablespace_type":"TABLESPACE"},` +
		`{"file_name":"` + ext + `/gen/ts_ext.ibd","tablespace_name":"ts_ext","tablespace_type":"TABLESPACE"},` +
		`{"file_name":"/elsewhere/u3.ibu","tablespace_name":"u3","tablespace_type":"UNDO_LOG"}]}`
	makeTree(t, staging, map[string]string{
		"backup-my.cnf": "", "xtrabackup_checkpoints": "", "xtrabackup_info": "", "xtrabackup_logfile": "",
		"xtrabackup_binlog_info": "", "xtrabackup_tablespaces": tablespaces,
		"ibdata1": "", "undo_001": "", "undo_002": "", "u3.ibu": "", "mysql.ibd": "", "ts_gen.ibd": "", "ts_ext.ibd": "",
		"ib_buffer_pool": "", "#innodb_redo/": "",
		"binlog.000007": "", "binlog.index": "./binlog.000006\n./binlog.000007\n",
		"db1/t1.ibd": "", "db1/t2.ibd": "", "db1/t3#p#p0.ibd": "", "db1/t3#p#p1.ibd": "", "db1/m.MYD": "", "db1/m.MYI": "", "db1/m_362.sdi": "",
		"mysql/general_log.CSV": "", "sys/sys_config.ibd": "", "performance_schema/": "",
		"xtrabackup_slave_info": "", "ib_logfile0": "", "xtrabackup_backup/t.ibd": "", "mariadb_backup_x/t.ibd": "",
	})
	l := testLayout(root)
	l.Flavor = FlavorXtrabackup
	moves, index, err := planMoveBack(staging, l)
	require.NoError(t, err)
	require.NoError(t, applyMoveBack(staging, moves, index))
	require.NoError(t, checkArrived(staging, moves, l))

	requirePlaced(t, root, map[string]string{
		"innodb/data/ibdata1": "ibdata1",
		"undo/undo_001":       "undo_001", "undo/undo_002": "undo_002", "undo/u3.ibu": "u3.ibu",
		"innodb/logs/#innodb_redo/": "",
		"data/mysql.ibd":            "mysql.ibd", "data/ts_gen.ibd": "ts_gen.ibd", "data/ib_buffer_pool": "ib_buffer_pool",
		"ext/gen/ts_ext.ibd": "ts_ext.ibd",
		"ext/db1/t2.ibd":     "db1/t2.ibd", "ext/db1/t3#p#p0.ibd": "db1/t3#p#p0.ibd",
		"data/db1/t1.ibd": "db1/t1.ibd", "data/db1/t3#p#p1.ibd": "db1/t3#p#p1.ibd",
		"data/db1/m.MYD": "db1/m.MYD", "data/db1/m_362.sdi": "db1/m_362.sdi",
		"data/mysql/general_log.CSV": "mysql/general_log.CSV", "data/sys/sys_config.ibd": "sys/sys_config.ibd",
		"data/performance_schema/":          "",
		"bin-logs/vt-0000000100-bin.000007": "binlog.000007",
		"bin-logs/vt-0000000100-bin.index":  filepath.Join(root, "bin-logs/vt-0000000100-bin.000007") + "\n",
		// backup_copy.cc copies these into the data directory (should_skip_file_on_copy_back does not skip them).
		"data/xtrabackup_info": "xtrabackup_info", "data/xtrabackup_slave_info": "xtrabackup_slave_info",
		// A database is a directory, whatever its name: never taken for the tool's metadata.
		"data/xtrabackup_backup/t.ibd": "xtrabackup_backup/t.ibd", "data/mariadb_backup_x/t.ibd": "mariadb_backup_x/t.ibd",
	})
	assert.NoFileExists(t, filepath.Join(root, "innodb/logs/ib_logfile0"), "copy-back skips ib_logfile<n> (should_skip_file_on_copy_back)")
	assert.NoFileExists(t, filepath.Join(root, "data/db1/t2.ibd"), "an external tablespace is not also in the data dir")
	assert.NoFileExists(t, filepath.Join(root, "data/binlog.index"))
	// The tool's metadata stays behind.
	for _, name := range []string{"backup-my.cnf", "xtrabackup_checkpoints", "xtrabackup_logfile", "xtrabackup_tablespaces", "xtrabackup_binlog_info",
		"binlog.index"} {
		assert.FileExists(t, filepath.Join(staging, name))
		assert.NoFileExists(t, filepath.Join(root, "data", name))
	}
}

// TestMoveBackMariaDBTree: mariabackup 10.11's layout (undo001, ib_logfile0,
// db/t.isl naming the .ibd of a DATA DIRECTORY table, partitions too): the
// .ibd goes where its .isl says, the .isl stays with the database.
func TestMoveBackMariaDBTree(t *testing.T) {
	root := t.TempDir()
	staging := filepath.Join(root, "staging")
	ext := filepath.Join(root, "ext")
	makeTree(t, staging, map[string]string{
		"backup-my.cnf": "", "xtrabackup_checkpoints": "", "xtrabackup_info": "",
		"ibdata1": "", "ib_logfile0": "", "undo001": "", "undo002": "", "aria_log_control": "", "aria_log.00000001": "",
		"db1/t1.ibd": "", "db1/t1.frm": "",
		"db1/t2.ibd": "", "db1/t2.frm": "", "db1/t2.isl": ext + "/db1/t2.ibd",
		"db1/p#P#p0.ibd": "", "db1/p#P#p0.isl": ext + "/db1/p#P#p0.ibd\n", "db1/p#P#p1.ibd": "", "db1/p.frm": "", "db1/p.par": "",
	})
	l := testLayout(root)
	l.UndoDir, l.BinLogPath, l.Flavor = "", "", FlavorMariabackup
	moves, index, err := planMoveBack(staging, l)
	require.NoError(t, err)
	assert.Nil(t, index)
	require.NoError(t, applyMoveBack(staging, moves, index))
	require.NoError(t, checkArrived(staging, moves, l))
	requirePlaced(t, root, map[string]string{
		"innodb/data/ibdata1": "ibdata1", "innodb/logs/ib_logfile0": "ib_logfile0",
		"data/undo001": "undo001", "data/undo002": "undo002", "data/aria_log_control": "aria_log_control",
		"data/db1/t1.ibd": "db1/t1.ibd", "data/db1/t2.frm": "db1/t2.frm", "data/db1/t2.isl": ext + "/db1/t2.ibd",
		"ext/db1/t2.ibd": "db1/t2.ibd", "ext/db1/p#P#p0.ibd": "db1/p#P#p0.ibd", "data/db1/p#P#p1.ibd": "db1/p#P#p1.ibd",
	})
	assert.NoFileExists(t, filepath.Join(root, "data/db1/t2.ibd"))
}

// TestMoveBackRefusesUntrustedPaths: the paths come from the backup, so
// only a new (or replaced regular) .ibd under an allowed directory is
// written; anything else fails before a file moves, naming the table.
func TestMoveBackRefusesUntrustedPaths(t *testing.T) {
	for _, tc := range []struct {
		name, isl string
		allowed   []string // relative to root; nil: the layout's
		want      []string
	}{
		{"outside the allowed dirs", "/var/lib/other/db1/t.ibd", nil, []string{"db1/t.ibd (t.isl) lived at /var/lib/other/db1/t.ibd",
			"--fifo-backup-external-tablespace-dirs"}},
		{"no allowed dir", "ROOT/ext/db1/t.ibd", []string{}, []string{"no directory is allowed", "--fifo-backup-external-tablespace-dirs"}},
		{"dot-dot", "ROOT/ext/../etc/t.ibd", nil, []string{"not a clean absolute path"}},
		{"relative", "ext/db1/t.ibd", nil, []string{"not a clean absolute path"}},
		{"not an ibd", "ROOT/ext/db1/t.cnf", nil, []string{"not a clean absolute path of an .ibd"}},
		{"through a symbolic link out", "ROOT/ext/link/t.ibd", nil, []string{"outside the directories"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			staging := filepath.Join(root, "staging")
			require.NoError(t, os.MkdirAll(filepath.Join(root, "ext"), 0o750))
			require.NoError(t, os.MkdirAll(filepath.Join(root, "outside"), 0o750))
			require.NoError(t, os.Symlink(filepath.Join(root, "outside"), filepath.Join(root, "ext/link")))
			makeTree(t, staging, map[string]string{"db1/t.ibd": "", "db1/t.isl": strings.ReplaceAll(tc.isl, "ROOT", root)})
			l := testLayout(root)
			if tc.allowed != nil {
				l.ExternalDirs = tc.allowed
			}
			_, _, err := planMoveBack(staging, l)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.FileExists(t, filepath.Join(staging, "db1/t.ibd"))
		})
	}

	t.Run("never over a symbolic link; a regular file is replaced", func(t *testing.T) {
		root := t.TempDir()
		staging := filepath.Join(root, "staging")
		makeTree(t, staging, map[string]string{"db1/t.ibd": "", "db1/t.isl": root + "/ext/db1/t.ibd", "db1/u.ibd": "", "db1/u.isl": root + "/ext/db1/u.ibd"})
		makeTree(t, root, map[string]string{"ext/db1/u.ibd": "old data", "victim": "precious"})
		require.NoError(t, os.Symlink(filepath.Join(root, "victim"), filepath.Join(root, "ext/db1/t.ibd")))
		moves, index, err := planMoveBack(staging, testLayout(root))
		require.NoError(t, err)
		err = applyMoveBack(staging, moves, index)
		require.ErrorContains(t, err, "a symbolic link is there, and a restore never writes over it")
		b, _ := os.ReadFile(filepath.Join(root, "victim"))
		assert.Equal(t, "precious", string(b))

		require.NoError(t, os.Remove(filepath.Join(root, "ext/db1/t.ibd")))
		require.NoError(t, applyMoveBack(staging, moves[1:], index)) // u.ibd: an old regular file
		b, _ = os.ReadFile(filepath.Join(root, "ext/db1/u.ibd"))
		assert.Equal(t, "db1/u.ibd", string(b))
	})
}

// TestMoveByRenameAcrossFileSystems: a tablespace that goes to another
// mount (the temp dir on the root file system -> /dev/shm, a tmpfs) is
// copied, file or directory, then removed from staging.
func TestMoveByRenameAcrossFileSystems(t *testing.T) {
	src := t.TempDir()
	dst, err := os.MkdirTemp("/dev/shm", "fifo-move-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dst) })
	var a, b syscall.Stat_t
	require.NoError(t, syscall.Stat(src, &a))
	require.NoError(t, syscall.Stat(dst, &b))
	require.NotEqual(t, a.Dev, b.Dev, "the test needs /dev/shm on another file system than %s", src)

	makeTree(t, src, map[string]string{"t.ibd": "", "db/x.ibd": "", "db/y.frm": ""})
	require.NoError(t, moveByRename(filepath.Join(src, "t.ibd"), filepath.Join(dst, "t.ibd")))
	require.NoError(t, moveByRename(filepath.Join(src, "db"), filepath.Join(dst, "db")))
	requirePlaced(t, dst, map[string]string{"t.ibd": "t.ibd", "db/x.ibd": "db/x.ibd", "db/y.frm": "db/y.frm"})
	st, err := os.Stat(filepath.Join(dst, "t.ibd"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm(), "the mode is kept")
	assert.NoFileExists(t, filepath.Join(src, "t.ibd"))
	assert.NoDirExists(t, filepath.Join(src, "db"))
	// Never over an existing file.
	makeTree(t, src, map[string]string{"u.ibd": ""})
	makeTree(t, dst, map[string]string{"u.ibd": "old"})
	require.Error(t, moveByRename(filepath.Join(src, "u.ibd"), filepath.Join(dst, "u.ibd")))
}

// TestMoveBackAriaLogDir: with aria_log_dir_path set, Aria's log goes there
// (mariabackup --copy-back --aria-log-dir-path, MDEV-30968; MariaDB
// mysql-test aria_log_dir_path.inc), not into the data directory where the
// server would not find it.
func TestMoveBackAriaLogDir(t *testing.T) {
	root := t.TempDir()
	staging := filepath.Join(root, "staging")
	makeTree(t, staging, map[string]string{"aria_log_control": "", "aria_log.00000001": "", "aria_log.00000002": "", "db1/t.MAI": ""})
	l := testLayout(root)
	l.Flavor, l.AriaLogDir = FlavorMariabackup, filepath.Join(root, "aria")
	moves, index, err := planMoveBack(staging, l)
	require.NoError(t, err)
	require.NoError(t, applyMoveBack(staging, moves, index))
	require.NoError(t, checkArrived(staging, moves, l))
	requirePlaced(t, root, map[string]string{"aria/aria_log_control": "aria_log_control", "aria/aria_log.00000002": "aria_log.00000002",
		"data/db1/t.MAI": "db1/t.MAI"})
	assert.NoFileExists(t, filepath.Join(root, "data/aria_log_control"))

	// The option file as the server reads it: relative to the data directory.
	cnf := filepath.Join(root, "my.cnf")
	require.NoError(t, os.WriteFile(cnf, []byte("[mysqld]\naria_log_dir_path = arialogs # here\n[client]\naria-log-dir-path=/wrong\n"), 0o600))
	got, err := layoutFor(&mysqlctl.Mycnf{Path: cnf, DataDir: "/vt/data"}, &Config{})
	require.NoError(t, err)
	assert.Equal(t, "/vt/data/arialogs", got.AriaLogDir)
}

// TestCheckArrivedNamesWhatWouldBeLost: an entry left in staging that is not
// the tool's metadata fails the restore, naming it.
func TestCheckArrivedNamesWhatWouldBeLost(t *testing.T) {
	staging := t.TempDir()
	makeTree(t, staging, map[string]string{"xtrabackup_checkpoints": "", "backup-my.cnf": "", "shop/orders.ibd": ""})
	err := checkArrived(staging, nil, restoreLayout{Flavor: FlavorMariabackup})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the backup holds shop, which the restore did not place")
}
