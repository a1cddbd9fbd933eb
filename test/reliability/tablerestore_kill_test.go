package reliability

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/tableimport"
)

// TestKillDuringTableCopy: vtfifo restore-table into the tablet's mysqld,
// which writes a binary log, copies a table through it in batches; SIGKILLed
// in the middle of that copy, it leaves the target with whole batches
// beside its local copy. Run again, it refuses that target (exit 1, naming
// --resume, nothing downloaded); with --resume it finishes the copy, and the
// table equals the source, its local copy gone.
func TestKillDuringTableCopy(t *testing.T) {
	f := newFixture(t)
	f.useStorage(t, splitstoragetest.Local(t).Config)
	require.Equal(t, "1", f.srv.Query(t, "SELECT @@GLOBAL.log_bin"), "the tablet's mysqld writes a binary log")
	f.srv.Exec(t, "CREATE TABLE "+sampleDB+".copyme (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	f.srv.Exec(t, "INSERT INTO "+sampleDB+".copyme SELECT seq, seq % 1000 FROM "+sampleDB+".seq_1_to_600000")
	want := mariadbtest.Checksums(t, f.srv.DB(), sampleDB)["copyme"]
	require.NoError(t, f.backup(context.Background(), nil))

	// The throwaway server runs as the mysql user (we are root here): it
	// must reach the restore's directory.
	scratch, err := os.MkdirTemp("", "tablecopy-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scratch) })
	require.NoError(t, os.Chmod(scratch, 0o755))
	target := sampleDB + ".copyme_restored"
	args := func(dir string, more ...string) []string {
		return append([]string{"--table=" + sampleDB + ".copyme", "--as=" + target, "--into-mysql=" + f.tb.Cnf.SocketFile, "--mysqld=" + mariadbtest.LookPath(t,
			"mariadbd"), "--target-dir=" + filepath.Join(scratch, dir), "--progress=never"}, more...)
	}
	rows := func() int64 {
		var n int64
		if err := f.srv.DB().QueryRow("SELECT COUNT(*) FROM " + target).Scan(&n); err != nil {
			return -1
		}
		return n
	}
	argv := append([]string{"restore-table", "--backup-storage-implementation=split", "--keyspace=" + keyspace, "--shard=" + shard},
		f.cfg.Args()...)
	cmd := exec.Command(vtfifoBin, append(argv, args("first")...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	killed := false
	for !killed {
		select {
		case err := <-done:
			t.Fatalf("restore-table ended before its copy could be killed (%v):\n%s", err, out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if n := rows(); n > 0 && n < 600000 {
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			var ee *exec.ExitError
			require.True(t, errors.As(<-done, &ee))
			killed = true
		}
	}
	// The server finishes the statement the killed client left running.
	require.Eventually(t, func() bool {
		return f.srv.Query(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%copyme_restored%' AND ID <> CONNECTION_ID()") == "0"
	}, time.Minute, 50*time.Millisecond)
	copied := rows()
	t.Logf("killed with %d of 600000 rows copied", copied)
	assert.Zero(t, copied%2000, "whole batches only")
	local := tableimport.LocalName(tableimport.Target{DB: sampleDB, Table: "copyme_restored"})
	require.Equal(t, "600000", f.srv.Query(t, "SELECT COUNT(*) FROM "+sampleDB+".`"+local.Table+"`"), "the local copy is left whole")

	code, stdout, stderr := runVtfifo(t, f.cfg, "restore-table", args("again")...)
	assert.Equal(t, 2, code, "a usage error: the live server contradicts the request; stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout+stderr, "left with its local copy by a run stopped during its copy: nothing was downloaded or changed; rerun with --resume")
	assert.Equal(t, copied, rows(), "nothing changed")

	code, stdout, stderr = runVtfifo(t, f.cfg, "restore-table", args("resumed", "--resume")...)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout, "OK: "+sampleDB+".copyme imported as "+target+" through the binary log: 600000 rows")
	assert.Equal(t, want, mariadbtest.Checksums(t, f.srv.DB(), sampleDB)["copyme_restored"])
	assert.Equal(t, "0", f.srv.Query(t, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME = '"+local.Table+"'"), "the local copy is dropped")
}
