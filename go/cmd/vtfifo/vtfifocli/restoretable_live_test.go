package vtfifocli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/topo"
	"vitess.io/vitess/go/vt/topo/memorytopo"

	topodatapb "vitess.io/vitess/go/vt/proto/topodata"

	"github.com/vtfifo/vtfifo/go/internal/errtext"
	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/tableimport"
)

// restoreTableInto runs restore-table of the test backup's d.t into the
// server at socket, as root; it returns the exit status, stdout, stderr
// and the target directory (never created when the run stops before the
// download).
func restoreTableInto(t *testing.T, socket string, more ...string) (int, string, string, string) {
	_, args := storageCopy(t)
	target := filepath.Join(t.TempDir(), "t")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append(append([]string{"restore-table", "--table=d.t", "--target-dir=" + target, "--into-mysql=" + socket,
		"--mysql-user=root"}, more...), args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String(), target
}

// TestAReplicaIsNeverWrittenTo: a server with a replication channel (here
// stopped, as after STOP SLAVE) is refused before anything is downloaded,
// as a usage error naming where it replicates from, whatever the flags; a
// read-only server too, unless --standalone says it replicates from no
// one. Nothing is written to either.
func TestAReplicaIsNeverWrittenTo(t *testing.T) {
	primary := mariadbtest.Start(t, mariadbtest.WithArgs("--server-id=21", "--log-bin=p-bin"))
	replica := mariadbtest.Start(t, mariadbtest.WithArgs("--server-id=22", "--log-bin=r-bin", "--read-only=1", "--gtid-strict-mode=1"))
	replica.Exec(t, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', MASTER_USE_GTID=slave_pos", primary.Port))
	gtid := replica.Query(t, "SELECT @@GLOBAL.gtid_binlog_pos")
	for _, more := range [][]string{nil, {"--standalone"}, {"--unreplicated"}} {
		code, stdout, stderr, target := restoreTableInto(t, replica.Socket, more...)
		assert.Equal(t, 2, code, "%v: stderr: %s", more, stderr)
		assert.Contains(t, stderr, fmt.Sprintf("the live server must not be written to: it is a replica (replicating from the default channel, "+
			"127.0.0.1:%d): a restore would write transactions under its own server id", primary.Port), more)
		assert.NotContains(t, stderr, "FAIL")
		assert.Empty(t, stdout)
		assert.NoDirExists(t, target)
	}
	assert.Equal(t, gtid, replica.Query(t, "SELECT @@GLOBAL.gtid_binlog_pos"), "nothing written")

	// A standalone server made read-only.
	alone := mariadbtest.Start(t, mariadbtest.WithArgs("--read-only=1"))
	code, stdout, stderr, target := restoreTableInto(t, alone.Socket)
	assert.Equal(t, 2, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, "the live server must not be written to: it is read-only (read_only=ON, super_read_only=OFF), as Vitess keeps "+
		"every tablet but the primary: restore into the shard's primary; pass --standalone only for a server that replicates from no one")
	assert.Empty(t, stdout)
	assert.NoDirExists(t, target)
	// With --standalone it goes on, to the next check: the database.
	code, _, stderr, target = restoreTableInto(t, alone.Socket, "--standalone")
	assert.Equal(t, 2, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, "the live server has no database d: nothing was downloaded or changed; create it (CREATE DATABASE, through the "+
		"binary log on a primary) or choose another (--as)")
	assert.NoDirExists(t, target)
}

// TestAStoppedRunsSettingIsPutBack: a run killed while it waited for the
// checkpoint left the live server's innodb_max_dirty_pages_pct at 0 with
// its record; the next run puts the recorded value back, says so and
// removes the record, before anything is downloaded. A record from before
// the server's last restart is only removed: the configured value is in
// force.
func TestAStoppedRunsSettingIsPutBack(t *testing.T) {
	srv := mariadbtest.Start(t, mariadbtest.WithArgs("--innodb-max-dirty-pages-pct=77"))
	record := filepath.Join(srv.DataDir, "vtfifo-import-settings.json")
	started := func() int64 {
		up, err := strconv.ParseInt(srv.Query(t, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'"), 10, 64)
		require.NoError(t, err)
		now, err := strconv.ParseInt(srv.Query(t, "SELECT UNIX_TIMESTAMP()"), 10, 64)
		require.NoError(t, err)
		return now - up
	}
	write := func(serverStarted int64) {
		b, err := json.Marshal(map[string]any{"innodb_max_dirty_pages_pct": "77.000000", "set": "0", "server_started": serverStarted, "pid": 4242})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(record, b, 0o640))
		srv.Exec(t, "SET GLOBAL innodb_max_dirty_pages_pct = 0")
	}
	write(started())
	code, _, stderr, _ := restoreTableInto(t, srv.Socket)
	assert.Equal(t, 2, code, "the run goes on to the missing database: %s", stderr)
	assert.Contains(t, stderr, "restore-table: a stopped import (pid 4242) left innodb_max_dirty_pages_pct at 0: put back to 77.000000, "+
		"the value it recorded")
	assert.Equal(t, "1", srv.Query(t, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct = 77"))
	assert.NoFileExists(t, record)

	write(started() - 3600)
	code, _, stderr, _ = restoreTableInto(t, srv.Socket)
	assert.Equal(t, 2, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, "an import stopped (pid 4242) before the server's last restart")
	assert.Equal(t, "1", srv.Query(t, "SELECT @@GLOBAL.innodb_max_dirty_pages_pct = 0"), "a value set since the restart is not the run's to change")
	assert.NoFileExists(t, record)

	// A file of the record's name that no run wrote is not ours: kept, the
	// run refused before anything is downloaded or changed.
	require.NoError(t, os.WriteFile(record, []byte("pct tuned by hand, 29 Nov\n"), 0o640))
	code, stdout, stderr, target := restoreTableInto(t, srv.Socket)
	assert.Equal(t, 2, code, "stderr: %s", stderr)
	assert.Contains(t, stderr, record+" is not a record restore-table writes (\"pct tuned by hand, 29 Nov\\n\"): it is neither removed nor "+
		"written over; move it away, check the server's innodb_max_dirty_pages_pct, and run again")
	assert.Empty(t, stdout)
	assert.NoDirExists(t, target)
	b, err := os.ReadFile(record)
	require.NoError(t, err)
	assert.Equal(t, "pct tuned by hand, 29 Nov\n", string(b))
}

// TestATabletThatIsNotPrimaryIsRefused: with the topology's flags,
// restore-table --into-tablet of a tablet the topology records as a
// REPLICA is refused before its mysqld is even reached (exit 2), naming
// its type; nothing is downloaded.
func TestATabletThatIsNotPrimaryIsRefused(t *testing.T) {
	_, args := storageCopy(t)
	ctx := context.Background()
	ts, factory := memorytopo.NewServerAndFactory(ctx, "zone1")
	defer ts.Close()
	fleetTopoRuns++
	impl := fmt.Sprintf("vtfifo-restoretable-test-%d", fleetTopoRuns)
	topo.RegisterFactory(impl, factory)
	alias := &topodatapb.TabletAlias{Cell: "zone1", Uid: 201}
	require.NoError(t, ts.CreateTablet(ctx, &topodatapb.Tablet{Alias: alias, Keyspace: "ks", Shard: "0", Type: topodatapb.TabletType_REPLICA,
		Hostname: "localhost"}))
	root := t.TempDir()
	t.Setenv("VTDATAROOT", root)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "vt_0000000201"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "vt_0000000201", "my.cnf"), []byte("[mysqld]\nsocket = "+filepath.Join(root, "no.sock")+"\n"),
		0o644))
	topoFlags := []string{"--topo-implementation=" + impl, "--topo-global-server-address=memory", "--topo-global-root=/vitess/global"}
	// Vitess keeps its topology flags in package variables, which outlive
	// one Main: the tests after this one must not find a topology.
	t.Cleanup(func() {
		Main(ctx, append([]string{"ls", "--topo-global-server-address="}, args...), io.Discard, io.Discard)
	})
	target := filepath.Join(t.TempDir(), "t")
	var stdout, stderr bytes.Buffer
	code := Main(ctx, append(append([]string{"restore-table", "--table=d.t", "--target-dir=" + target, "--into-tablet=zone1-0000000201"}, topoFlags...),
		args...), &stdout, &stderr)
	assert.Equal(t, 2, code, "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "tablet zone1-0000000201 is a replica, not its shard's primary (the topology (--topo-implementation="+impl)
	assert.Contains(t, stderr.String(), "nothing was downloaded or changed")
	assert.Empty(t, stdout.String())
	assert.NoDirExists(t, target)
}

// TestRemovedTargetLineSaysWhatIsLeft: once the tables are in, the line
// says the target directory is gone only where it is: one the restore
// created that holds a file someone else put there stays, and is said to.
func TestRemovedTargetLineSaysWhatIsLeft(t *testing.T) {
	parent := t.TempDir()
	gone := fifobackupengine.TargetDir{Path: filepath.Join(parent, "gone"), Created: true}
	assert.Equal(t, "removed "+gone.Path+", the restore's files (--keep-target-dir keeps them)", removedTargetLine(gone))
	kept := fifobackupengine.TargetDir{Path: parent, Created: true}
	assert.Equal(t, "removed the restore's files from "+parent+", which holds others it did not write and is kept (--keep-target-dir "+
		"keeps the files)", removedTargetLine(kept))
	kept.Created = false
	assert.Equal(t, "removed the restore's files from "+parent+", which was there before and is kept (--keep-target-dir keeps the files)",
		removedTargetLine(kept))
}

// TestAnImportsFailureIsClassedByWhatSaysIt: a live server that will not
// take the files for the table it builds (1808) or has the target's name
// taken is a usage error, never the backup's; another session's lock is
// this host's; what the import met in the files stays a failed check.
func TestAnImportsFailureIsClassedByWhatSaysIt(t *testing.T) {
	imp := func(n uint16, msg string) error {
		return fmt.Errorf("ALTER TABLE `d`.`_vtfifo_work_x` IMPORT TABLESPACE: %w", &mysql.MySQLError{Number: n, Message: msg})
	}
	misfit := importFailure(imp(1808, "Schema mismatch (Tablespace to be imported has a different page size than this server.)"))
	assert.Equal(t, exitUsage, failureStatus(misfit))
	assert.True(t, strings.HasSuffix(errtext.Line(misfit), "; the live server cannot take these files as they are (its innodb_page_size, row format "+
		"or version differs from the backup's server): nothing says the backup is damaged"), errtext.Line(misfit))
	assert.Equal(t, exitUsage, failureStatus(importFailure(fmt.Errorf("d.t: %w", tableimport.ErrExists))))
	assert.Equal(t, exitUnreachable, failureStatus(importFailure(imp(1205, "Lock wait timeout exceeded; try restarting transaction"))))
	assert.Equal(t, exitUnreachable, failureStatus(importFailure(fmt.Errorf("d.t: %w", tableimport.ErrNoRoom))), "the live server's disk: this host's")
	assert.Equal(t, exitFailed, failureStatus(importFailure(imp(1030, `Got error 194 "Tablespace is missing for a table" from storage engine InnoDB`))))
}
