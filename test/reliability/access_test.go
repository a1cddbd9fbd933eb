package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/logutil"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/backend"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// runVtfifo runs the vtfifo binary's command against the fixture's
// storage and returns its exit status, stdout and stderr.
func runVtfifo(t testing.TB, cfg splitstorage.Config, command string, args ...string) (int, string, string) {
	t.Helper()
	argv := append([]string{command, "--backup-storage-implementation=split", "--keyspace=" + keyspace, "--shard=" + shard}, cfg.Args()...)
	cmd := exec.Command(vtfifoBin, append(argv, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "vtfifo did not run: %v", err)
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

// TestAccessIsNeverDamage: one part of a good backup that the store refuses
// to serve (403 AccessDenied, as for a principal its policy does not allow
// to read it) or does not answer for (a stall past --timeout), on S3
// (versitygw behind the fault proxy). Every vtfifo command that reads it
// exits 3 and says nothing makes the backup damaged: verify names the part
// as not read, test-restore records nothing and quarantines nothing even
// with --quarantine-on-failure, restore, export and copy leave nothing.
// Once the store serves the part again, the backup verifies and is listed
// as it was, untested and not quarantined.
func TestAccessIsNeverDamage(t *testing.T) {
	f := newFixture(t)
	p, _ := faultyStore(t, f, splitstorage.BackendS3)
	cfg := f.cfg
	require.NoError(t, f.backup(context.Background(), nil))
	names := f.list(t)
	require.Len(t, names, 1)
	name := names[0]
	part := path.Base(splitstorage.PartKey(backupDir, name, "lane-001.xbstream.zst", 1))
	scratch := t.TempDir()
	notDamaged := "nothing says the backup is damaged"

	commands := []struct {
		name string
		args []string
		want string // on stdout or stderr
	}{
		{"verify", nil, "could not be read or reached, so were not checked (nothing says they are damaged)"},
		{"test-restore", []string{"--quarantine-on-failure", "--start-timeout=2m"}, "could not run, nothing is recorded"},
		{"restore", []string{"--target-dir=" + filepath.Join(scratch, "restore")}, notDamaged},
		{"export", []string{"-o", filepath.Join(scratch, "export.xbstream")}, notDamaged},
		{"copy", []string{"--to=--split-storage-backend=file", "--to=--split-storage-root=" + filepath.Join(scratch, "copy")}, notDamaged},
	}
	for _, fault := range []struct {
		fault   splitstoragetest.Fault
		timeout string
		why     string
	}{
		{splitstoragetest.Forbidden, "", "AccessDenied"},
		{splitstoragetest.Stall, "--timeout=4s", ""},
	} {
		for _, c := range commands {
			t.Run(fault.fault.String()+"/"+c.name, func(t *testing.T) {
				p.ClearMatching()
				p.FailMatching("GET", part, fault.fault, 1000)
				args := append([]string{"--progress=never"}, c.args...)
				if fault.timeout != "" {
					args = append([]string{fault.timeout}, args...)
				}
				code, stdout, stderr := runVtfifo(t, cfg, c.name, args...)
				out := stdout + stderr
				t.Logf("vtfifo %s: exit %d:\n%s", c.name, code, out)
				assert.Equal(t, 3, code, "exit status; output:\n%s", out)
				if fault.timeout == "" {
					assert.Contains(t, out, c.want)
					assert.Contains(t, out, fault.why)
				}
				assert.NotContains(t, out, "problem(s)", "nothing reported as damage")
				assert.NotContains(t, out, "quarantined")
				if c.name == "verify" && fault.timeout == "" {
					assert.Contains(t, stdout, "file lane-001.xbstream.zst, part 1", "the part not read is named")
				}
			})
		}
	}
	// Damage in another part beside the one not read: verify reports the
	// damage, exit 1, whichever it reads first, and names both.
	damaged := splitstorage.PartKey(backupDir, name, "lane-000.xbstream.zst", 1)
	restorePart := flipByte(t, cfg, damaged)
	p.ClearMatching()
	p.FailMatching("GET", part, splitstoragetest.Forbidden, 1000)
	code, stdout, stderr := runVtfifo(t, cfg, "verify", "--progress=never")
	assert.Equal(t, 1, code, "damage and a part not read: exit 1\n%s%s", stdout, stderr)
	assert.Regexp(t, `file lane-000\.xbstream\.zst, part 1 \(\S+\): checksum mismatch`, stdout, "the damage is named")
	assert.Contains(t, stdout, "file lane-001.xbstream.zst, part 1", "the part not read is named")
	assert.Contains(t, stdout, "could not be read or reached, so were not checked")
	restorePart()

	p.ClearMatching()
	_, err := os.Stat(filepath.Join(scratch, "export.xbstream"))
	assert.True(t, os.IsNotExist(err), "export leaves no file behind")

	code, stdout, stderr = runVtfifo(t, cfg, "verify", "--progress=never")
	require.Equal(t, 0, code, "verify once the part is served again:\n%s%s", stdout, stderr)
	code, stdout, stderr = runVtfifo(t, cfg, "ls", "--json")
	require.Equal(t, 0, code, "ls:\n%s%s", stdout, stderr)
	var listed []struct {
		Name         string
		Verification json.RawMessage
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &listed), stdout)
	require.Len(t, listed, 1, "listed, not quarantined: %s", stdout)
	assert.Equal(t, name, listed[0].Name)
	assert.Empty(t, listed[0].Verification, "no test-restore record: %s", stdout)
}

// flipByte damages the object key in the middle, through the storage's own
// backend (its CRC32C recomputed, so the store takes it), and returns what
// puts the good bytes back.
func flipByte(t *testing.T, cfg splitstorage.Config, key string) func() {
	t.Helper()
	be, err := splitstorage.OpenBackend(context.Background(), cfg)
	require.NoError(t, err)
	good := getObject(t, be, key)
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0xff
	putObject(t, be, key, bad)
	return func() { putObject(t, be, key, good); be.Close() }
}

// getObject reads a whole object of the store.
func getObject(t *testing.T, be backend.Backend, key string) []byte {
	t.Helper()
	r, err := be.Get(context.Background(), key, 0, -1)
	require.NoError(t, err)
	defer r.Close()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	return b
}

// putObject writes an object to the store, with the CRC32C a store that
// checks one wants.
func putObject(t *testing.T, be backend.Backend, key string, b []byte) {
	t.Helper()
	require.NoError(t, be.Put(context.Background(), key, bytes.NewReader(b), int64(len(b)),
		backend.PutOptions{CRC32C: crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))}))
}

// TestAChainIsJudgedOnlyFromItsBases: a chain of a full and two deltas on
// S3 (versitygw behind the fault proxy). The middle backup's MANIFEST that
// the store refuses to serve (403) is no proof: vtfifo restore of the
// latest exits 3 saying its base could not be read, never that it is
// damaged, and creates nothing. The same MANIFEST damaged is proof: the
// choice of the latest passes over both backups that need it, saying why,
// and restores the full; named, the delta fails (exit 1) naming its base as
// damaged. prune --keep=1 counts neither toward the one it keeps, so the
// full stays listed; ls marks the latest, and verify of it, whole itself,
// fails naming its base (exit 1; exit 3 while the base is not served).
func TestAChainIsJudgedOnlyFromItsBases(t *testing.T) {
	f := newFixture(t)
	p, _ := faultyStore(t, f, splitstorage.BackendS3)
	ec := engineConfig()
	ec.FullInterval = time.Hour
	f.useEngine(ec)
	for i := range 3 {
		f.srv.Exec(t, fmt.Sprintf("INSERT INTO %s.t0001 SELECT id + %d, v, n FROM %s.t0001 LIMIT 1", sampleDB, 1000*(i+1), sampleDB))
		require.NoError(t, f.backup(context.Background(), nil))
	}
	names := f.list(t)
	require.Len(t, names, 3)
	full, middle, latest := names[0], names[1], names[2]
	manifestPart := splitstorage.PartKey(backupDir, middle, "MANIFEST", 1)
	target := filepath.Join(t.TempDir(), "restored")

	p.FailMatching("GET", path.Join(middle, path.Base(manifestPart)), splitstoragetest.Forbidden, 1000)
	code, stdout, stderr := runVtfifo(t, f.cfg, "restore", "--progress=never", "--quiet", "--target-dir="+target)
	assert.Equal(t, 3, code, "a base not served: exit 3\n%s%s", stdout, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "vtfifo restore: FAIL: backup "+latest+": its base "+middle+" could not be read: ")
	assert.Contains(t, stderr, "AccessDenied")
	assert.True(t, strings.HasSuffix(stderr, "; it could not be read or reached: nothing says the backup is damaged\n"), stderr)
	assert.NotContains(t, stderr, "damaged:")
	assert.NotContains(t, stderr, "skipping")
	assert.NoDirExists(t, target)
	code, stdout, stderr = runVtfifo(t, f.cfg, "ls")
	assert.Equal(t, 3, code, "a MANIFEST not served: every row listed, exit 3\n%s%s", stdout, stderr)
	assert.NotContains(t, stdout, "restores pass over", "a base not read is not damaged")
	assert.True(t, strings.HasSuffix(stderr, ": a MANIFEST or verification record could not be read, which is no verdict on the backup "+
		"(its row says why): "+middle+"\n"), stderr)
	code, stdout, stderr = runVtfifo(t, f.cfg, "verify", "--backup="+latest, "--quiet", "--progress=never")
	assert.Equal(t, 3, code, "verify of the latest, its base not served: exit 3\n%s%s", stdout, stderr)
	assert.Contains(t, stdout, "could not be read or reached, so were not checked (nothing says they are damaged):\n  backup "+latest+
		": its base "+middle+" could not be read: ")
	// Nor does prune count what it could not check: the full stays listed.
	code, stdout, stderr = runVtfifo(t, f.cfg, "prune", "--keep=1", "--dry-run", "--quiet")
	assert.Equal(t, 0, code, "%s%s", stdout, stderr)
	assert.Contains(t, stdout, "keeping "+backupDir+"/"+full+": one of the newest 1 that did not fail a test restore (--keep)\n")
	assert.Contains(t, stdout, "keeping "+backupDir+"/"+latest+": newer than the oldest of the newest 1 that did not fail a test restore (--keep); "+
		"it could not be checked (backup "+latest+": its base "+middle+" could not be read: ")
	assert.Contains(t, stdout, "nothing to remove in "+backupDir+": 3 kept\n")
	p.ClearMatching()

	restorePart := flipByte(t, f.cfg, manifestPart)
	defer restorePart()
	code, stdout, stderr = runVtfifo(t, f.cfg, "restore", "--progress=never", "--log-level=error", "--target-dir="+target)
	require.Equal(t, 0, code, "the latest whole backup restores\n%s%s", stdout, stderr)
	assert.True(t, strings.HasPrefix(stdout, "OK: backup "+backupDir+"/"+full+" restored into "+target+": "), stdout)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	require.Len(t, lines, 2, stderr)
	assert.Regexp(t, `^vtfifo restore: skipping `+regexp.QuoteMeta(backupDir+"/"+latest+": backup "+latest+": its base "+middle+" is damaged: ")+
		`.*file MANIFEST, part 1 .*checksum mismatch.*; name it with --backup to try it anyway$`, lines[0])
	assert.Regexp(t, `^vtfifo restore: skipping `+regexp.QuoteMeta(backupDir+"/"+middle+": ")+`.*file MANIFEST, part 1 .*checksum mismatch`, lines[1])
	code, stdout, stderr = runVtfifo(t, f.cfg, "ls")
	assert.Equal(t, 1, code, "a damaged MANIFEST: every row listed, exit 1\n%s%s", stdout, stderr)
	assert.Contains(t, stdout, "delta 2 on "+middle+" (damaged: restores pass over this one)", "ls says what restores pass over")
	assert.True(t, strings.HasSuffix(stderr, ": a damaged MANIFEST (restores pass over the backup; its row says why, vtfifo verify "+
		"--backup=NAME checks it whole): "+middle+"\n"), stderr)
	code, stdout, stderr = runVtfifo(t, f.cfg, "verify", "--backup="+latest, "--quiet", "--progress=never")
	assert.Equal(t, 1, code, "verify of the latest, whole itself, its base damaged: exit 1\n%s%s", stdout, stderr)
	assert.Contains(t, stdout, "1 problem(s)")
	assert.Contains(t, stdout, "  backup "+latest+": its base "+middle+" is damaged: ")
	// prune --keep=1 counts only a backup that is not broken: the full.
	code, stdout, stderr = runVtfifo(t, f.cfg, "prune", "--keep=1", "--dry-run", "--quiet")
	assert.Equal(t, 0, code, "%s%s", stdout, stderr)
	assert.Contains(t, stdout, "keeping "+backupDir+"/"+middle+": newer than the oldest of the newest 1 that did not fail a test restore (--keep); "+
		"it is broken: backup "+middle+": cannot read MANIFEST: ")
	assert.Contains(t, stdout, "nothing to remove in "+backupDir+": 3 kept\n")

	code, stdout, stderr = runVtfifo(t, f.cfg, "restore", "--progress=never", "--quiet", "--backup="+latest, "--target-dir="+target+"-named")
	assert.Equal(t, 1, code, "the delta named: exit 1\n%s%s", stdout, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "vtfifo restore: FAIL: backup "+latest+": its base "+middle+" is damaged: ")
	assert.NoDirExists(t, target+"-named")

	// A tablet's restore takes what Vitess picks, the latest (it skips only
	// the middle one, whose MANIFEST does not read): it fails before
	// touching anything, saying how to have Vitess pick an older one;
	// done, the tablet restores the full.
	logger := logutil.NewMemoryLogger()
	_, err := f.restore(context.Background(), logger)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "its base "+middle+" is damaged")
	assert.Contains(t, logger.String(), "fifo restore: "+latest+", the backup Vitess picked, cannot be restored: ")
	assert.True(t, f.mysqldRunning(), "mysqld left running")
	code, stdout, stderr = runVtfifo(t, f.cfg, "test-restore", "--backup="+latest, "--quarantine-on-failure", "--progress=never", "--quiet")
	require.Equal(t, 1, code, "%s%s", stdout, stderr)
	assert.Contains(t, stdout, "; its base "+middle+" is damaged: it is quarantined, and with it every backup that needs it, this one among them: ")
	m, err := f.restore(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, full, m.BackupName)
}
