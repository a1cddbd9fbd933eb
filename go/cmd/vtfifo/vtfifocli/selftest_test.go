package vtfifocli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/tier"
	"github.com/vtfifo/vtfifo/go/testutil/tmpfs"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// TestSelfTestCommand: vtfifo selftest on this host's MariaDB and
// mariabackup: the text report on stdout, exit 0, every step passed and the
// FIFO step skipped with its reason; --json is one object, and with --quiet
// nothing else is printed; bad flags are a usage error naming the flag,
// before anything runs.
func TestSelfTestCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"selftest", "--scale=0"}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout.String())
	assert.Equal(t, "vtfifo selftest: invalid value 0 for --scale: allowed values are 1..100000\n", stderr.String())
	stdout.Reset()
	stderr.Reset()
	code = Main(context.Background(), []string{"selftest", "--lanes=65"}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "--lanes: allowed values are 1..64")
	stdout.Reset()
	stderr.Reset()
	code = Main(context.Background(), []string{"selftest", "--storage=--split-storage-backend=s4"}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout.String())
	assert.Equal(t, "vtfifo selftest: the storage (--storage-flags-file, --storage): split backup storage: invalid flags: invalid value \"s4\" for "+
		"--split-storage-backend: allowed values are "+strings.Join(splitstorage.BackendNames(), ", ")+"\n", stderr.String())
	stdout.Reset()
	stderr.Reset()
	code = Main(context.Background(), []string{"selftest", "--log-level=debug"}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Equal(t, "vtfifo selftest: invalid value \"debug\" for --log-level: allowed values are info, warning, error\n", stderr.String())
	stdout.Reset()
	stderr.Reset()
	code = Main(context.Background(), []string{"selftest", "--storage=--keyspace=x"}, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Equal(t, "vtfifo selftest: the storage (--storage-flags-file, --storage): invalid value \"--keyspace=x\" for --storage: allowed values are "+
		"--split-storage-* flags\n", stderr.String())

	tier.Integration(t, "MariaDB and mariabackup")
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	for d := filepath.Dir(dir); d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && st.Mode().Perm()&0o001 == 0 {
			require.NoError(t, os.Chmod(d, st.Mode().Perm()|0o011))
		}
	}
	out := run(t, 0, "selftest", "--scale=10", "--work-dir="+dir)
	for _, want := range []string{
		"vtfifo selftest: PASSED\n",
		"  PASS  start a scratch server",
		"  PASS  full backup while writing (source stdout)",
		"  PASS  incremental backup at rest (source stdout)",
		"  PASS  verify every backup",
		"  PASS  restore the chain, prepare, start and compare every table",
		"  PASS  restore one table into the scratch server",
		"  PASS  export and extract with the tool's extractor",
		"  SKIP  backup through FIFO streams: ",
	} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "FAIL")

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, Main(context.Background(), []string{"selftest", "--scale=5", "--json", "--quiet", "--work-dir=" + dir}, &stdout, &stderr),
		"stderr: %s", stderr.String())
	assert.Empty(t, stderr.String(), "--quiet: no log line, Vitess's own included")
	var rep struct {
		Passed   bool              `json:"passed"`
		Versions map[string]string `json:"versions"`
		Steps    []struct{ Name, Status string }
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), "stdout is one JSON object: %s", stdout.String())
	assert.True(t, rep.Passed)
	assert.Contains(t, rep.Versions["server"], "MariaDB")
	assert.Contains(t, rep.Versions["vitess"], "24.0.")
	assert.NotEmpty(t, rep.Steps)
	left, _ := os.ReadDir(dir)
	assert.Empty(t, left, "nothing left behind")
}

// TestRestoresOfAKeptSelftest: restores of the backups `vtfifo selftest
// --keep` leaves, beside its stopped source server.
func TestRestoresOfAKeptSelftest(t *testing.T) {
	tier.Integration(t, "MariaDB and mariabackup")
	dir := scratchDir(t)
	out := run(t, 0, "selftest", "--scale=5", "--keep", "--quiet", "--work-dir="+dir)
	_, kept, ok := strings.Cut(out, "kept for a bug report (server stopped): ")
	require.True(t, ok, out)
	kept, _, _ = strings.Cut(kept, "\n")
	runs, err := filepath.Glob(filepath.Join(kept, "storage", "vtfifo-selftest", "*"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	storage := []string{"--backup-storage-implementation=split", "--split-storage-root=" + filepath.Join(kept, "storage"),
		"--backup-dir=vtfifo-selftest/" + filepath.Base(runs[0])}
	var backups []struct{ Name string }
	require.NoError(t, json.Unmarshal([]byte(run(t, 0, append([]string{"ls", "--json"}, storage...)...)), &backups))
	require.Len(t, backups, 3)
	var shown ShowReport
	require.NoError(t, json.Unmarshal([]byte(run(t, 0, append([]string{"show", "--json", "--backup=" + backups[0].Name}, storage...)...)), &shown))
	for _, l := range shown.Lanes {
		assert.Regexp(t, `^[0-9a-f]{8}$`, l.StreamCRC32C, "%s: a new backup records its lanes' CRC-32C", l.File)
	}
	storage = append(storage, "--progress=never")
	t.Run("own tablespaces", func(t *testing.T) { restoreUsesItsOwnTablespaces(t, kept, dir, backups[0].Name, storage) })
	t.Run("MySQL 8 lower_case_table_names", func(t *testing.T) { testRestoreTakesTheDictionarysCase(t, dir, backups[0].Name, storage) })
	record := filepath.Join(runs[0], backups[0].Name, ".sidecar-verification")
	t.Run("a server this host confines", func(t *testing.T) { testRestoreOnAConfiningHost(t, dir, backups[0].Name, record, storage) })
	t.Run("a server older than the backup's", func(t *testing.T) { testRestoreOnAnOlderServer(t, dir, backups[0].Name, record, storage) })
	t.Run("flags that do not fit the backup", func(t *testing.T) { testRestoreWithFlagsThatDoNotFit(t, dir, backups[0].Name, record, storage) })
	t.Run("a server whose socket path is too long", func(t *testing.T) { testRestoreWithASocketPathTooLong(t, dir, backups[0].Name, record, storage) })
	t.Run("a server killed during the check", func(t *testing.T) { testRestoreOfAServerKilledDuringTheCheck(t, dir, backups[0].Name, record, storage) })
	t.Run("a server short of open files", func(t *testing.T) { testRestoreOfAServerShortOfFiles(t, dir, backups[0].Name, record, storage) })
	t.Run("a server that starts nowhere here", func(t *testing.T) { testRestoreOfAServerThatStartsNowhere(t, dir, backups[0].Name, record, storage) })
	t.Run("a tool that crashes", func(t *testing.T) { testRestoreOfAToolThatCrashes(t, dir, backups[0].Name, record, storage) })
	t.Run("a prepare that fails before the backup's files", func(t *testing.T) {
		testRestoreOfAPrepareThatNeverReadsTheBackup(t, dir, backups[0].Name, record, storage)
	})
	t.Run("a server that refuses the backup's files", func(t *testing.T) { testRestoreRefusedByTheServer(t, dir, backups[0].Name, record, storage) })
	t.Run("a released base brings back its chain", func(t *testing.T) { releaseBringsBackTheChain(t, dir, backups[1].Name, backups[2].Name, storage) })
	t.Run("a damaged base", func(t *testing.T) {
		aDamagedBaseIsJudgedForItself(t, dir, runs[0], backups[1].Name, backups[2].Name, storage)
	})
}

// releaseBringsBackTheChain: an incremental backup whose test restore
// fails (real mariadbd refusing its restored files) is quarantined with
// --quarantine-on-failure, and the backup based on it with it; vtfifo
// release of the first puts both back, saying so (the second stayed
// quarantined, unnamed).
func releaseBringsBackTheChain(t *testing.T, dir, delta, next string, storage []string) {
	mysqld := filepath.Join(dir, "mysqld-that-refuses-every-backup")
	require.NoError(t, os.WriteFile(mysqld, []byte(refusesTheBackup("echo '[ERROR] InnoDB: refused' >&2; exit 1")), 0o755))
	runArgs(t, 1, append([]string{"test-restore", "--backup=" + delta, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
		"--quarantine-on-failure", "--quiet"}, storage...)...)
	list := append([]string{"ls", "--quiet"}, storage[:len(storage)-1]...)
	assert.Regexp(t, `\n`+next+`\s+-\s+quarantined: its base `+delta+` is quarantined: test restore failed`, run(t, 0, list...))
	out := run(t, 0, append([]string{"release", "--backup=" + delta, "--quiet"}, storage[:len(storage)-1]...)...)
	assert.Contains(t, out, "released vtfifo-selftest/")
	assert.Regexp(t, `\nreleased \S+/`+next+` too \(the quarantine of its chain had taken it out\), after verifying every part`, out)
	assert.NotContains(t, run(t, 0, list...), "quarantined")
}

// testRestoreOfAToolThatCrashes: real mariabackup behind a wrapper that
// makes its prepare die of SIGABRT, on the backup's files only, then on
// every directory. The control (the same prepare on an empty directory)
// is real mariabackup's refusal, exit 1, so the first crash is the
// backup's (exit 1); the second is this host's tool: exit 3, nothing
// recorded or quarantined (it was a failed backup, quarantined).
func testRestoreOfAToolThatCrashes(t *testing.T, dir, backup, record string, storage []string) {
	before, err := os.ReadFile(record)
	require.NoError(t, err, "the pass recorded before")
	wrapper := func(name, when string) string { return mariabackupWrapper(t, dir, name, when+" && kill -ABRT $$") }
	onTheBackup := wrapper("mariabackup-that-crashes-on-the-backup", `[ -e "$d/xtrabackup_checkpoints" ]`)
	out, _ := runArgs(t, 1, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--fifo-backup-tool-path=" + onTheBackup,
		"--record=false", "--quiet"}, storage...)...)
	assert.Contains(t, out, "FAIL: test restore of ")
	assert.Contains(t, out, "mariabackup --prepare failed: signal: aborted")
	assert.True(t, strings.HasSuffix(out, "; the same tool, run the same way on an empty directory, ends by itself (exit status 1): the "+
		"backup's files are what it crashed on\n"), out)

	everywhere := wrapper("mariabackup-that-crashes-everywhere", "true")
	out, errOut := runArgs(t, 3, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--fifo-backup-tool-path=" + everywhere,
		"--quarantine-on-failure", "--quiet"}, storage...)...)
	assertTheHostsTool(t, out, errOut, "; the same tool, run the same way on an empty directory, dies of a signal too (signal: aborted): this "+
		"host's tool, not the backup", "its backup tool crashes here even on an empty directory, so its crash says nothing about the backup")
	assertNothingRecorded(t, record, before, storage)
}

// assertTheHostsTool asserts a test restore's output where the control
// showed this host's tool failing on an empty directory too: control, what
// the error says of it, and why, this host's fault.
func assertTheHostsTool(t *testing.T, out, errOut, control, why string) {
	t.Helper()
	assert.Empty(t, errOut)
	assert.Contains(t, out, control)
	assert.True(t, strings.HasSuffix(out, "; this host could not finish it ("+why+"): nothing says the backup is damaged\n"), out)
}

// mariabackupWrapper writes dir/name, real mariabackup whose --prepare runs
// prepare first (a /bin/sh script's body, $d its target directory).
func mariabackupWrapper(t *testing.T, dir, name, prepare string) string {
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(`#!/bin/sh
case "$*" in *--prepare*)
	for a; do case "$a" in --target-dir=*) d="${a#*=}";; esac; done
	`+prepare+`;;
esac
exec /usr/bin/mariabackup "$@"
`), 0o755))
	return p
}

// testRestoreOfAPrepareThatNeverReadsTheBackup: real mariabackup whose
// prepare fails, ending by itself, judged by the control (the same prepare
// on an empty directory but for the backup's backup-my.cnf, which
// mariabackup refuses: exit 1, "cannot open ./xtrabackup_checkpoints").
// Given --fifo-backup-prepare-flags it does not take, it
// fails the same way there, and not without them: the flags are named,
// exit 2 (it was a failed test restore and a quarantine of the backup and
// its chain, exit 1). A wrapper that exits 3 without a word wherever it
// runs (a tool that cannot work here) fails the same way on the empty
// directory: exit 3. Both record and quarantine nothing. What fails on the
// backup's files only stays a verdict, exit 1: mariabackup refusing a redo
// log whose header a wrapper zeroed (its own words), and the wrapper's
// silent exit 3 where the backup's xtrabackup_checkpoints is. Given
// --fifo-backup-prepare-flags it takes that do not fit the backup (another
// page size: "Data structure corruption"), the backup is restored again
// without them and passes: exit 2, nothing recorded (it was exit 1 and
// quarantined); where it fails without them too, exit 1.
func testRestoreOfAPrepareThatNeverReadsTheBackup(t *testing.T, dir, backup, record string, storage []string) {
	before, err := os.ReadFile(record)
	require.NoError(t, err, "the pass recorded before")
	testRestore := func(code int, flags ...string) (string, string) {
		return runArgs(t, code, append(append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--quiet"}, flags...),
			storage...)...)
	}
	wrapper := func(name, prepare string) string {
		return "--fifo-backup-tool-path=" + mariabackupWrapper(t, dir, name, prepare)
	}

	out, errOut := testRestore(2, "--fifo-backup-prepare-flags=--no-such-option=1", "--quarantine-on-failure")
	assert.Empty(t, out)
	assert.Contains(t, errOut, "could not run, nothing is recorded: ")
	assert.Contains(t, errOut, "mariabackup --prepare failed: exit status 7; its last output:\n/usr/bin/mariabackup: unknown variable "+
		"'no-such-option=1'; the same tool, run the same way on an empty directory, fails the same way (exit status 7), and without "+
		`--fifo-backup-prepare-flags="--no-such-option=1" it does not: those flags do not fit this tool or this host, and nothing says the `+
		"backup is damaged; correct them or leave them out (no verdict on the backup)\n")
	assertNothingRecorded(t, record, before, storage)
	// So does a table restore, leaving nothing.
	tableTarget := filepath.Join(dir, "table-under-flags")
	out, errOut = runArgs(t, 2, append([]string{"restore-table", "--backup=" + backup, "--table=selftest.t0001", "--target-dir=" + tableTarget,
		"--fifo-backup-prepare-flags=--no-such-option=1"}, storage...)...)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "mariabackup --prepare failed: exit status 7; its last output:\n/usr/bin/mariabackup: unknown variable "+
		"'no-such-option=1'; the same tool, run the same way on an empty directory, fails the same way (exit status 7), and without "+
		`--fifo-backup-prepare-flags="--no-such-option=1" it does not: those flags do not fit this tool or this host, and nothing says the `+
		"backup is damaged; correct them or leave them out\n")
	assert.NoDirExists(t, tableTarget)

	out, errOut = testRestore(3, wrapper("mariabackup-that-fails-everywhere", "exit 3"), "--quarantine-on-failure")
	assertTheHostsTool(t, out, errOut, "mariabackup --prepare failed: exit status 3; its last output:\n(none); the same tool, run the same way "+
		"on an empty directory, fails the same way (exit status 3, the same output): it never got as far as the backup's files",
		"its backup tool fails here the same way on an empty directory, so its failure says nothing about the backup")
	assertNothingRecorded(t, record, before, storage)

	out, _ = testRestore(1, wrapper("mariabackup-that-fails-on-the-backup", `[ -e "$d/xtrabackup_checkpoints" ] && exit 3`), "--record=false")
	assert.Contains(t, out, "FAIL: test restore of ")
	assert.True(t, strings.HasSuffix(out, "mariabackup --prepare failed: exit status 3; its last output:\n(none)\n"), out)

	zeroedRedo := wrapper("mariabackup-on-a-zeroed-redo-log",
		`[ -f "$d/ib_logfile0" ] && dd if=/dev/zero of="$d/ib_logfile0" bs=4096 count=4 conv=notrunc 2>/dev/null`)
	out, _ = testRestore(1, zeroedRedo, "--record=false")
	assert.Contains(t, out, "FAIL: test restore of ")
	assert.Contains(t, out, "mariabackup --prepare failed: exit status 1; its last output:")
	assert.Contains(t, out, "we did not find a valid checkpoint")
	assert.NotContains(t, out, "nothing says the backup is damaged")
	assertNothingRecorded(t, record, before, storage)

	// Flags the tool takes that do not fit the backup's files: its prepare
	// fails on them in the words of damage ("Data structure corruption");
	// restored again without them, the backup passes.
	out, errOut = testRestore(2, "--fifo-backup-prepare-flags=--innodb-page-size=4k --password=PlantedSecret9", "--quarantine-on-failure")
	assert.Empty(t, out)
	assert.Contains(t, errOut, "uses page size 16384, but the innodb_page_size start-up parameter is 4096")
	assert.True(t, strings.HasSuffix(errOut, `; without --fifo-backup-prepare-flags="--innodb-page-size=4k --password=****" the backup restores, `+
		"starts and passes every check: those flags do not fit this backup or this host, and nothing says the backup is damaged; correct "+
		"them or leave them out (no verdict on the backup)\n"), errOut)
	assert.NotContains(t, errOut, "PlantedSecret9")
	assertNothingRecorded(t, record, before, storage)
	// A restore does not try without them: no verdict, saying how to tell
	// (a secret among the flags hidden).
	target := filepath.Join(dir, "restored-under-flags")
	out, errOut = runArgs(t, 3, append([]string{"restore", "--backup=" + backup, "--prepare", "--target-dir=" + target,
		"--fifo-backup-prepare-flags=--innodb-page-size=4k --password=PlantedSecret9"}, storage...)...)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "vtfifo restore: FAIL: fifo restore of backup "+backup+" into "+target+" failed: mariabackup --prepare failed: exit status 1")
	assert.True(t, strings.HasSuffix(errOut, `; this host could not finish it (its prepare ran with --fifo-backup-prepare-flags="--innodb-page-size=4k `+
		`--password=****", which may be what it failed on; restore it without them, or run vtfifo test-restore, which tries both, to tell): `+
		"nothing says the backup is damaged\n"), errOut)
	assert.NotContains(t, errOut, "PlantedSecret9")
	assert.NoDirExists(t, target)
	// A backup that fails without them as well is still a failure.
	out, _ = testRestore(1, zeroedRedo, "--fifo-backup-prepare-flags=--innodb-page-size=4k", "--record=false")
	assert.Contains(t, out, "FAIL: test restore of ")
	assert.Contains(t, out, `(and without --fifo-backup-prepare-flags="--innodb-page-size=4k": `)
	assert.Contains(t, out, "we did not find a valid checkpoint")
	assert.NotContains(t, out, "nothing says the backup is damaged")
	assertNothingRecorded(t, record, before, storage)
}

// testRestoreOfAServerThatStartsNowhere: a server that crashes at every
// start on this host, in words no list of this host's faults knows (a
// stand-in that writes a line and dies of SIGSEGV, as a server built for
// another CPU or missing a kernel feature may), is started again on an
// empty data directory (the control), crashes there too, and so says
// nothing about the backup: exit 3, nothing recorded or quarantined (it
// was a failed test restore and a quarantine, exit 1). So is restore-table
// with that server (it said the backup was damaged, exit 1).
func testRestoreOfAServerThatStartsNowhere(t *testing.T, dir, backup, record string, storage []string) {
	before, err := os.ReadFile(record)
	require.NoError(t, err, "the pass recorded before")
	mysqld := filepath.Join(dir, "mysqld-that-crashes-at-its-start")
	require.NoError(t, os.WriteFile(mysqld, []byte("#!/bin/sh\ncase \"$*\" in *--version*) exec /usr/sbin/mariadbd --version;; esac\n"+
		"echo '[ERROR] mysqld got signal 11 ;' >&2; kill -SEGV $$\n"), 0o755))
	out, errOut := runArgs(t, 3, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
		"--quarantine-on-failure", "--quiet"}, storage...)...)
	assert.Empty(t, errOut)
	assert.Contains(t, out, "FAIL: test restore of ")
	assert.Contains(t, out, "could not run, nothing is recorded: mysqld exited while starting (signal: segmentation fault)")
	assert.Contains(t, out, "; the same server, started the same way, does not start on an empty data directory here either: mysqld exited "+
		"while starting (signal: segmentation fault)")
	assert.True(t, strings.HasSuffix(out, "; this host could not finish it (its server does not start here even on an empty data directory, so its "+
		"refusal says nothing about the backup): nothing says the backup is damaged\n"), out)
	assertNothingRecorded(t, record, before, storage)

	// restore-table's server that reads the definitions: the same control.
	target := filepath.Join(dir, "tables-of-a-server-that-starts-nowhere")
	defer os.RemoveAll(target)
	out, errOut = runArgs(t, 3, append([]string{"restore-table", "--backup=" + backup, "--table=selftest.t0001", "--target-dir=" + target,
		"--mysqld=" + mysqld, "--quiet"}, storage...)...)
	assert.Contains(t, out+errOut, "FAIL: reading the tables' definitions from the restored files: mysqld exited while starting (signal: "+
		"segmentation fault)")
	assert.Contains(t, out+errOut, "its server does not start here even on an empty data directory, so its refusal says nothing about the backup")
}

// testRestoreRefusedByTheServer: real mariadbd that refuses the restored
// files (a wrapper overwrites the first pages of the restored ibdata1, as
// a backup taken damaged would hold them) and starts on an empty data
// directory: the refusal is the verdict, exit 1, saying the control
// started; show prints the failed record with its whole error.
func testRestoreRefusedByTheServer(t *testing.T, dir, backup, record string, storage []string) {
	mysqld := filepath.Join(dir, "mysqld-on-a-damaged-system-tablespace")
	require.NoError(t, os.WriteFile(mysqld, []byte(refusesTheBackup(`head -c 65536 /dev/zero | tr '\0' x | `+
		`dd of="$d/ibdata1" conv=notrunc 2>/dev/null`)), 0o755))
	show := append([]string{"show", "--backup=" + backup}, storage[:len(storage)-1]...)
	assert.Regexp(t, `\nTest restore: +passed \S+ \(\d+ tables, \d+ rows\) on \S+, took \S+\n`, run(t, 0, show...), "the pass before")
	out, _ := runArgs(t, 1, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
		"--quarantine-on-failure=false", "--quiet"}, storage...)...)
	assert.Contains(t, out, "FAIL: test restore of ")
	assert.Contains(t, out, "record stored beside the backup; not quarantined (--quarantine-on-failure=false): vtfifo restore passes over it and "+
		"retention does not count it, but a tablet's restore may still choose it (a test restore without that flag takes it out of every "+
		"restore's choice)): mysqld exited while starting (exit status 1); its error log ends:")
	assert.Contains(t, out, "[ERROR] Aborting")
	refused := "; the same server, started the same way, starts on an empty data directory here: the restored files are what it refused\n"
	assert.True(t, strings.HasSuffix(out, refused), out)
	assert.NotContains(t, out, "nothing says the backup is damaged")
	// show says so, with the whole error (it showed no test restore at all).
	out = run(t, 0, show...)
	assert.Regexp(t, `\nTest restore: +failed \S+ on \S+, took \S+ \(its error below\)\n`, out)
	assert.Regexp(t, `\n\nThe test restore of \S+ failed:\nmysqld exited while starting \(exit status 1\); its error log ends:\n`, out)
	assert.Contains(t, out, "[ERROR] Aborting\n")
	assert.True(t, strings.HasSuffix(out, refused), out)

	// By default the failure quarantines it, and the backups based on it:
	// no restore chooses them, a tablet's included; release puts them back.
	out, _ = runArgs(t, 1, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
		"--quiet"}, storage...)...)
	assert.Contains(t, out, "; the backup is quarantined: restores no longer choose it): mysqld exited while starting (exit status 1)")
	assert.True(t, strings.HasSuffix(out, refused), out)
	list := append([]string{"ls", "--quiet"}, storage[:len(storage)-1]...)
	listed := run(t, 0, list...)
	assert.Regexp(t, `\n`+backup+`\s+-\s+quarantined: test restore failed \S+: mysqld exited while starting`, listed)
	assert.Regexp(t, `\n\S+\s+-\s+quarantined: its base `+backup+` is quarantined: test restore failed`, listed)
	out = run(t, 0, append([]string{"release", "--backup=" + backup, "--quiet"}, storage[:len(storage)-1]...)...)
	assert.Regexp(t, `\nreleased \S+ too \(the quarantine of its chain had taken it out\)`, out)
	assert.NotContains(t, run(t, 0, list...), "quarantined")
}

// testRestoreOfAServerShortOfFiles: real mariadbd under a limit of open
// files (ulimit -n, as a host's LimitNOFILE sets it) too low for the
// backup's tables: at its start it cannot read its plugins ("Out of
// resources when opening file ... Too many open files"), or CHECK TABLE
// fails table after table ("Got error 24 \"Too many open files\" from
// storage engine"). This host's, never the backup's: exit 3, nothing
// recorded or quarantined (both were a failed test restore and a
// quarantine).
func testRestoreOfAServerShortOfFiles(t *testing.T, dir, backup, record string, storage []string) {
	before, err := os.ReadFile(record)
	require.NoError(t, err, "the pass recorded before")
	for _, limit := range []string{"32", "36"} {
		mysqld := filepath.Join(dir, "mysqld-with-"+limit+"-files")
		require.NoError(t, os.WriteFile(mysqld, []byte("#!/bin/sh\nulimit -n "+limit+"\nexec /usr/sbin/mariadbd \"$@\"\n"), 0o755))
		out, errOut := runArgs(t, 3, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
			"--quarantine-on-failure", "--quiet"}, storage...)...)
		assert.Empty(t, errOut, limit)
		assert.Contains(t, out, "FAIL: test restore of ", limit)
		assert.Contains(t, out, "could not run, nothing is recorded: ", limit)
		assert.Contains(t, out, `"Too many open files"`, limit)
		assert.True(t, strings.HasSuffix(out, "; this host could not finish it (too many open files): nothing says the backup is damaged\n"), out)
		after, err := os.ReadFile(record)
		require.NoError(t, err)
		assert.Equal(t, string(before), string(after), limit)
	}
	ls := run(t, 0, append([]string{"ls"}, storage[:len(storage)-1]...)...)
	assert.NotContains(t, ls, "quarantined")
}

// testRestoreWithASocketPathTooLong: real mariadbd told (by a wrapper, as
// a host's packaging may) to listen on a socket whose path is longer than
// a Unix socket takes aborts at its start ("The socket file path is too
// long (> 107)"): this host's, never the backup's: exit 3, nothing
// recorded or quarantined (both were, in a CI run where a test's wrapper
// did this by chance).
func testRestoreWithASocketPathTooLong(t *testing.T, dir, backup, record string, storage []string) {
	before, err := os.ReadFile(record)
	require.NoError(t, err, "the pass recorded before")
	mysqld := filepath.Join(dir, "mysqld-with-a-long-socket-path")
	long := filepath.Join(dir, strings.Repeat("s", 110)+".sock")
	require.NoError(t, os.WriteFile(mysqld, []byte("#!/bin/sh\nexec /usr/sbin/mariadbd \"$@\" --socket="+long+"\n"), 0o755))
	out, errOut := runArgs(t, 3, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
		"--quarantine-on-failure", "--quiet"}, storage...)...)
	assert.Empty(t, errOut)
	assert.Contains(t, out, "FAIL: test restore of ")
	assert.Contains(t, out, "could not run, nothing is recorded: ")
	assert.Contains(t, out, "The socket file path is too long (> 107)")
	assert.True(t, strings.HasSuffix(out, "; this host could not finish it (a socket's path is longer than the 107 bytes a Unix socket takes "+
		"(a shorter directory)): nothing says the backup is damaged\n"), out)
	assertNothingRecorded(t, record, before, storage)
}

// testRestoreOfAServerKilledDuringTheCheck: real mariadbd killed with
// SIGKILL (as the kernel's OOM killer does) in the middle of the check:
// the wrapper holds a write lock on one table before the test restore can
// connect (it shows the socket only then), so that table's CHECK TABLE
// waits, and kills the server once it does. The checks fail on their
// connections, which proves nothing about the backup: exit 3, nothing
// recorded or quarantined (it was a failed test restore and a quarantine).
// The real server's socket is beside the test restore's (in /tmp where
// that is), named shorter: one named longer was once too long for mysqld;
// the wrapper removes it.
func testRestoreOfAServerKilledDuringTheCheck(t *testing.T, dir, backup, record string, storage []string) {
	before, err := os.ReadFile(record)
	require.NoError(t, err, "the pass recorded before")
	mysqld := filepath.Join(dir, "mysqld-killed-during-the-check")
	require.NoError(t, os.WriteFile(mysqld, []byte(`#!/bin/sh
case "$*" in *--version*) exec /usr/sbin/mariadbd --version;; esac
for a in "$@"; do case "$a" in --socket=*) sock="${a#--socket=}";; esac; done
real="${sock%/*}/k$$"
/usr/sbin/mariadbd "$@" --socket="$real" &
pid=$!
alive() { kill -0 "$pid" 2>/dev/null || { wait "$pid"; s=$?; rm -f "$real"; exit $s; }; }
count() { mariadb --socket="$real" -N -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '$1'" 2>/dev/null; }
until mariadb --socket="$real" -e "SELECT 1" >/dev/null 2>&1; do alive; sleep 0.05; done
mariadb --socket="$real" -e "LOCK TABLES selftest.wide WRITE; DO SLEEP(600)" &
until [ "$(count 'DO SLEEP%')" = 1 ]; do alive; sleep 0.05; done
ln -s "$real" "$sock"
until [ "$(count 'CHECK TABLE %wide%')" = 1 ]; do alive; sleep 0.05; done
kill -9 "$pid"; wait "$pid"; rm -f "$real"; kill -9 $$
`), 0o755))
	out, errOut := runArgs(t, 3, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
		"--quarantine-on-failure", "--quiet"}, storage...)...)
	assert.Empty(t, errOut)
	assert.Contains(t, out, "FAIL: test restore of ")
	// The checks the kill cut off fail on their connections: a dropped one
	// ("invalid connection") or, once the socket is gone, a refused one (a
	// host's fault by itself); which comes first is the scheduler's.
	assert.Regexp(t, `could not run, nothing is recorded: CHECK TABLE (failed on|could not be run on \d+ of) \d+ `, out)
	assert.Contains(t, out, "; mysqld exited during the check (signal: killed); its error log ends:")
	assert.Contains(t, out, "a program was killed (SIGKILL: the kernel's OOM killer, or an operator)")
	assertNothingRecorded(t, record, before, storage)
}

// testRestoreWithFlagsThatDoNotFit: real mariadbd given --mysqld-flags that
// do not fit the backup (another page size) exits at start; the backup,
// restored again, starts without them and passes: the flags are a usage
// error, exit 2, and nothing is recorded or quarantined, also where the
// server under the flags damaged the files it was given, or started and
// failed its checks. Flags this server
// takes nowhere (an option it does not know) are told by the control
// alone, exit 2. A server that refuses the backup's files without them too
// (a stand-in) is a failed test restore, exit 1, saying both.
func testRestoreWithFlagsThatDoNotFit(t *testing.T, dir, backup, record string, storage []string) {
	before, err := os.ReadFile(record)
	require.NoError(t, err, "the pass recorded before")
	_, errOut := runArgs(t, 2, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-flags=--innodb-page-size=4k",
		"--quarantine-on-failure", "--quiet"}, storage...)...)
	assert.Contains(t, errOut, "vtfifo test-restore: test restore of ")
	assert.Contains(t, errOut, "could not run, nothing is recorded: mysqld exited while starting")
	assert.Contains(t, errOut, `without --mysqld-flags="--innodb-page-size=4k" the backup restores, starts and passes every check: those flags do not fit `+
		"this backup or this host, and nothing says the backup is damaged; correct them or leave them out")
	assertNothingRecorded(t, record, before, storage)

	// Flags under which the server starts and its checks fail (InnoDB in
	// its last recovery mode calls indexes corrupted): the run without them
	// passes, and the tables the first run failed are not carried into it
	// (they were: the backup failed and was quarantined).
	_, errOut = runArgs(t, 2, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-flags=--innodb-force-recovery=6",
		"--quiet"}, storage...)...)
	assert.Contains(t, errOut, "could not run, nothing is recorded: CHECK TABLE failed on ")
	assert.Contains(t, errOut, `; without --mysqld-flags="--innodb-force-recovery=6" the backup restores, starts and passes every check: those flags `+
		"do not fit this backup or this host, and nothing says the backup is damaged; correct them or leave them out")
	assertNothingRecorded(t, record, before, storage)

	_, errOut = runArgs(t, 2, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-flags=--no-such-option=1",
		"--quarantine-on-failure", "--quiet"}, storage...)...)
	assert.Contains(t, errOut, "could not run, nothing is recorded: mysqld exited while starting")
	assert.Contains(t, errOut, "unknown variable 'no-such-option=1'")
	assert.Contains(t, errOut, `; started with --mysqld-flags="--no-such-option=1" it does not start on an empty data directory either, and without `+
		"them it does: those flags do not fit this server or this host, and nothing says the backup is damaged; correct them or leave them out")
	assertNothingRecorded(t, record, before, storage)

	// A server that, under the flags, damages the files it was given before
	// it fails: the run without them restores the backup again, so the
	// damage the flags did is never taken for the backup's.
	mysqld := filepath.Join(dir, "mysqld-that-damages-under-the-flags")
	require.NoError(t, os.WriteFile(mysqld, []byte(refusesTheBackup(`case "$*" in *--innodb-page-size=4k*)
	find "$d" -name '*.ibd' -exec truncate -s 0 {} +
	echo '[ERROR] InnoDB: the page size does not fit' >&2; exit 1;;
esac`)), 0o755))
	_, errOut = runArgs(t, 2, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
		"--mysqld-flags=--innodb-page-size=4k", "--quarantine-on-failure", "--quiet"}, storage...)...)
	assert.Contains(t, errOut, `without --mysqld-flags="--innodb-page-size=4k" the backup restores, starts and passes every check`)
	assertNothingRecorded(t, record, before, storage)

	mysqld = filepath.Join(dir, "mysqld-that-never-starts-on-the-backup")
	require.NoError(t, os.WriteFile(mysqld, []byte(refusesTheBackup("echo '[ERROR] InnoDB: Unable to open the system tablespace' >&2; exit 1")), 0o755))
	out, _ := runArgs(t, 1, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
		"--mysqld-flags=--innodb-page-size=4k", "--record=false", "--quiet", "--json"}, storage...)...)
	var res TestRestoreResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Contains(t, res.Record.Error, `(and without --mysqld-flags="--innodb-page-size=4k": mysqld exited while starting`)
	// The record is the run's without the flags: its own phases, once each.
	var phases []string
	for _, p := range res.Record.Phases {
		phases = append(phases, p.Phase)
	}
	assert.Equal(t, []string{"download", "prepare", "start"}, phases)

	// One that fails with the flags, and without them cannot be run on
	// this host (it says "Permission denied"): nothing tells the flags from
	// the backup, exit 3, nothing recorded.
	mysqld = filepath.Join(dir, "mysqld-confined-without-the-flags")
	require.NoError(t, os.WriteFile(mysqld, []byte(strings.Replace(refusesTheBackup(`case "$*" in *--innodb-page-size=4k*)
	echo '[ERROR] InnoDB: the page size does not fit' >&2; exit 1;;
esac`), `exec /usr/sbin/mariadbd "$@"`, `case "$*" in *--innodb-page-size=4k*) exec /usr/sbin/mariadbd "$@";; esac
echo "mariadbd: Can't create/write to file '/tmp/x' (Errcode: 13 \"Permission denied\")" >&2; exit 1`, 1)), 0o755))
	out, errOut = runArgs(t, 3, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
		"--mysqld-flags=--innodb-page-size=4k", "--quarantine-on-failure", "--quiet"}, storage...)...)
	assert.Empty(t, errOut)
	assert.Contains(t, out, "FAIL: test restore of ")
	assert.Contains(t, out, "could not run, nothing is recorded: mysqld exited while starting")
	assert.Contains(t, out, `without --mysqld-flags="--innodb-page-size=4k" the run could not be made (`)
	assert.True(t, strings.HasSuffix(out, "; this host could not finish it (it failed only under the operator's --mysqld-flags, and could not be "+
		"run without them): nothing says the backup is damaged\n"), out)
	assertNothingRecorded(t, record, before, storage)
}

// assertNothingRecorded: the record of the pass before the run is as it
// was, and no backup is quarantined.
func assertNothingRecorded(t *testing.T, record string, before []byte, storage []string) {
	t.Helper()
	after, err := os.ReadFile(record)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	ls := run(t, 0, append([]string{"ls"}, storage[:len(storage)-1]...)...)
	assert.NotContains(t, ls, "quarantined")
}

// refusesTheBackup is a stand-in of mysqld that runs refusal on a data
// directory restored from a backup (it holds the tool's backup-my.cnf) and
// is the real mariadbd otherwise: a server that refuses the backup's files
// and starts on an empty directory (the test restore's control).
func refusesTheBackup(refusal string) string {
	return `#!/bin/sh
case "$*" in *--version*) exec /usr/sbin/mariadbd --version;; esac
for a in "$@"; do case "$a" in --datadir=*) d="${a#--datadir=}";; esac; done
if [ -e "$d/backup-my.cnf" ]; then ` + refusal + `; fi
exec /usr/sbin/mariadbd "$@"
`
}

// testRestoreOnAnOlderServer: a server that refuses the restored directory
// at start (a stand-in that exits as a server refusing a later version's
// data does) is no verdict when it is older than the backup's server: exit
// 2 naming the version to give, nothing recorded; the same refusal from a
// newer server is a failed test restore, exit 1.
func testRestoreOnAnOlderServer(t *testing.T, dir, backup, record string, storage []string) {
	before, err := os.ReadFile(record)
	require.NoError(t, err)
	stand := func(version string) string {
		mysqld := filepath.Join(dir, "mysqld-"+version)
		require.NoError(t, os.WriteFile(mysqld, []byte(strings.Replace(refusesTheBackup("echo 'InnoDB: Upgrade after a crash is not supported' >&2; exit 1"),
			"exec /usr/sbin/mariadbd --version", "echo '/usr/sbin/mariadbd  Ver "+version+"-MariaDB for debian-linux-gnu on x86_64'; exit 0", 1)), 0o755))
		return mysqld
	}
	testRestore := func(code int, mysqld string, more ...string) string {
		out, errOut := runArgs(t, code, append(append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
			"--quiet"}, more...), storage...)...)
		return out + errOut
	}
	out := testRestore(2, stand("10.6.1"))
	assert.Contains(t, out, "could not run, nothing is recorded: mysqld exited while starting")
	assert.Contains(t, out, "Ver 10.6.1-MariaDB for debian-linux-gnu on x86_64 is older than the server that took the backup (Ver 10.11.")
	assert.Contains(t, out, "that is no proof about the backup; give a server of 10.11.")
	after, err := os.ReadFile(record)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	out = testRestore(1, stand("11.4.2"), "--record=false")
	assert.Contains(t, out, "FAIL: test restore of ")
	assert.Contains(t, out, "mysqld exited while starting")
}

// testRestoreOnAConfiningHost: a mysqld this host keeps out of a directory
// it needs (its --tmpdir, as AppArmor or SELinux would) exits at start
// saying "Permission denied": the test restore says this host could not
// finish it, exit 3, and records and quarantines nothing: the record of the
// pass before stays.
func testRestoreOnAConfiningHost(t *testing.T, dir, backup, record string, storage []string) {
	before, err := os.ReadFile(record)
	require.NoError(t, err, "the pass recorded before")
	closed := filepath.Join(dir, "root-only")
	require.NoError(t, os.Mkdir(closed, 0o700))
	mysqld := filepath.Join(dir, "confined-mysqld")
	require.NoError(t, os.WriteFile(mysqld, []byte("#!/bin/sh\ncase \"$*\" in *--version*) exec /usr/sbin/mariadbd --version;; esac\n"+
		"exec /usr/sbin/mariadbd \"$@\" --tmpdir="+closed+"\n"), 0o755))
	out, _ := runArgs(t, 3, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
		"--quarantine-on-failure", "--quiet"}, storage...)...)
	assert.Contains(t, out, "could not run, nothing is recorded: mysqld exited while starting")
	assert.Contains(t, out, `Errcode: 13 "Permission denied"`)
	assert.Contains(t, out, "this host could not finish it (a file or directory is not accessible to it here (its modes, AppArmor or SELinux)): "+
		"nothing says the backup is damaged\n")
	assertNothingRecorded(t, record, before, storage)
}

// restoreUsesItsOwnTablespaces: the selftest's backups hold a DATA
// DIRECTORY table; its source server, kept and stopped, still has that
// table's file where the backup's .isl points. A test restore on this host
// (as one on the source's host, a replica's or vtbackup's of the same
// layout) passes: the prepared directory opens the tablespace it restored,
// not the source's (MariaDB refuses a table found in two places), and
// holds no link out of it.
func restoreUsesItsOwnTablespaces(t *testing.T, kept, dir, backup string, storage []string) {
	external, err := filepath.Glob(filepath.Join(kept, "external", "*", "remote.ibd"))
	require.NoError(t, err)
	require.Len(t, external, 1, "the source's DATA DIRECTORY file")
	out := run(t, 0, append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir}, storage...)...)
	assert.Contains(t, out, "OK: test restore of ")
	target := filepath.Join(dir, "restored")
	run(t, 0, append([]string{"restore", "--prepare", "--target-dir=" + target}, storage...)...)
	assert.FileExists(t, filepath.Join(target, "selftest", "remote.ibd"))
	assert.NoFileExists(t, filepath.Join(target, "selftest", "remote.isl"), "no link to the source's file")
	assert.FileExists(t, external[0], "the source's file is left as it was")
}

// testRestoreTakesTheDictionarysCase: a server that refuses the restored
// data directory as MySQL 8 does when its data dictionary was initialized
// with another lower_case_table_names (a stand-in of mysqld that writes
// MySQL's MY-011087 line to its error log and exits, unless started with
// --lower-case-table-names=1, then runs MariaDB's) is started again with the
// dictionary's value: the test restore passes. A value given in
// --mysqld-flags that the dictionary contradicts is a usage error, exit 2,
// naming the value; nothing is recorded either way but the pass.
func testRestoreTakesTheDictionarysCase(t *testing.T, dir, backup string, storage []string) {
	mysqld := filepath.Join(dir, "mysqld-initialized-with-lctn-1")
	require.NoError(t, os.WriteFile(mysqld, []byte(`#!/bin/bash
args=(); lctn=0; log=/dev/null
for a in "$@"; do
  case "$a" in
  --lower-case-table-names=*) lctn="${a#*=}";;
  --log-error=*) log="${a#*=}"; args+=("$a");;
  *) args+=("$a");;
  esac
done
case "$*" in *--version*) exec /usr/sbin/mariadbd --version;; esac
if [ "$lctn" != 1 ]; then
  echo "2026-11-29T01:00:00.000000Z 1 [ERROR] [MY-011087] [Server] Different lower_case_table_names settings for server ('$lctn') and data dictionary ('1')." >> "$log"
  echo "2026-11-29T01:00:00.000000Z 0 [ERROR] [MY-010020] [Server] Data Dictionary initialization failed." >> "$log"
  exit 1
fi
exec /usr/sbin/mariadbd "${args[@]}"
`), 0o755))
	testRestore := func(code int, more ...string) (string, string) {
		return runArgs(t, code, append(append([]string{"test-restore", "--backup=" + backup, "--scratch-dir=" + dir, "--mysqld-path=" + mysqld,
			"--record=false", "--log-level=info"}, more...), storage...)...)
	}
	out, errOut := testRestore(0)
	assert.Contains(t, out, "OK: test restore of ")
	assert.Contains(t, errOut, "test restore: the backup's data dictionary was initialized with lower_case_table_names=1: starting "+mysqld+
		" again with --lower-case-table-names=1")
	_, errOut = testRestore(2, "--mysqld-flags=--lower-case-table-names=0")
	assert.Contains(t, errOut, "vtfifo test-restore: test restore of ")
	assert.Contains(t, errOut, "could not run, nothing is recorded: the backup's data dictionary was initialized with lower_case_table_names=1, and the "+
		"server was started with 0: give --mysqld-flags=--lower-case-table-names=1, or leave it out")
}

// TestASelftestOnAFullDiskSaysSo: vtfifo selftest whose --work-dir is on a
// disk too small for its scratch server (a 60 MiB tmpfs: InnoDB cannot
// preallocate its redo log, "failed with error 28") fails saying this host
// could not run it, exit 3, not that the product failed (exit 1).
func TestASelftestOnAFullDiskSaysSo(t *testing.T) {
	tier.Integration(t, "MariaDB and mariabackup")
	mnt := tmpfs.Mount(t, 60<<20)
	out, errOut := runArgs(t, 3, "selftest", "--quiet", "--work-dir="+mnt)
	assert.NotContains(t, errOut, "vtfifo selftest:", "the report is on stdout; stderr holds only Vitess's own log of the failed command")
	assert.Contains(t, out, "vtfifo selftest: FAILED\n")
	assert.Contains(t, out, "  FAIL  start a scratch server (")
	assert.Contains(t, out, "s): this host could not finish it (its disk is full): initialising the scratch server: ")
	left, err := os.ReadDir(mnt)
	require.NoError(t, err)
	assert.Empty(t, left, "its scratch directory is removed")
}
