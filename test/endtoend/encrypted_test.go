package endtoend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vtfifo/vtfifo/test/endtoend/cluster"
)

// serverKeyFile is a file_key_management key file the cluster's processes
// read: key ids and their hex keys.
type serverKeyFile struct {
	path string
	keys map[int]string
}

func newServerKeyFile(t *testing.T) *serverKeyFile {
	dir, err := os.MkdirTemp("", "e2e-server-keys-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	k := &serverKeyFile{path: filepath.Join(dir, "keys.txt"), keys: map[int]string{1: randomKey(t), 2: randomKey(t)}}
	k.write(t, k.keys)
	return k
}

func randomKey(t *testing.T) string {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	must(t, err)
	return hex.EncodeToString(b)
}

// write writes keys as the key file (nil removes it).
func (k *serverKeyFile) write(t *testing.T, keys map[int]string) {
	if keys == nil {
		must(t, os.Remove(k.path))
		return
	}
	var b strings.Builder
	for id, key := range keys {
		fmt.Fprintf(&b, "%d;%s\n", id, key)
	}
	must(t, os.WriteFile(k.path, []byte(b.String()), 0o644))
}

// mysqldLines are an encrypting MariaDB's [mysqld] lines, as an operator
// writes them: the plugin by name (no plugin_dir), tables, redo log,
// temporary tables and binary log encrypted, Aria's left off.
func (k *serverKeyFile) mysqldLines() string {
	return "plugin_load_add=file_key_management\nfile_key_management_filename=" + k.path + "\ninnodb_encrypt_tables=ON\n" +
		"innodb_encrypt_log=ON\ninnodb_encrypt_temporary_tables=ON\nencrypt_binlog=ON\n"
}

// writeUnderLoad commits rows into writes and creates encrypted tables,
// one at a time, until stop is closed; it returns the rows and tables
// committed before it stopped.
func writeUnderLoad(ctx context.Context, tab *cluster.Tablet, db string, stop <-chan struct{}) (rows, tables int, err error) {
	for i := 1; ; i++ {
		select {
		case <-stop:
			return rows, tables, nil
		default:
		}
		if _, err := tab.Exec(ctx, fmt.Sprintf("INSERT INTO %s.writes (payload) VALUES ('row %d')", db, i)); err != nil {
			return rows, tables, err
		}
		rows++
		if i%25 == 0 {
			q := fmt.Sprintf("CREATE TABLE %s.ddl_%04d (id INT PRIMARY KEY, v VARCHAR(32)) ENCRYPTED=YES ENCRYPTION_KEY_ID=2", db, tables+1)
			if _, err := tab.Exec(ctx, q); err != nil {
				return rows, tables, err
			}
			tables++
		}
	}
}

// TestEncryptedServerFlows: a shard whose MariaDB encrypts its data at rest
// (file_key_management; a table under a second key id) goes through every
// flow that prepares or starts a server on a backup's files, with the real
// binaries: a full backup under a writer and DDL and a delta on it, vtfifo
// show, test-restore and restore-table of the encrypted table into the live
// server, the bootstrap of a fresh tablet (--restore-from-backup), the
// failures before any download of RestoreFromBackup on a tablet whose key
// file lacks a key id, holds another key under it or is missing, then
// RestoreFromBackup itself, and a scheduled vtbackup run (restore, catch up,
// delta) whose backup restores into a fresh tablet. Each restore is compared
// with the source at the backup's position.
func TestEncryptedServerFlows(t *testing.T) {
	sb := splitBackend("split-local", "file", false, false)
	keys := newServerKeyFile(t)
	c := startCluster(t, cluster.Options{PrepareStorage: sb.prepare(t), MysqldLines: keys.mysqldLines()})
	ctx := ctxFor(t, 30*time.Minute)
	db := c.DBName()
	incremental := []string{"--fifo-backup-full-interval=1h"}
	tablet := func(uid int) *cluster.Tablet {
		tab, err := c.NewTablet(uid)
		must(t, err)
		tab.Engine = engineFor(c, sb.engine)
		tab.ExtraArgs = incremental
		must(t, tab.InitMySQL(ctx))
		return tab
	}
	vtfifo := vtfifoRunner(ctx, c)

	tool := toolFlags(c)

	p := tablet(100)
	must(t, startSampledPrimary(ctx, c, p, 4000))
	for _, q := range []string{
		"CREATE TABLE " + db + ".secret2 (id INT PRIMARY KEY, v VARCHAR(64)) ENGINE=InnoDB ENCRYPTED=YES ENCRYPTION_KEY_ID=2",
		"INSERT INTO " + db + ".secret2 SELECT seq, CONCAT('secret ', seq) FROM " + db + ".seq_1_to_3000",
		"CREATE TABLE " + db + ".writes (id BIGINT AUTO_INCREMENT PRIMARY KEY, payload VARCHAR(64) NOT NULL) ENGINE=InnoDB",
	} {
		_, err := p.Exec(ctx, q)
		must(t, err)
	}

	// A full backup while a writer commits rows and creates tables.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written, created int
	var writeErr error
	wg.Go(func() { written, created, writeErr = writeUnderLoad(ctx, p, db, stop) })
	time.Sleep(500 * time.Millisecond)
	backupErr := p.Backup(ctx, true, "")
	close(stop)
	wg.Wait()
	must(t, backupErr)
	must(t, writeErr)
	t.Logf("during the full backup: %d rows and %d encrypted tables committed", written, created)
	must(t, p.AddRows(ctx, 300))
	time.Sleep(time.Second) // backup names have seconds
	must(t, p.Backup(ctx, true, ""))
	atDelta, err := p.Checksums(ctx)
	must(t, err)
	names, err := c.GetBackups(ctx)
	must(t, err)
	if len(names) != 2 {
		t.Fatalf("GetBackups = %v, want a full and a delta", names)
	}
	delta := names[1]

	t.Run("show", func(t *testing.T) {
		out := vtfifo(t, 0, "show", "--backup="+delta)
		if !strings.Contains(out, "Server encryption:  file_key_management, key ids 1,2 (") || !strings.Contains(out, "key file "+keys.path) {
			t.Fatalf("vtfifo show names no server encryption:\n%s", out)
		}
		for id, key := range keys.keys {
			if strings.Contains(strings.ToLower(out), key) {
				t.Fatalf("vtfifo show prints key %d", id)
			}
		}
	})
	t.Run("test-restore", func(t *testing.T) {
		out := vtfifo(t, 0, append([]string{"test-restore", "--backup=" + delta, "--record=false"}, tool...)...)
		if !strings.Contains(out, "passed") {
			t.Fatalf("test-restore of the encrypted chain:\n%s", out)
		}
	})
	t.Run("restore-table-encrypted-table", func(t *testing.T) {
		dir, err := os.MkdirTemp(c.TmpDir, "restore-table-")
		must(t, err)
		must(t, os.Chmod(dir, 0o777))
		out := vtfifo(t, 0, append([]string{"restore-table", "--backup=" + delta, "--target-dir=" + filepath.Join(dir, "t"), "--table=" + db + ".secret2",
			"--into-tablet=" + p.Alias, "--as=" + db + ".secret2_restored"}, tool...)...)
		if !strings.Contains(out, "OK: "+db+".secret2 imported as "+db+".secret2_restored through the binary log") {
			t.Fatalf("restore-table secret2:\n%s", out)
		}
		now, err := p.Checksums(ctx)
		must(t, err)
		got := map[string]cluster.TableSum{}
		for _, s := range now {
			got[s.Table] = s
		}
		if a, b := got["secret2"], got["secret2_restored"]; a.Rows != b.Rows || a.Checksum != b.Checksum {
			t.Fatalf("secret2_restored %+v, want %+v", b, a)
		}

		// The keys for the prepare from another option file (--defaults-file),
		// a live server whose key file has no key id 2: refused before IMPORT.
		hostKeys := &serverKeyFile{path: filepath.Join(filepath.Dir(keys.path), "restore-host-keys.txt"), keys: keys.keys}
		hostKeys.write(t, keys.keys)
		hostCnf := filepath.Join(filepath.Dir(keys.path), "restore-host.cnf")
		must(t, os.WriteFile(hostCnf, []byte("[mysqld]\nfile_key_management_filename="+hostKeys.path+"\n"), 0o644))
		keys.write(t, map[int]string{1: keys.keys[1]})
		defer keys.write(t, keys.keys)
		out = vtfifo(t, 2, append([]string{"restore-table", "--backup=" + delta, "--target-dir=" + filepath.Join(dir, "u"), "--table=" + db + ".secret2",
			"--into-tablet=" + p.Alias, "--as=" + db + ".secret2_refused", "--defaults-file=" + hostCnf, "--unreplicated"}, tool...)...)
		// A usage error (exit 2, no FAIL): the live server lacks the key, the backup is not judged.
		want := db + ".secret2 encrypted under key id 2: the live server's key file " + keys.path + " has no key id 2"
		if !strings.Contains(out, want) || !strings.Contains(out, "nothing was imported") {
			t.Fatalf("restore-table into a server without key 2: want %q:\n%s", want, out)
		}
		if res, err := p.Exec(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'secret2_refused'"); err != nil ||
			res.Rows[0][0].ToString() != "0" {
			t.Fatalf("secret2_refused exists after a refused import (%v)", err)
		}
	})
	if t.Failed() {
		return
	}

	// Disaster: the primary and its data are gone; a fresh tablet bootstraps
	// from the encrypted chain with its own option file.
	must(t, p.Destroy(ctx))
	r := tablet(101)
	t.Run("bootstrap-restore-from-backup", func(t *testing.T) {
		must(t, r.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
		checkData(ctx, t, r, atDelta)
		checkWrites(ctx, t, r, db, written, created)
	})
	if t.Failed() {
		return
	}

	t.Run("restorefrombackup-without-the-keys", func(t *testing.T) {
		defer keys.write(t, keys.keys)
		for _, tc := range []struct {
			name string
			keys map[int]string
			want string
		}{
			{"key-id-missing", map[int]string{1: keys.keys[1]}, "key id 2 is not in the key file " + keys.path},
			{"another-key", map[int]string{1: keys.keys[1], 2: randomKey(t)}, "key id 2 in the key file " + keys.path},
			{"key-file-missing", nil, "cannot read the key file " + keys.path},
		} {
			keys.write(t, tc.keys)
			err := r.RestoreFromBackup(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was downloaded") ||
				!strings.Contains(err.Error(), "set file_key_management_filename in the [mysqld] group of ") {
				t.Fatalf("%s: RestoreFromBackup: %v, want an error with %q", tc.name, err, tc.want)
			}
			keys.write(t, keys.keys)
			checkData(ctx, t, r, atDelta) // untouched
		}
	})
	// This host's keys are not the backup's damage: a test restore without
	// them reaches no verdict (exit 3), records nothing and quarantines
	// nothing; nor does a restore --prepare.
	t.Run("test-restore-without-the-keys", func(t *testing.T) {
		defer keys.write(t, keys.keys)
		keys.write(t, map[int]string{1: keys.keys[1]})
		out := vtfifo(t, 3, append([]string{"test-restore", "--backup=" + delta, "--quarantine-on-failure"}, tool...)...)
		for _, want := range []string{"FAIL: test restore of ", "could not run, nothing is recorded: backup " + delta + " is encrypted by " +
			"file_key_management with key ids 1,2: key id 2 is not in the key file " + keys.path} {
			if !strings.Contains(out, want) {
				t.Fatalf("test-restore without key 2: want %q in:\n%s", want, out)
			}
		}
		var infos []struct {
			Name         string
			Verification json.RawMessage
		}
		must(t, decodeJSON(vtfifo(t, 0, "ls", "--json"), "[", &infos))
		for _, i := range infos {
			if i.Name == delta && len(i.Verification) > 0 && string(i.Verification) != "null" {
				t.Fatalf("a test restore that could not run recorded %s", i.Verification)
			}
		}
		if listed, err := c.GetBackups(ctx); err != nil || !slices.Contains(listed, delta) {
			t.Fatalf("%s is no longer listed (%v): quarantined for this host's keys", delta, err)
		}
		dir, err := os.MkdirTemp(c.TmpDir, "restore-nokeys-")
		must(t, err)
		must(t, os.Chmod(dir, 0o777))
		out = vtfifo(t, 3, append([]string{"restore", "--backup=" + delta, "--target-dir=" + filepath.Join(dir, "d"), "--prepare"}, tool...)...)
		if !strings.Contains(out, "key id 2 is not in the key file "+keys.path) {
			t.Fatalf("restore --prepare without key 2:\n%s", out)
		}
	})
	t.Run("restorefrombackup", func(t *testing.T) {
		_, err := r.Exec(ctx, "DELETE FROM "+db+".secret2 WHERE id <= 100")
		must(t, err)
		must(t, r.RestoreFromBackup(ctx))
		must(t, r.WaitForType(ctx, "REPLICA", 5*time.Minute))
		checkData(ctx, t, r, atDelta)
	})
	if t.Failed() {
		return
	}

	t.Run("vtbackup-then-bootstrap", func(t *testing.T) {
		must(t, promote(ctx, t, c, r))
		must(t, r.AddRows(ctx, 200))
		_, err := r.Exec(ctx, "INSERT INTO "+db+".secret2 SELECT 100000 + seq, 'after' FROM "+db+".seq_1_to_50")
		must(t, err)
		want, err := r.Checksums(ctx)
		must(t, err)
		// vtbackup's own test restore proves its new backup with this host's keys.
		hostCnf := filepath.Join(filepath.Dir(keys.path), "vtbackup-host.cnf")
		must(t, os.WriteFile(hostCnf, []byte("[mysqld]\n"+keys.mysqldLines()), 0o644))
		extra := append(slices.Clone(incremental), "--fifo-backup-test-restore", "--fifo-backup-test-restore-defaults-file="+hostCnf)
		_, err = c.RunVtbackup(ctx, cluster.VtbackupOptions{Engine: engineFor(c, sb.engine), Extra: extra})
		must(t, err)
		after, err := c.GetBackups(ctx)
		must(t, err)
		if len(after) != 3 || !slices.Equal(after[:2], names) {
			t.Fatalf("after vtbackup: %v, want %v and one more", after, names)
		}
		if out := vtfifo(t, 0, "ls"); !strings.Contains(out, "passed") {
			t.Fatalf("vtfifo ls shows no passed test restore of vtbackup's backup:\n%s", out)
		}
		// vtfifo restore --prepare of the chain with this host's keys.
		dir, err := os.MkdirTemp(c.TmpDir, "restore-prepare-")
		must(t, err)
		must(t, os.Chmod(dir, 0o777))
		out := vtfifo(t, 0, append([]string{"restore", "--backup=" + after[2], "--target-dir=" + filepath.Join(dir, "d"), "--prepare",
			"--defaults-file=" + hostCnf}, tool...)...)
		if !strings.Contains(out, "prepared with mariabackup") {
			t.Fatalf("vtfifo restore --prepare of the encrypted chain:\n%s", out)
		}
		must(t, r.Destroy(ctx))
		n := tablet(102)
		must(t, n.Start(ctx, cluster.StartOptions{RestoreFromBackup: true}))
		checkData(ctx, t, n, want)
	})
}

// checkWrites: the rows and tables the writer committed during the full
// backup are all there (the delta was taken after it stopped), and nothing
// beyond.
func checkWrites(ctx context.Context, t *testing.T, tab *cluster.Tablet, db string, rows, tables int) {
	t.Helper()
	res, err := tab.Exec(ctx, "SELECT COUNT(*), COALESCE(MAX(id), 0) FROM "+db+".writes")
	must(t, err)
	n, _ := res.Rows[0][0].ToInt64()
	maxID, _ := res.Rows[0][1].ToInt64()
	if n != int64(rows) || maxID != int64(rows) {
		t.Fatalf("writes: %d rows up to id %d, want %d", n, maxID, rows)
	}
	res, err = tab.Exec(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '"+db+"' AND table_name LIKE 'ddl\\_%'")
	must(t, err)
	if got, _ := res.Rows[0][0].ToInt64(); got != int64(tables) {
		t.Fatalf("%d ddl_ tables, want %d", got, tables)
	}
}
