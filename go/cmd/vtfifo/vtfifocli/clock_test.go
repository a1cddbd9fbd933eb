package vtfifocli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestAHostClockAheadRemovesNothingYoung: ages are judged by the storage's
// clock, never this host's. With the host's clock three days ahead (a VM
// resumed, NTP not yet synced), prune --keep-within=48h kept by this
// host's clock only the newest backup and removed one a day old, and
// verify --remove-incomplete and rm removed an incomplete backup written a
// second ago (one still running). Now each says the host's clock is off
// and judges by the storage's: the day-old backup is kept, the incomplete
// one is kept ("may still be running"), only the backup older than
// --keep-within goes, and lock --for=2d locks until two days from the
// storage's now (not five). Where the storage's clock cannot be read, the
// host's is used, and said.
func TestAHostClockAheadRemovesNothingYoung(t *testing.T) {
	root := t.TempDir()
	bs := localSplit(t, root)
	now := time.Now().UTC()
	dated := func(age time.Duration) string { return now.Add(-age).Format("2006-01-02.150405") + ".zone1-0000000100" }
	old, dayOld, newest, running := dated(80*time.Hour), dated(30*time.Hour), dated(time.Hour), dated(0)
	for _, name := range []string{old, dayOld, newest} {
		plantBackup(t, bs, "ks/0", name)
	}
	_, err := bs.StartBackup(context.Background(), "ks/0", running)
	require.NoError(t, err)
	saved := hostNow
	t.Cleanup(func() { hostNow = saved })
	hostNow = func() time.Time { return time.Now().Add(72 * time.Hour) }
	shard := []string{"--keyspace=ks", "--shard=0"}
	skew := "this host's clock is 3d ahead of the storage's: ages and dates are the storage's clock's\n"

	out, errOut := runSplit(t, 0, root, append([]string{"prune", "--keep=1", "--keep-within=48h"}, shard...)...)
	assert.Equal(t, "keeping ks/0/"+dayOld+": younger than --keep-within=2d\n"+
		"keeping ks/0/"+newest+": one of the newest 1 that did not fail a test restore (--keep)\n"+
		"removed ks/0/"+old+"\n", out)
	assert.Equal(t, "vtfifo prune: "+skew, errOut)

	out, errOut = runSplit(t, 0, root, append([]string{"verify", "--remove-incomplete"}, shard...)...)
	assert.Regexp(t, `^kept ks/0/`+running+`: started .*, last written .* \([0-9]+s ago\), .*: written to less than --incomplete-min-age=24h0m0s ago \(may still be running\)\n$`, out)
	assert.Equal(t, "vtfifo verify: "+skew, errOut)

	out, errOut = runSplit(t, 3, root, append([]string{"rm", "--backup=" + running}, shard...)...)
	assert.Empty(t, out)
	assert.Regexp(t, `^vtfifo rm: `+skew+`vtfifo rm: refused: backup ks/0/`+running+` is incomplete, started on .* and last written [0-9]+s ago: `+
		`it may still be running \(--incomplete-min-age=24h0m0s\)\n$`, errOut)
	// A lock for two days runs from the storage's now, not three days later.
	out, errOut = runSplit(t, 0, root, append([]string{"lock", "--backup=" + newest, "--for=2d", "--json"}, shard...)...)
	assert.Equal(t, "vtfifo lock: "+skew, errOut)
	var res LockResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.WithinRange(t, res.Until, now.Add(48*time.Hour-time.Minute), time.Now().Add(48*time.Hour))

	// Where the storage's clock cannot be read (no root identity to write
	// its probe beside), this host's is used, and said.
	require.NoError(t, os.Remove(filepath.Join(root, ".split-storage")))
	out, errOut = runSplit(t, 0, root, append([]string{"prune", "--keep=1", "--keep-within=48h", "--dry-run"}, shard...)...)
	assert.Contains(t, out, "would remove ks/0/"+dayOld+"\n", "by this host's clock, three days ahead")
	assert.Equal(t, "vtfifo prune: ages and dates are this host's clock's: split storage: the store's clock is read from a probe written "+
		"beside the root identity .split-storage, which file:"+root+" does not hold yet (the next backup or copy writes it)\n", errOut)

	for _, name := range []string{dayOld, newest, running} {
		_, err := os.Stat(filepath.Join(root, "ks", "0", name))
		assert.NoError(t, err, name)
	}
}

// TestAHostClockOffCallsNoBackupStale: ls's --max-age judges a backup's
// age by the storage's clock as its answers give it (a read: the view
// writes nothing), never this host's. With the host's clock three days
// ahead, a backup an hour old failed --max-age=2d (an alert for a good
// shard); three days behind, one 80 hours old passed it (a stale shard
// silenced). S3 (versitygw), whose answers carry their time; on local
// disk the clock is this host's. Where the store refuses the read the
// clock is taken from, this host's judges, and that is said (exit as the
// checks say).
func TestAHostClockOffCallsNoBackupStale(t *testing.T) {
	srv, bs := s3Split(t)
	now := time.Now().UTC()
	fresh := now.Add(-time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
	stale := now.Add(-80*time.Hour).Format("2006-01-02.150405") + ".zone1-0000000200"
	plantBackup(t, bs, "ks/0", fresh)
	plantBackup(t, bs, "ks/1", stale)
	saved := hostNow
	t.Cleanup(func() { hostNow = saved })
	ls := append(append([]string{"ls"}, srv.Flags()...), "--max-age=2d")

	hostNow = func() time.Time { return time.Now().Add(72 * time.Hour) }
	out, errOut := runArgs(t, 1, ls...)
	assert.Regexp(t, `\nks/0 +1 +`+fresh+` +1h .* ok\n`, out)
	assert.Regexp(t, `\nks/1 +1 +`+stale+` +3d8h .* FAIL: newest backup 3d8h old \(--max-age 2d\)\n`, out)
	assert.Equal(t, "vtfifo ls: this host's clock is 3d ahead of the storage's: ages are the storage's clock's\n", errOut)

	hostNow = func() time.Time { return time.Now().Add(-72 * time.Hour) }
	out, errOut = runArgs(t, 1, ls...)
	assert.Regexp(t, `\nks/0 +1 +`+fresh+` +1h .* ok\n`, out)
	assert.Regexp(t, `\nks/1 +1 +`+stale+` +3d8h .* FAIL: newest backup 3d8h old \(--max-age 2d\)\n`, out)
	assert.Equal(t, "vtfifo ls: this host's clock is 3d behind the storage's: ages are the storage's clock's\n", errOut)

	// The storage's clock refused (403 to the read it is taken from): this
	// host's clock judges, and that is said; the view itself stands.
	p := splitstoragetest.NewFaultProxy(t, srv.Addr)
	viaProxy := srv.WithProxy(p)
	// Every read of the root identity: the root's check (which then
	// leaves it to the listing) and the clock's.
	p.FailMatching("HEAD", "/.split-storage", splitstoragetest.Forbidden, 2)
	out, errOut = runArgs(t, 0, append(append([]string{"ls"}, viaProxy.Flags()...), "--max-age=2d")...)
	assert.Regexp(t, `\nks/1 +1 +`+stale+` +8h .* ok\n`, out, "by this host's clock, three days behind: the stale shard passes")
	assert.Regexp(t, `^vtfifo ls: ages are this host's clock's: split storage: reading the store's clock \(\.split-storage in s3:\S+\): .*StatusCode: 403.*Forbidden\n$`,
		errOut)
}

// TestALeaseFromAHostWhoseClockIsOffHolds: a restore on another host,
// whose clock runs three days behind, holds a backup with a read lease
// for its term from when the store wrote it: rm refuses the backup (exit
// 3, saying who reads it) and prune keeps it; before, its lease was three
// days expired for this host, and both removed the backup under the
// restore. S3 (versitygw).
func TestALeaseFromAHostWhoseClockIsOffHolds(t *testing.T) {
	srv, bs := s3Split(t)
	be, err := splitstorage.OpenBackend(context.Background(), srv.Config)
	require.NoError(t, err)
	t.Cleanup(func() { be.Close() })
	now := time.Now().UTC()
	read := now.Add(-2*time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
	newest := now.Add(-time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
	plantBackup(t, bs, "ks/0", read)
	plantBackup(t, bs, "ks/0", newest)
	splitstoragetest.PlantForeignLease(t, be, "ks/0", read, "dr-host-7-0a0b", "vtfifo restore on dr-host", -72*time.Hour, 24*time.Hour)
	shard := append(srv.Flags(), "--keyspace=ks", "--shard=0")

	out, errOut := runArgs(t, 3, append([]string{"rm", "--backup=" + read}, shard...)...)
	assert.Empty(t, out)
	assert.Regexp(t, `^vtfifo rm: refused: split storage: backup ks/0/`+read+` is not removed: the backup is being read: vtfifo restore on `+
		`dr-host by dr-host-7-0a0b since \S+ \(until \S+\)`, errOut)
	assert.WithinDuration(t, now, timeAfter(t, errOut, "since "), time.Minute, "the lease's term runs from the store's write time")
	assert.WithinDuration(t, now.Add(24*time.Hour), timeAfter(t, errOut, "(until "), time.Minute)
	out, _ = runArgs(t, 0, append([]string{"prune", "--keep=1"}, shard...)...)
	assert.Contains(t, out, "keeping ks/0/"+read+": the backup is being read: vtfifo restore on dr-host by dr-host-7-0a0b since ")
	assert.NotContains(t, out, "removed")
}

// s3Split starts an S3 server (versitygw) and opens the split storage on
// it, as the commands under test open it from the server's flags.
func s3Split(t *testing.T) (*splitstoragetest.Server, *splitstorage.Storage) {
	srv := splitstoragetest.Start(t, "s3")
	srv.Setenv(t)
	bs, err := splitstorage.New(srv.Config)
	require.NoError(t, err)
	t.Cleanup(func() { bs.Close() })
	return srv, bs
}

// TestTheExporterJudgesByTheStoresClock: the exporter's --max-age check
// judges by the storage's clock at every refresh, as ls does, and says
// once (not at every refresh) that this host's clock is off. S3.
func TestTheExporterJudgesByTheStoresClock(t *testing.T) {
	srv, bs := s3Split(t)
	now := time.Now().UTC()
	plantBackup(t, bs, "ks/0", now.Add(-time.Hour).Format("2006-01-02.150405")+".zone1-0000000100")
	plantBackup(t, bs, "ks/1", now.Add(-80*time.Hour).Format("2006-01-02.150405")+".zone1-0000000200")
	saved := hostNow
	t.Cleanup(func() { hostNow = saved })
	hostNow = func() time.Time { return time.Now().Add(72 * time.Hour) }

	ex := startExporter(t, append(srv.Flags(), "--max-age=2d")...)
	refreshed := ex.until("a refresh", func(mfs map[string]*dto.MetricFamily) bool {
		_, ok := gauge(mfs, "vtfifo_backup_check_ok", "ks/0")
		return ok
	})
	ex.until("two refreshes more", func(mfs map[string]*dto.MetricFamily) bool {
		v, _ := gauge(mfs, "vtfifo_exporter_refreshed_timestamp_seconds", "")
		w, _ := gauge(refreshed, "vtfifo_exporter_refreshed_timestamp_seconds", "")
		return v >= w+2
	})
	mfs := ex.scrape()
	fresh, _ := gauge(mfs, "vtfifo_backup_check_ok", "ks/0")
	stale, _ := gauge(mfs, "vtfifo_backup_check_ok", "ks/1")
	assert.Equal(t, []float64{1, 0}, []float64{fresh, stale}, "an hour old passes --max-age=2d, 80 hours old fails it")
	errOut := ex.stop()
	assert.Equal(t, 1, strings.Count(errOut, "vtfifo exporter: this host's clock is 3d ahead of the storage's: ages are the storage's clock's\n"), errOut)
}

// TestALockIsDatedByTheStoresClock: lock's and promote's --until is judged
// against the storage's clock, never this host's. With the host's clock
// three days ahead, a date a day away was refused as past (exit 2); three
// days behind, a date a day gone was taken, and lock wrote a lock that had
// already ended and said the backup was locked. Now the first is locked,
// and the second is refused as a bad flag (exit 2, naming the storage's
// now), nothing locked or copied.
func TestALockIsDatedByTheStoresClock(t *testing.T) {
	root := t.TempDir()
	bs := localSplit(t, root)
	now := time.Now().UTC()
	older, newer := "2026-11-20.000000.zone1-0000000100", "2026-11-21.000000.zone1-0000000100"
	plantBackup(t, bs, "ks/0", older)
	plantBackup(t, bs, "ks/0", newer)
	saved := hostNow
	t.Cleanup(func() { hostNow = saved })
	shard := []string{"--keyspace=ks", "--shard=0"}
	with := func(args ...string) []string { return append(args, shard...) }

	hostNow = func() time.Time { return time.Now().Add(72 * time.Hour) }
	tomorrow := now.Add(24 * time.Hour).Truncate(time.Second)
	out, errOut := runSplit(t, 0, root, with("lock", "--backup="+newer, "--until="+tomorrow.Format(time.RFC3339))...)
	assert.Regexp(t, `^ks/0/`+newer+` is locked until `+tomorrow.Format(time.RFC3339)+` \(governance\): [0-9]+ objects\n$`, out)
	assert.Equal(t, "vtfifo lock: this host's clock is 3d ahead of the storage's: ages and dates are the storage's clock's\n", errOut)

	hostNow = func() time.Time { return time.Now().Add(-72 * time.Hour) }
	yesterday := now.Add(-24 * time.Hour).Truncate(time.Second).Format(time.RFC3339)
	protected := t.TempDir()
	for _, args := range [][]string{
		with("lock", "--backup="+older, "--until="+yesterday),
		with("promote", "--backup="+older, "--to=--split-storage-root="+protected, "--until="+yesterday),
	} {
		out, errOut = runSplit(t, 2, root, args...)
		assert.Empty(t, out, "%v", args)
		assert.Regexp(t, `^vtfifo `+args[0]+`: this host's clock is 3d behind the storage's: ages and dates are the storage's clock's\n`+
			`vtfifo `+args[0]+`: invalid value "`+yesterday+`" for --until: allowed values are a time in the future `+
			`\(the storage's clock says \S+Z\)\n$`, errOut, "%v", args)
		assert.WithinDuration(t, now, timeAfter(t, errOut, "the storage's clock says "), time.Minute, "%v", args)
	}
	ls, _ := runSplit(t, 0, root, with("ls")...)
	assert.Regexp(t, older+`\s.*\s-\n`, ls, "not locked")
	assert.Regexp(t, newer+`\s.*locked until `+tomorrow.Format(time.RFC3339), ls)
	entries, err := os.ReadDir(protected)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing promoted")
}

// timeAfter is the RFC 3339 time that follows word in s.
func timeAfter(t *testing.T, s, word string) time.Time {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(word) + `(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))`).FindStringSubmatch(s)
	require.NotNil(t, m, "no time after %q in %q", word, s)
	at, err := time.Parse(time.RFC3339Nano, m[1])
	require.NoError(t, err)
	return at
}
