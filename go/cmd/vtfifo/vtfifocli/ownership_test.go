package vtfifocli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/procident"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// notARoot is the refusal of a root that is not the split storage's.
func notARoot(root string) string {
	return "refused: split storage: file:" + root + " is not a split storage root: it holds objects, but neither the root identity .split-storage " +
		"nor a backup the split storage wrote (a root one level off, or another storage's): nothing in it is touched; check the storage flags " +
		"(root, bucket, prefix)\n"
}

// snapshot maps every file under root to its bytes, but those under skip.
func snapshot(t *testing.T, root string, skip ...string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, ".fleet/") {
			return nil // the split storage's marks of its own changes, and its summaries (splitstorage/fleet.go)
		}
		for _, s := range skip {
			if strings.HasPrefix(rel, s) {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		files[rel] = string(b)
		return err
	}))
	return files
}

// writeAged writes files (relative path: contents) under root, each last
// modified age ago.
func writeAged(t *testing.T, root string, age time.Duration, files map[string]string) {
	t.Helper()
	when := time.Now().Add(-age)
	for rel, body := range files {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o640))
		require.NoError(t, os.Chtimes(p, when, when))
	}
}

// age sets every file under dir to have been last written age ago.
func ageFiles(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	when := time.Now().Add(-age)
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, when, when)
	}))
}

// binlogs are a tablet's binary logs, as mysqld names them beside its data.
var binlogs = map[string]string{
	"vt-0000000101-bin.000001": "\xfebinlog events",
	"vt-0000000101-bin.index":  "./vt-0000000101-bin.000001\n",
	"vt-0000000101-bin.state":  "gtid state",
}

func under(dir string, files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[filepath.Join(dir, k)] = v
	}
	return out
}

// TestATabletsDataRootIsNotARoot: the split storage's root set one level
// too high, at a tablet's data root (its binary logs, 20 minutes old, two
// levels under it, looking like a shard's backup): every command that
// lists, judges or removes is refused, exit 3, naming the root; every file
// is still there, byte for byte.
func TestATabletsDataRootIsNotARoot(t *testing.T) {
	root := t.TempDir()
	writeAged(t, root, 20*time.Minute, under("vtdataroot/vt_0000000101/bin-logs", binlogs))
	writeAged(t, root, 20*time.Minute, map[string]string{"vtdataroot/vt_0000000101/data/ibdata1": "pages", "vtdataroot/vt_0000000101/my.cnf": "[mysqld]\n"})
	before := snapshot(t, root)
	shard := []string{"--keyspace=vtdataroot", "--shard=vt_0000000101"}
	for _, args := range [][]string{
		{"ls"},
		append([]string{"ls"}, shard...),
		append([]string{"verify", "--list-incomplete"}, shard...),
		append([]string{"verify", "--remove-incomplete"}, shard...),
		append([]string{"verify", "--remove-incomplete", "--incomplete-min-age=0"}, shard...),
		append([]string{"rm", "--backup=bin-logs", "--dry-run"}, shard...),
		append([]string{"rm", "--backup=bin-logs", "--incomplete-min-age=0"}, shard...),
		append([]string{"prune", "--keep=1"}, shard...),
		append([]string{"copy", "--backup=bin-logs", "--to=--split-storage-root=" + t.TempDir(), "--progress=never"}, shard...),
	} {
		out, errOut := runSplit(t, 3, root, args...)
		assert.Empty(t, out, "%v", args)
		assert.Equal(t, "vtfifo "+args[0]+": "+notARoot(root), errOut, "%v", args)
	}
	assert.Equal(t, before, snapshot(t, root), "nothing touched")
}

// TestSharedRootLeavesTheOtherStorageAlone: the split storage's root shared
// with Vitess's file storage (docs/migration.md allows it), which holds a
// fifo backup (MANIFEST, lanes, lanes.index), beside a tablet's binary logs
// two days old: --list-incomplete and --remove-incomplete see only the
// split storage's own killed backup, and remove only it; rm, show, lock,
// release and restore naming the others say they are not the split
// storage's backups (naming the flag that lists a Vitess storage's), exit
// 3, and leave them. With the file storage as the legacy one, both storages'
// backups are listed (and restorable: ls reads each MANIFEST), and the
// binary logs, which the file storage lists as a backup, are not removed.
func TestSharedRootLeavesTheOtherStorageAlone(t *testing.T) {
	ctx := context.Background()
	root, _ := storageCopy(t) // a fifo backup in Vitess's file storage
	const fileBackup = "2026-11-23.050519.zone1-0000004989"
	// The lane index the engine writes beside newer backups: its name ends
	// in .index, as the split storage's file indexes do.
	writeAged(t, root, 4*time.Minute, map[string]string{filepath.Join("ks", "0", fileBackup, "lanes.index"): `{"version":1}`})
	writeAged(t, root, 48*time.Hour, under("ks/0/bin-logs", binlogs))
	bs := openSplit(t, root)
	split := time.Now().UTC().Add(-time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
	plantBackup(t, bs, "ks/0", split)
	killed := time.Now().UTC().Add(-48*time.Hour).Format("2006-01-02.150405") + ".zone1-0000000100"
	_, err := bs.StartBackup(ctx, "ks/0", killed)
	require.NoError(t, err)
	ageFiles(t, filepath.Join(root, "ks", "0", killed), 48*time.Hour)
	before := snapshot(t, root, filepath.Join("ks", "0", killed))
	require.Contains(t, before, filepath.Join("ks", "0", fileBackup, "lanes.index"))

	shard := []string{"--keyspace=ks", "--shard=0"}
	out, errOut := runSplit(t, 0, root, append([]string{"verify", "--list-incomplete"}, shard...)...)
	assert.Regexp(t, `^incomplete ks/0/`+killed+`: started \S+ on \S+, last written \S+ \(48h0m\d+s ago\), 1 objects, \d+ B\n$`, out, out)
	assert.Empty(t, errOut)
	out, _ = runSplit(t, 0, root, append([]string{"verify", "--remove-incomplete"}, shard...)...)
	assert.Regexp(t, `^removed ks/0/`+killed+`: `, out)
	assert.Equal(t, 1, strings.Count(out, "\n"), out)
	assert.NoDirExists(t, filepath.Join(root, "ks", "0", killed))
	for _, name := range []string{fileBackup, "bin-logs"} {
		for _, args := range [][]string{{"rm", "--incomplete-min-age=0"}, {"show"}, {"lock", "--for=1d"}, {"release"},
			{"restore", "--target-dir=" + filepath.Join(t.TempDir(), "r")}} {
			out, errOut = runSplit(t, 3, root, append(append(args, "--backup="+name), shard...)...)
			assert.Empty(t, out, "%s %v", name, args)
			assert.Regexp(t, `^vtfifo `+args[0]+`: backup ks/0/`+name+` in \S+ \(split storage\): not a backup the split storage wrote: it holds `+
				`\d+ objects? \(.+\) and no start or completion marker of the split storage's: another tool's backup \(a Vitess storage's is `+
				`listed with --split-storage-legacy\) or put there by hand; it is left as it is: check --backup, --keyspace and --shard\n$`,
				errOut, "%s %v", name, args)
		}
	}
	assert.Equal(t, before, snapshot(t, root), "only the split storage's killed backup went")

	legacy := append([]string{"--split-storage-legacy=file", "--file-backup-storage-root=" + root}, shard...)
	out, _ = runSplit(t, 0, root, append([]string{"ls", "--json"}, legacy...)...)
	var listed []struct {
		Name, Storage string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	got := map[string]string{}
	for _, b := range listed {
		got[b.Name] = b.Storage
	}
	assert.Equal(t, "file", got[fileBackup], out)
	assert.Equal(t, "split", got[split], out)
	_, errOut = runSplit(t, 2, root, append([]string{"rm", "--backup=bin-logs"}, legacy...)...)
	assert.Contains(t, errOut, "vtfifo rm: refused: split storage: ks/0/bin-logs in the legacy file storage is left alone: it is not a backup (no MANIFEST")
	// Copying the file storage's backup into the split storage on the same
	// root would write into its directory: refused, nothing written.
	out, errOut = runSplit(t, 2, root, append([]string{"copy", "--backup=" + fileBackup, "--to=--split-storage-root=" + root, "--progress=never"},
		legacy...)...)
	assert.Contains(t, out+errOut, "ks/0/"+fileBackup+" in file:"+root+" holds 6 objects the split storage did not write (MANIFEST, ...): "+
		"another storage's backup of that name; nothing was written")
	assert.Equal(t, before, snapshot(t, root), "nothing of the other storage's touched")
}

// runCaptured runs vtfifo on the split storage at root from any goroutine.
func runCaptured(root string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	argv := append([]string{args[0], "--backup-storage-implementation=split", "--split-storage-root=" + root}, args[1:]...)
	code := Main(context.Background(), argv, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestCleanupKeepsOffARunningCopy: a copy to a disaster-recovery root
// holds its destination while it writes it, and its age there is its own
// objects' write time, not the start marker it carries from a source that
// started 22 minutes ago: a cleanup during the copy keeps it, so does rm;
// the copy completes, verified, and leaves no lease behind.
func TestCleanupKeepsOffARunningCopy(t *testing.T) {
	ctx := context.Background()
	srcRoot, names := proofStorage(t)
	name := names[0]
	started := filepath.Join(srcRoot, "ks", "0", name, ".started")
	doc, err := os.ReadFile(started)
	require.NoError(t, err)
	var sd map[string]any
	require.NoError(t, json.Unmarshal(doc, &sd))
	sd["started"] = time.Now().UTC().Add(-22 * time.Minute).Format(time.RFC3339Nano)
	doc, _ = json.Marshal(sd)
	require.NoError(t, os.WriteFile(started, doc, 0o640))

	src, dstRoot := openSplit(t, srcRoot), t.TempDir()
	dst := openSplit(t, dstRoot)
	type run struct {
		code        int
		out, errOut string
	}
	var during []run
	var once sync.Once
	_, err = src.CopyBackup(ctx, dst, "ks/0", name, splitstorage.CopyOptions{Concurrency: 1, OnObject: func(string, int64, bool) {
		once.Do(func() {
			for _, args := range [][]string{
				{"verify", "--keyspace=ks", "--shard=0", "--remove-incomplete", "--incomplete-min-age=0"},
				{"rm", "--keyspace=ks", "--shard=0", "--backup=" + name, "--incomplete-min-age=0"},
			} {
				code, out, errOut := runCaptured(dstRoot, args...)
				during = append(during, run{code, out, errOut})
			}
			// Without the lease, its age is still its own: written moments ago.
			_, err := dst.BreakLeases(ctx, "ks/0", name)
			require.NoError(t, err)
			code, out, errOut := runCaptured(dstRoot, "verify", "--keyspace=ks", "--shard=0", "--remove-incomplete", "--incomplete-min-age=10m")
			during = append(during, run{code, out, errOut})
		})
	}})
	require.NoError(t, err, "the copy completes")
	require.Len(t, during, 3)
	assert.Equal(t, 0, during[0].code, during[0].errOut)
	assert.Regexp(t, `^kept ks/0/`+name+`: started \S+ on \S+, last written \S+ \(\d+s ago\), \d+ objects, .*: in use \(copy from file:`+
		srcRoot+` by `, during[0].out)
	assert.Equal(t, 3, during[1].code)
	assert.Contains(t, during[1].errOut, "vtfifo rm: refused: backup ks/0/"+name+" is incomplete and in use: copy from file:"+srcRoot)
	assert.Contains(t, during[1].errOut, "a holder on another host that you know is gone: rm --break-leases")
	assert.Equal(t, 0, during[2].code, during[2].errOut)
	assert.Regexp(t, `^kept ks/0/`+name+`: .*: written to less than --incomplete-min-age=10m0s ago \(may still be running\)\n$`, during[2].out)

	bhs, err := dst.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 1)
	_, err = bhs[0].(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
	assert.NoError(t, err, "listed at the destination, verified")
	leases, _ := filepath.Glob(filepath.Join(dstRoot, "ks", "0", name, ".reading-*"))
	assert.Empty(t, leases, "the copy's lease is released")
}

// deadPID is the PID of a process that ran and is gone.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// plantLease writes a lease on dir/name as a holder would (host, boot, process).
func plantLease(t *testing.T, root, dir, name, holder string, fields map[string]any) {
	t.Helper()
	now := time.Now().UTC()
	doc := map[string]any{"holder": holder, "what": "vtfifo restore", "since": now.Add(-time.Hour), "until": now.Add(23 * time.Hour)}
	for k, v := range fields {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, filepath.FromSlash(dir), name, ".reading-"+holder), b, 0o640))
}

// TestLeasesDieWithTheirReader: a lease whose reader was killed on this
// host no longer blocks rm (a warning says whose lease was passed over); a
// lease of this host's previous boot neither; another container's of this
// host (another PID namespace) does; another host's lease does, until rm
// --break-leases ends it, saying whose.
func TestLeasesDieWithTheirReader(t *testing.T) {
	root, names := proofStorage(t)
	host, _ := os.Hostname()
	bootID, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	require.NoError(t, err)
	boot := strings.TrimSpace(string(bootID))
	pid := deadPID(t)
	ns := procident.PIDNamespace()
	plantLease(t, root, "ks/0", names[0], "killed-reader", map[string]any{"host": host, "boot": boot, "pid_ns": ns, "pid": pid, "proc_start": "12345"})
	plantLease(t, root, "ks/0", names[1], "before-reboot", map[string]any{"host": host, "boot": "another-boot", "pid": os.Getpid(), "proc_start": "1"})
	plantLease(t, root, "ks/0", names[2], "dr-host-4242-abcd", map[string]any{"host": "dr-host", "boot": "b", "pid": 4242, "proc_start": "7"})
	// A reader in another container of this host (docker with the host's
	// network has its host name): its PID means nothing here.
	plantLease(t, root, "ks/0", names[3], "sidecar", map[string]any{"host": host, "boot": boot, "pid_ns": "pid:[4026532000]", "pid": pid,
		"proc_start": "12345"})
	_, errOut := runSplit(t, 3, root, "rm", "--keyspace=ks", "--shard=0", "--backup="+names[3])
	assert.Contains(t, errOut, "the backup is being read: vtfifo restore by sidecar since ")

	out, errOut := runSplit(t, 0, root, "rm", "--keyspace=ks", "--shard=0", "--backup="+names[0])
	assert.Equal(t, "removed complete backup ks/0/"+names[0]+"\n", out)
	assert.Contains(t, errOut, "the lease on ks/0/"+names[0]+" of vtfifo restore by killed-reader no longer counts: its process (pid ")
	out, _ = runSplit(t, 0, root, "rm", "--keyspace=ks", "--shard=0", "--backup="+names[1])
	assert.Equal(t, "removed complete backup ks/0/"+names[1]+"\n", out)

	_, errOut = runSplit(t, 3, root, "rm", "--keyspace=ks", "--shard=0", "--backup="+names[2])
	assert.Contains(t, errOut, "vtfifo rm: refused: split storage: backup ks/0/"+names[2]+" is not removed: the backup is being read: vtfifo restore by "+
		"dr-host-4242-abcd since ")
	assert.DirExists(t, filepath.Join(root, "ks", "0", names[2]))
	out, errOut = runSplit(t, 0, root, "rm", "--keyspace=ks", "--shard=0", "--backup="+names[2], "--break-leases")
	assert.Equal(t, "removed complete backup ks/0/"+names[2]+"\n", out)
	assert.Equal(t, "vtfifo rm: ended the lease on ks/0/"+names[2]+" of dr-host-4242-abcd\n", errOut)
}

// TestATestRestoreThatCannotRunHereIsNoVerdict: a test restore that cannot
// run on this host (its server binary missing, a scratch directory it
// cannot make one in) says so, exit 3: nothing says the backup is damaged
// (on a split storage it records nothing:
// TestATestRestoreThatThisHostFailsIsNoVerdict). A --scratch-dir that is
// no directory is a usage error at startup, exit 2.
func TestATestRestoreThatCannotRunHereIsNoVerdict(t *testing.T) {
	root, args := storageCopy(t)
	const name = "2026-11-23.050519.zone1-0000004989"
	for _, dir := range []string{filepath.Join(root, "no-such-dir"), filepath.Join(root, "ks", "0", name, "MANIFEST")} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), append([]string{"test-restore", "--backup=" + name, "--progress=never", "--scratch-dir=" + dir},
			args...), &out, &errOut)
		assert.Equal(t, 2, code, "%s\nstdout: %s\nstderr: %s", dir, out.String(), errOut.String())
		assert.Empty(t, out.String())
		assert.Contains(t, errOut.String(), fmt.Sprintf("vtfifo test-restore: invalid value %q for --scratch-dir: allowed values are an absolute "+
			"directory path that exists (", dir))
	}
	readOnly := filepath.Join(root, "read-only")
	require.NoError(t, os.Mkdir(readOnly, 0o500))
	if os.Geteuid() == 0 {
		readOnly = "/proc" // root writes into a 0500 directory
	}
	// The server binary: none, one that is no server, one of another
	// flavor. The line says which, as this host's.
	for _, c := range []struct{ flag, want, why string }{
		{"--mysqld-path=/nonexistent/mariadbd", "mysqld /nonexistent/mariadbd: ", "it has no server to start the backup with"},
		{"--mysqld-path=/bin/false", "/bin/false --version: exit status 1", "its server binary does not run here as a server"},
		{"--mysqld-path=/bin/true", "but /bin/true is true (GNU coreutils)", "its server is not of the backup's flavor"},
		{"--scratch-dir=" + readOnly, "cannot create the scratch directory: ", ""},
	} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), append([]string{"test-restore", "--backup=" + name, "--progress=never", c.flag}, args...), &out, &errOut)
		assert.Equal(t, 3, code, "%s\nstdout: %s\nstderr: %s", c.flag, out.String(), errOut.String())
		assert.Contains(t, out.String(), "FAIL: test restore of ks/0/"+name+" could not run, nothing is recorded: ", c.flag)
		assert.Contains(t, out.String(), c.want, c.flag)
		assert.Contains(t, out.String(), "nothing says the backup is damaged", c.flag)
		if c.why != "" {
			assert.True(t, strings.HasSuffix(out.String(), "; this host could not finish it ("+c.why+"): nothing says the backup is damaged\n"), out.String())
		}
	}
}

// TestAnInterruptedRestoreIsNoVerdict: a restore interrupted during its
// prepare (the signal's context cancelled, as Ctrl-C does; the tool is
// killed and exits with a signal) is exit 3, saying it was interrupted,
// never 1.
func TestAnInterruptedRestoreIsNoVerdict(t *testing.T) {
	_, args := storageCopy(t)
	dir := t.TempDir()
	mark := filepath.Join(dir, "preparing")
	// A stand-in for the tool that took the backup, whose prepare waits to
	// be stopped.
	tool := standInTool(t, "touch "+mark+"; exec sleep 120")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut bytes.Buffer
	done := make(chan int)
	go func() {
		done <- Main(ctx, append([]string{"restore", "--prepare", "--progress=never", "--target-dir=" + filepath.Join(dir, "r"),
			"--fifo-backup-tool-path=" + tool}, args...), &out, &errOut)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("restore ended (exit %d) before its prepare:\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the prepare never started")
	}
	cancel()
	code := <-done
	assert.Equal(t, 3, code, "stdout: %s\nstderr: %s", out.String(), errOut.String())
	assert.Empty(t, out.String())
	assert.Regexp(t, `vtfifo restore: interrupted \(context canceled\): fifo restore of backup 2026-11-23.050519.zone1-0000004989 into \S+ failed: `+
		`xtrabackup --prepare failed: signal: killed; its last output:\n\(none\); nothing says the backup is damaged\n$`, errOut.String())
}

// TestAMissingLegacyRootIsNotEmpty: a legacy root that does not exist
// (mistyped, not mounted) fails the listing, exit 3, naming it; it never
// lists as a storage without backups.
func TestAMissingLegacyRootIsNotEmpty(t *testing.T) {
	root, _ := proofStorage(t)
	missing := filepath.Join(t.TempDir(), "not-mounted")
	out, errOut := runSplit(t, 3, root, "ls", "--keyspace=ks", "--shard=0", "--split-storage-legacy=file", "--file-backup-storage-root="+missing)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "vtfifo ls: cannot list the backups of ks/0 in "+root+" (split storage): split storage: listing the backups of the "+
		`legacy file storage (--split-storage-legacy) in ks/0: its root "`+missing+`" (--file-backup-storage-root) does not exist or is not a `+
		"directory (mistyped, or not mounted?)")
}

// TestAToolOfAnotherFlavorIsUsage: restoring a backup with a tool of
// another flavor than the one that took it is a flag the backup
// contradicts: exit 2, saying which tool to give, never FAIL.
func TestAToolOfAnotherFlavorIsUsage(t *testing.T) {
	_, args := storageCopy(t) // taken with the xtrabackup stand-in
	tool, err := exec.LookPath("mariabackup")
	require.NoError(t, err, "mariabackup (make setup installs it)")
	var out, errOut bytes.Buffer
	code := Main(context.Background(), append([]string{"restore", "--prepare", "--progress=never", "--target-dir=" + filepath.Join(t.TempDir(), "r"),
		"--fifo-backup-tool-path=" + tool}, args...), &out, &errOut)
	assert.Equal(t, 2, code, "stdout: %s\nstderr: %s", out.String(), errOut.String())
	assert.Empty(t, out.String())
	assert.Regexp(t, `^vtfifo restore: the backup was taken with `+
		`xtrabackup \(xtrabackup version 8.0.35-30 .*\) but the tool here is mariabackup \(\S*mariabackup based on MariaDB server .*\): give the `+
		`backup's tool \(--fifo-backup-tool-path\)\n$`, errOut.String())
}

// TestASplitRootReadAsFileStorageIsNotDamage: a split storage's root read
// through Vitess's file storage (the wrong --backup-storage-implementation)
// lists backups with no MANIFEST: verify says so, exit 3, never damage.
func TestASplitRootReadAsFileStorageIsNotDamage(t *testing.T) {
	root, names := proofStorage(t)
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"verify", "--backup-storage-implementation=file", "--file-backup-storage-root=" + root,
		"--keyspace=ks", "--shard=0", "--backup=" + names[0], "--progress=never"}, &out, &errOut)
	assert.Equal(t, 3, code, "stdout: %s\nstderr: %s", out.String(), errOut.String())
	assert.Contains(t, out.String(), "it has no MANIFEST: an incomplete backup, or another storage's (check --backup-storage-implementation and "+
		"the storage flags)")
	assert.NotContains(t, out.String(), "problem(s)", "nothing reported as damage")
}

// TestAnObjectPutInABackupIsNotTheBackups: an operator's note put in a good
// backup's directory is no damage of the backup (verify: OK, exit 0, the
// note named on its own line and in --json's "unlisted"), and rm removes
// the backup but not the note, saying so on stderr; what is left is no
// backup (a second rm says it is not one the split storage wrote, names
// the note and leaves it, exit 3). So too for a note whose name
// looks like the file backend's temporary files (NOTES.tmp-1): only one
// whose name proves the backend made it is hidden and removed.
func TestAnObjectPutInABackupIsNotTheBackups(t *testing.T) {
	for _, name := range []string{"NOTES.txt", "NOTES.tmp-1"} {
		t.Run(name, func(t *testing.T) {
			root := localSplitCopy(t)
			notes := filepath.Join(root, "ks", "0", "copied", name)
			require.NoError(t, os.WriteFile(notes, []byte("restored fine\n"), 0o640))
			shard := []string{"--keyspace=ks", "--shard=0", "--backup=copied"}

			out, errOut := runSplit(t, 0, root, append([]string{"verify", "--progress=never", "--quiet"}, shard...)...)
			assert.Regexp(t, `^OK: backup ks/0/copied: 4 lanes, \d+ files, .* every part and chunk checked \(\S+\)\n`+
				`  note: ks/0/copied/`+regexp.QuoteMeta(name)+` is in the backup's directory but not part of the backup \(left over, or put `+
				`there by hand\): no restore reads it\n$`, out)
			assert.Empty(t, errOut)
			out, _ = runSplit(t, 0, root, append([]string{"verify", "--progress=never", "--quiet", "--json"}, shard...)...)
			var res []VerifyResult
			require.NoError(t, json.Unmarshal([]byte(out), &res), out)
			require.Len(t, res, 1)
			assert.True(t, res[0].OK)
			assert.Equal(t, []string{"ks/0/copied/" + name}, res[0].Unlisted)

			out, errOut = runSplit(t, 0, root, append([]string{"rm"}, shard...)...)
			assert.Equal(t, "removed complete backup ks/0/copied\n", out)
			assert.Contains(t, errOut, "split storage: removed backup ks/0/copied, and left in its directory 1 object ("+name+"), which the "+
				"split storage does not write (put there by hand or by another tool): remove them by hand if nothing needs them")
			b, err := os.ReadFile(notes)
			require.NoError(t, err)
			assert.Equal(t, "restored fine\n", string(b))
			entries, err := os.ReadDir(filepath.Dir(notes))
			require.NoError(t, err)
			assert.Len(t, entries, 1, "only the note is left")

			_, errOut = runSplit(t, 3, root, append([]string{"rm"}, shard...)...)
			assert.Equal(t, "vtfifo rm: backup ks/0/copied in "+root+" (split storage): not a backup the split storage wrote: it holds 1 object ("+name+
				") and no start or completion marker of the split storage's: another tool's backup (a Vitess storage's is listed with "+
				"--split-storage-legacy) or put there by hand; it is left as it is: check --backup, --keyspace and --shard\n", errOut)
			_, err = os.Stat(notes)
			assert.NoError(t, err)
		})
	}
}

// TestNothingIsWrittenIntoTheStorageRoot: a path a command would write
// into (restore's and restore-table's --target-dir, test-restore's
// --scratch-dir, export's --output) inside the storage's local root, named directly or through
// a symbolic link, is refused at startup naming the flag, exit 2, and
// nothing is made there: restored files would sit among the backups, where
// Vitess's file storage takes a directory for a backup and RemoveBackup
// deletes it.
func TestNothingIsWrittenIntoTheStorageRoot(t *testing.T) {
	root := localSplitCopy(t)
	link := filepath.Join(t.TempDir(), "backups")
	require.NoError(t, os.Symlink(root, link))
	before := snapshot(t, root)
	shard := []string{"--keyspace=ks", "--shard=0", "--backup=copied"}
	inRoot := func(flag, dir string) string {
		return flag + " " + dir + " is inside the storage's root " + root + ": what is written there sits among the backups (Vitess's file " +
			"storage takes a directory there for a backup, and its RemoveBackup deletes it): give one outside " + root
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"restore", "--target-dir=" + filepath.Join(root, "ks", "0", "restored")}, inRoot("--target-dir", filepath.Join(root, "ks", "0", "restored"))},
		{[]string{"restore", "--target-dir=" + filepath.Join(link, "restored")}, inRoot("--target-dir", filepath.Join(link, "restored"))},
		{[]string{"restore", "--target-dir=" + root}, inRoot("--target-dir", root)},
		{[]string{"restore-table", "--table=db.t", "--target-dir=" + filepath.Join(root, "t")}, inRoot("--target-dir", filepath.Join(root, "t"))},
		{[]string{"test-restore", "--scratch-dir=" + filepath.Join(root, "ks")}, inRoot("--scratch-dir", filepath.Join(root, "ks"))},
		{[]string{"export", "-o", filepath.Join(root, "ks", "0", "copied", "x.xbstream")}, inRoot("--output",
			filepath.Join(root, "ks", "0", "copied", "x.xbstream"))},
	} {
		out, errOut := runSplit(t, 2, root, append(c.args, shard...)...)
		assert.Empty(t, out, "%v", c.args)
		assert.Equal(t, "vtfifo "+c.args[0]+": "+c.want+"\n", errOut, "%v", c.args)
	}
	// Vitess's file storage's root too.
	var stdout, stderr bytes.Buffer
	target := filepath.Join(root, "elsewhere")
	code := Main(context.Background(), append([]string{"restore", "--backup-storage-implementation=file", "--file-backup-storage-root=" + root,
		"--target-dir=" + target}, shard...), &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Equal(t, "vtfifo restore: "+inRoot("--target-dir", target)+"\n", stderr.String())
	assert.Equal(t, before, snapshot(t, root), "nothing made in the root")
	// Beside the root is not in it.
	runSplit(t, 0, root, append([]string{"restore", "--target-dir=" + root + "-restored", "--progress=never", "--quiet"}, shard...)...)
}
