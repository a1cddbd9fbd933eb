package vtfifocli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// TestAPassWithTablesOfAnOlderFormatSaysSo: the OK line of a test restore
// that passed with tables the server reads only after a rebuild names them
// and says they are no damage.
func TestAPassWithTablesOfAnOlderFormatSaysSo(t *testing.T) {
	var out bytes.Buffer
	TestRestoreResult{Record: testrestore.Record{Backup: "ks/0/b", Outcome: testrestore.Passed, Duration: "9s", Tool: "mariabackup", Server: "10.11",
		Tables: 5, Rows: 3, NeedsRebuild: []string{"`k`.`old`: Table rebuild required. Please do \"ALTER TABLE `old` FORCE\" or dump/reload to fix it!"}},
		Stored: "stored beside the backup"}.print(&out)
	assert.Contains(t, out.String(), "OK: test restore of ks/0/b passed in 9s: ")
	assert.Contains(t, out.String(), "CHECK TABLE on 5 tables (1 of them in an older server's format, kept as the source had it, which this server "+
		"reads only after a rebuild or upgrade: not damage, neither checked nor counted: `k`.`old`: Table rebuild required. Please do \"ALTER TABLE "+
		"`old` FORCE\" or dump/reload to fix it!), 3 rows; record stored beside the backup")
}

// TestAFailSaysWhichRestoresStillChooseTheBackup: a failed test restore's
// line says, where the record was stored and the backup not quarantined
// (--quarantine-on-failure=false), that a tablet's restore may still choose
// it, and how to stop that; where the storage keeps no records, that it
// was not quarantined and why.
func TestAFailSaysWhichRestoresStillChooseTheBackup(t *testing.T) {
	rec := testrestore.Record{Backup: "ks/0/b", Outcome: testrestore.Failed, Duration: "9s", Error: "CHECK TABLE failed on 1 of 5 tables"}
	for _, c := range []struct {
		res  TestRestoreResult
		want string
	}{
		{TestRestoreResult{Record: rec, Stored: "stored beside the backup"}, "FAIL: test restore of ks/0/b (9s, record stored beside the " +
			"backup; not quarantined (--quarantine-on-failure=false): vtfifo restore passes over it and retention does not count it, but a " +
			"tablet's restore may still choose it (a test restore without that flag takes it out of every restore's choice)): CHECK TABLE " +
			"failed on 1 of 5 tables\n"},
		{TestRestoreResult{Record: rec, Stored: "not stored: only the split storage keeps verification records", NotQuarantined: "not " +
			"quarantined either (the same reason): restores may still choose it"}, "FAIL: test restore of ks/0/b (9s, record not " +
			"stored: only the split storage keeps verification records; not quarantined either (the same reason): restores may still choose " +
			"it): CHECK TABLE failed on 1 of 5 tables\n"},
		{TestRestoreResult{Record: rec, Stored: "stored beside the backup", Quarantined: true}, "FAIL: test restore of ks/0/b (9s, record " +
			"stored beside the backup; the backup is quarantined: restores no longer choose it): CHECK TABLE failed on 1 of 5 tables\n"},
		{TestRestoreResult{Record: rec, Stored: "not stored (--record=false)"}, "FAIL: test restore of ks/0/b (9s, record not stored " +
			"(--record=false)): CHECK TABLE failed on 1 of 5 tables\n"},
	} {
		var out bytes.Buffer
		c.res.print(&out)
		assert.Equal(t, c.want, out.String())
	}
}

// TestQuarantineOnFailureNeedsTheRecord: a failed test restore quarantines
// by default, which writes to the storage; --record=false (a read-only run)
// turns it off with the record, and asking for both is a usage error at
// startup (exit 2, naming the flags), before the storage is read.
func TestQuarantineOnFailureNeedsTheRecord(t *testing.T) {
	root := t.TempDir()
	args := []string{"test-restore", "--keyspace=ks", "--shard=0", "--backup=b", "--progress=never", "--record=false"}
	out, errOut := runSplit(t, 2, root, append(args, "--quarantine-on-failure")...)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "--quarantine-on-failure needs --record")
	// Alone, --record=false is no usage error: the run goes on to the
	// storage, where no such backup is.
	out, errOut = runSplit(t, 3, root, args...)
	assert.NotContains(t, out+errOut, "--quarantine-on-failure")
}

// TestAFailedTestRestoreWhereNoRecordIsKeptSaysRestoresStillChooseIt: on
// Vitess's file storage, which keeps no records, a test restore that fails
// (the tool reporting a corrupted page) exits 1 and says that it could
// neither store its record nor quarantine the backup, so restores may still
// choose it; the default quarantine is no error there.
func TestAFailedTestRestoreWhereNoRecordIsKeptSaysRestoresStillChooseIt(t *testing.T) {
	root, args := storageCopy(t)
	const name = "2026-11-23.050519.zone1-0000004989"
	tool := standInTool(t, `echo "[ERROR] InnoDB: Database page corruption on disk or a failed read of file './t1.ibd' page [page id: `+
		`space=5, page number=3]" >&2; exit 1`)
	var out, errOut bytes.Buffer
	code := Main(context.Background(), append([]string{"test-restore", "--backup=" + name, "--progress=never", "--quiet",
		"--scratch-dir=" + scratchDir(t), "--fifo-backup-tool-path=" + tool}, args...), &out, &errOut)
	require.Equal(t, 1, code, "stdout: %s\nstderr: %s", out.String(), errOut.String())
	assert.Empty(t, errOut.String())
	assert.Contains(t, out.String(), "FAIL: test restore of ks/0/"+name+" (")
	assert.Contains(t, out.String(), ", record not stored: only the split storage keeps verification records; not quarantined either (the "+
		"same reason): restores may still choose it): fifo restore of backup "+name+" into ")
	assert.Contains(t, out.String(), "xtrabackup --prepare failed: exit status 1")
	entries, err := os.ReadDir(filepath.Join(root, "ks", "0"))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "the backup is still there, nothing beside it")
}
