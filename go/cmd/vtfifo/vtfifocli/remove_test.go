package vtfifocli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

func run(t *testing.T, wantCode int, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, &stdout, &stderr)
	require.Equal(t, wantCode, code, "vtfifo %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String() + stderr.String()
}

// TestVitessFileStorageRemovalProvesItsFiles: Vitess's file storage
// removes a backup's whole directory, so rm and prune through it remove a
// backup only when its directory holds nothing but the files its MANIFEST
// names. A note put there, a backup with no MANIFEST or one of an engine
// whose files it does not know, is refused (exit 2), with --dry-run too, and
// nothing is removed; prune keeps it, saying
// why; with the note moved out the removal goes through.
func TestVitessFileStorageRemovalProvesItsFiles(t *testing.T) {
	root, args := storageCopy(t)
	src := filepath.Join(root, "ks", "0", "2026-11-23.050519.zone1-0000004989")
	now := time.Now().UTC()
	var names []string
	for _, age := range []time.Duration{72 * time.Hour, 48 * time.Hour, time.Hour} {
		name := now.Add(-age).Format("2006-01-02.150405") + ".zone1-0000000100"
		require.NoError(t, os.CopyFS(filepath.Join(root, "ks", "0", name), os.DirFS(src)))
		names = append(names, name)
	}
	require.NoError(t, os.RemoveAll(src))
	dirOf := func(name string) string { return filepath.Join(root, "ks", "0", name) }
	note := filepath.Join(dirOf(names[0]), "NOTES.txt")
	require.NoError(t, os.WriteFile(note, []byte("restored to staging on 11-20\n"), 0o640))
	require.NoError(t, os.Remove(filepath.Join(dirOf(names[1]), "MANIFEST")))
	runFile := func(code int, more ...string) (string, string) { return runArgs(t, code, append(more, args...)...) }

	refusal := "in Vitess's file storage (" + dirOf(names[0]) + ") holds what its MANIFEST does not name (1: NOTES.txt): move it out, then " +
		"remove the backup again; that storage removes a backup's whole directory, so nothing was removed\n"
	_, errOut := runFile(2, "rm", "--backup="+names[0], "--dry-run")
	assert.Equal(t, "vtfifo rm: would be refused: backup ks/0/"+names[0]+" "+refusal, errOut)
	_, errOut = runFile(2, "rm", "--backup="+names[0])
	assert.Equal(t, "vtfifo rm: refused: backup ks/0/"+names[0]+" "+refusal, errOut)
	assert.FileExists(t, note)
	assert.FileExists(t, filepath.Join(dirOf(names[0]), "MANIFEST"))
	_, errOut = runFile(2, "rm", "--backup="+names[1])
	assert.Contains(t, errOut, "has no MANIFEST to name its files (a backup that never finished?): remove it by hand once you know what it holds")
	assert.DirExists(t, dirOf(names[1]))
	other := filepath.Join(dirOf(names[2]), "MANIFEST")
	original, err := os.ReadFile(other)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(other, []byte(`{"BackupMethod":"mysqlshell","BackupName":"`+names[2]+`"}`), 0o640))
	_, errOut = runFile(2, "rm", "--backup="+names[2])
	assert.Contains(t, errOut, `has a MANIFEST that does not name its files (its engine "mysqlshell" keeps files this tool does not know (fifo, `+
		"xtrabackup and builtin only)): remove it by hand once you know what it holds; that storage removes a backup's whole directory, so nothing "+
		"was removed\n")
	assert.DirExists(t, dirOf(names[2]))
	require.NoError(t, os.WriteFile(other, original, 0o640))

	out, _ := runFile(2, "prune", "--keep=1", "--keep-within=0s")
	assert.Contains(t, out, "keeping ks/0/"+names[0]+": backup ks/0/"+names[0]+" "+strings.TrimSuffix(refusal, "\n"))
	assert.FileExists(t, note)

	require.NoError(t, os.Rename(note, filepath.Join(t.TempDir(), "NOTES.txt")))
	out, _ = runFile(0, "rm", "--backup="+names[0])
	assert.Equal(t, "removed complete backup ks/0/"+names[0]+"\n", out)
	assert.NoDirExists(t, dirOf(names[0]))
}

// TestRemoveAndPrune: rm removes the backup it names and nothing else, and
// refuses to guess; prune needs --keep (its default 0 is not a value a
// user gave: it is said to be missing, not invalid), keeps the newest --keep and those younger than
// --keep-within; --dry-run removes nothing.
func TestRemoveAndPrune(t *testing.T) {
	root, args := storageCopy(t)
	src := filepath.Join(root, "ks", "0", "2026-11-23.050519.zone1-0000004989")
	now := time.Now().UTC()
	var names []string
	for _, age := range []time.Duration{96 * time.Hour, 72 * time.Hour, 48 * time.Hour, time.Hour} {
		name := now.Add(-age).Format("2006-01-02.150405") + ".zone1-0000000100"
		require.NoError(t, os.CopyFS(filepath.Join(root, "ks", "0", name), os.DirFS(src)))
		names = append(names, name)
	}
	require.NoError(t, os.RemoveAll(src))
	cmd := func(wantCode int, sub string, extra ...string) string {
		return run(t, wantCode, append(append([]string{sub}, args...), extra...)...)
	}
	listed := func() string { return cmd(0, "ls") }

	assert.Contains(t, cmd(2, "rm"), "--backup is required")
	assert.Contains(t, cmd(3, "rm", "--backup=2020-01-01.000000.zone1-0000000100"), "no such backup")
	assert.Equal(t, "would remove complete backup ks/0/"+names[1]+"\n", cmd(0, "rm", "--backup="+names[1], "--dry-run"))
	assert.Contains(t, listed(), names[1], "--dry-run removes nothing")
	assert.JSONEq(t, `{"backup": "ks/0/`+names[1]+`", "kind": "complete backup", "action": "would remove"}`,
		cmd(0, "rm", "--backup="+names[1], "--dry-run", "--json"))
	assert.Contains(t, cmd(0, "rm", "--backup="+names[1]), "removed complete backup ks/0/"+names[1])
	assert.NotContains(t, listed(), names[1])

	assert.Contains(t, cmd(2, "prune", "--keep=0"), "invalid value \"0\" for --keep")
	assert.Equal(t, "vtfifo prune: --keep is required: how many of the newest complete backups are always kept (1 or more; the newest backup is "+
		"never pruned)\n", cmd(2, "prune"))
	assert.Contains(t, cmd(2, "prune", "--keep=1", "--keep-within=-1h"), "--keep-within")
	assert.Contains(t, cmd(2, "prune", "--keep=1", "--backup="+names[0]), "--backup is not for prune")
	assert.Contains(t, cmd(2, "ls", "--backup="+names[0]), "--backup is not for ls: it lists every backup (vtfifo show describes one)")
	for _, sub := range []string{"ls", "prune"} {
		assert.NotContains(t, run(t, 0, sub, "--help"), "--backup ", "%s's help lists only the flags it uses", sub)
	}
	out := cmd(0, "prune", "--keep=1", "--keep-within=60h", "--dry-run")
	assert.Contains(t, out, "would remove ks/0/"+names[0])
	assert.Contains(t, out, "keeping ks/0/"+names[2]+": younger than --keep-within=2d12h\n")
	assert.NotContains(t, out, "would remove ks/0/"+names[2])
	for _, n := range []string{names[0], names[2], names[3]} {
		assert.Contains(t, listed(), n, "--dry-run removes nothing")
	}
	out = cmd(0, "prune", "--keep=1", "--keep-within=24h")
	assert.Contains(t, out, "removed ks/0/"+names[0])
	assert.Contains(t, out, "removed ks/0/"+names[2])
	l := listed()
	assert.NotContains(t, l, names[0])
	assert.NotContains(t, l, names[2])
	assert.Contains(t, l, names[3], "the newest is kept")
	assert.Contains(t, cmd(0, "prune", "--keep=1"), "", "nothing left to prune")
	assert.Contains(t, listed(), names[3])
	assert.Contains(t, cmd(2, "release", "--backup="+names[3]), "the file storage cannot release a quarantined backup: that needs the split storage")
}

// TestRemoveRefusesARunningBackup: on the split storage an incomplete backup
// last written to less than --incomplete-min-age ago may still be running:
// refused (exit 3: nothing is wrong with it);
// once older it is removed; a quarantined one is removed or released.
func TestRemoveRefusesARunningBackup(t *testing.T) {
	ctx := context.Background()
	srv := splitstoragetest.Local(t)
	s, err := splitstorage.New(srv.Config)
	require.NoError(t, err)
	// Started and never ended: a running (or killed) backup.
	_, err = s.StartBackup(ctx, "ks/0", "2026-11-23.100000.zone1-0000000100")
	require.NoError(t, err)
	for _, name := range []string{"2026-11-23.110000.zone1-0000000100", "2026-11-23.120000.zone1-0000000100"} {
		bh, err := s.StartBackup(ctx, "ks/0", name)
		require.NoError(t, err)
		require.NoError(t, bh.EndBackup(ctx))
	}
	args := append(srv.Flags(), "--backup-storage-implementation=split", "--keyspace=ks", "--shard=0")
	cmd := func(wantCode int, sub string, extra ...string) string {
		return run(t, wantCode, append(append([]string{sub}, args...), extra...)...)
	}
	// Named where a complete backup is wanted: never completed, which says
	// nothing of damage (exit 3, not 1).
	out := cmd(3, "show", "--backup=2026-11-23.100000.zone1-0000000100")
	assert.Contains(t, out, "vtfifo show: backup ks/0/2026-11-23.100000.zone1-0000000100 in "+srv.Config.File.Root+" (split storage): incomplete: started ")
	assert.Contains(t, out, "never completed (a failed or killed backup, or one still running: nothing says it is damaged); restore never picks it")
	assert.NotContains(t, out, "FAIL")
	assert.Contains(t, cmd(3, "rm", "--backup=2026-11-23.100000.zone1-0000000100"), "is incomplete, started on ")
	assert.Contains(t, cmd(3, "rm", "--backup=2026-11-23.100000.zone1-0000000100"), "it may still be running (--incomplete-min-age=24h0m0s)")
	assert.Contains(t, cmd(0, "rm", "--backup=2026-11-23.100000.zone1-0000000100", "--incomplete-min-age=0s"), "removed incomplete backup")

	bhs, err := s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 2)
	require.NoError(t, bhs[1].(*splitstorage.Handle).Quarantine(ctx, "test restore failed"))
	assert.Contains(t, cmd(1, "show", "--backup=2026-11-23.120000.zone1-0000000100"), "quarantined: test restore failed")
	assert.Contains(t, cmd(2, "release", "--backup=2026-11-23.110000.zone1-0000000100"), "is not quarantined: restores may choose it already")
	assert.Contains(t, cmd(3, "release", "--backup=2026-11-23.090000.zone1-0000000100"), "2026-11-23.090000.zone1-0000000100 in "+srv.Config.File.Root+
		" (split storage): no such backup")
	assert.Contains(t, cmd(0, "release", "--backup=2026-11-23.120000.zone1-0000000100"), "released ks/0/2026-11-23.120000")
	// Released with its failed test record: it says what still passes it over.
	require.NoError(t, testrestore.Store(ctx, bhs[1], testrestore.Record{Version: 1, Backup: "ks/0/" + bhs[1].Name(), Outcome: testrestore.Failed,
		Started: time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC), Error: "CHECK TABLE failed"}))
	require.NoError(t, bhs[1].(*splitstorage.Handle).Quarantine(ctx, "test restore failed"))
	out = cmd(0, "release", "--backup=2026-11-23.120000.zone1-0000000100")
	assert.Contains(t, out, "but its test restore of 2026-11-23 13:00 failed, so vtfifo's commands that pick the newest backup")
	assert.Contains(t, out, "run vtfifo test-restore --backup=2026-11-23.120000.zone1-0000000100")
	// (These backups hold nothing: the restore it goes on to fails.)
	assert.Contains(t, cmd(1, "restore", "--target-dir="+t.TempDir()+"/r"), "skipping ks/0/2026-11-23.120000.zone1-0000000100: its test restore")
	require.NoError(t, bhs[1].(*splitstorage.Handle).Quarantine(ctx, "test restore failed"))
	assert.JSONEq(t, `{"backup": "ks/0/2026-11-23.120000.zone1-0000000100", "kind": "quarantined backup", "action": "removed"}`,
		cmd(0, "rm", "--backup=2026-11-23.120000.zone1-0000000100", "--json"))
	bhs, err = s.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	require.Len(t, bhs, 1)
	inc, err := s.ListIncomplete(ctx, "ks/0")
	require.NoError(t, err)
	assert.Empty(t, inc)
}

// TestCopyVerifiesAtTheDestination: `vtfifo copy` copies a backup to a second split storage named
// by a flag file (its split-storage lines) and --to; the copy verifies,
// the destination refuses it a second time, and one that signs refuses it
// unsealed before anything is copied (exit 2); --remove-source moves.
func TestCopyVerifiesAtTheDestination(t *testing.T) {
	ctx := context.Background()
	srcSrv, dstSrv := splitstoragetest.Local(t), splitstoragetest.Local(t)
	s, err := splitstorage.New(srcSrv.Config)
	require.NoError(t, err)
	for _, name := range []string{"2026-11-23.110000.zone1-0000000100", "2026-11-23.120000.zone1-0000000100"} {
		bh, err := s.StartBackup(ctx, "ks/0", name)
		require.NoError(t, err)
		w, err := bh.AddFile(ctx, "MANIFEST", -1)
		require.NoError(t, err)
		_, err = w.Write([]byte(strings.Repeat(name, 1000)))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		require.NoError(t, bh.EndBackup(ctx))
	}
	toFile := filepath.Join(t.TempDir(), "dr.flags")
	require.NoError(t, os.WriteFile(toFile, []byte("--port=1\n--split-storage-backend=file\n--split-storage-root=/nonexistent\n"), 0o600))
	args := append(srcSrv.Flags(), "--backup-storage-implementation=split", "--keyspace=ks", "--shard=0", "--progress=never")
	cmd := func(wantCode int, extra ...string) string {
		return run(t, wantCode, append(append([]string{"copy"}, args...), extra...)...)
	}
	assert.Contains(t, cmd(2), "--to-flags-file or --to is required")
	assert.Contains(t, cmd(2, "--to=--port=1"), "invalid value \"--port=1\" for --to")
	assert.Contains(t, cmd(2, "--to-flags-file="+toFile, "--to=--split-storage-part-size=1"), "--split-storage-part-size")
	to := []string{"--to-flags-file=" + toFile, "--to=--split-storage-root=" + dstSrv.Dir}
	// A destination that signs refuses an unsealed backup before anything is copied.
	signing := "--to=--split-storage-signing-key-file=" + splitstoragetest.KeyFile(t, "dr-sign")
	assert.Contains(t, cmd(2, append(to, signing)...), "it carries no seal, and the destination file:"+dstSrv.Dir+" has a signing key "+
		"(--split-storage-signing-key-file) and does not accept unsealed backups: every reader there would refuse it, so nothing was copied")
	entries, err := os.ReadDir(dstSrv.Dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written at the destination")
	assert.Contains(t, cmd(0, to...), "OK: backup ks/0/2026-11-23.120000.zone1-0000000100 copied")
	assert.Contains(t, cmd(2, to...), "already holds it complete, so nothing was copied")
	out := cmd(0, append(to, "--backup=2026-11-23.110000.zone1-0000000100", "--remove-source")...)
	assert.Contains(t, out, "removed the source")

	d, err := splitstorage.New(dstSrv.Config)
	require.NoError(t, err)
	for _, st := range []*splitstorage.Storage{s, d} {
		bhs, err := st.ListBackups(ctx, "ks/0")
		require.NoError(t, err)
		var names []string
		for _, bh := range bhs {
			names = append(names, bh.Name())
		}
		if st == s {
			assert.Equal(t, []string{"2026-11-23.120000.zone1-0000000100"}, names, "moved away from the source")
		} else {
			assert.Equal(t, []string{"2026-11-23.110000.zone1-0000000100", "2026-11-23.120000.zone1-0000000100"}, names)
		}
	}
	bhs, err := d.ListBackups(ctx, "ks/0")
	require.NoError(t, err)
	for _, bh := range bhs {
		_, err := bh.(*splitstorage.Handle).VerifyParts(ctx, splitstorage.VerifyPartsOptions{})
		require.NoError(t, err, "the copy %s verifies", bh.Name())
	}
}

// TestARetiredBaseNamedIsNoDamage: a full backup removed while a delta
// depends on it is kept as its base (retired); named with --backup where a
// complete backup is wanted, it is a request the data refuses (exit 2),
// naming the delta, not a damaged backup (exit 1).
func TestARetiredBaseNamedIsNoDamage(t *testing.T) {
	ctx := context.Background()
	srv, s, full, delta := fullAndDelta(t)
	require.NoError(t, s.RemoveBackup(ctx, "ks/0", full))

	out := run(t, 2, append([]string{"show", "--backup=" + full, "--backup-storage-implementation=split", "--keyspace=ks", "--shard=0"},
		srv.Flags()...)...)
	assert.Contains(t, out, "vtfifo show: backup ks/0/"+full+" in "+srv.Config.File.Root+" (split storage): removed from the list, kept as the base of "+
		delta+"; restore never picks it, restoring those reads it")
	assert.NotContains(t, out, "FAIL")
}

// TestADryRunOfABaseSaysWhatItWouldDo: rm and prune --dry-run of a full
// backup a delta depends on say it would leave the list (its objects kept
// as the delta's base), never that it was removed, and remove nothing; the
// same rm without --dry-run says it was.
func TestADryRunOfABaseSaysWhatItWouldDo(t *testing.T) {
	ctx := context.Background()
	srv, s, full, delta := fullAndDelta(t)
	args := append([]string{"--backup-storage-implementation=split", "--keyspace=ks", "--shard=0"}, srv.Flags()...)
	fromList := "from the list (its objects stay as the base of " + delta + ", and go with the last of them): "
	listed := func() []string {
		bhs, err := s.ListBackups(ctx, "ks/0")
		require.NoError(t, err)
		var names []string
		for _, bh := range bhs {
			names = append(names, bh.Name())
		}
		return names
	}

	out, errOut := runArgs(t, 0, append([]string{"rm", "--backup=" + full, "--dry-run"}, args...)...)
	assert.Equal(t, "would remove "+fromList+"complete backup ks/0/"+full+"\n", out)
	assert.Empty(t, errOut)
	out, _ = runArgs(t, 0, append([]string{"prune", "--keep=1", "--dry-run"}, args...)...)
	assert.Contains(t, out, "would remove "+fromList+"ks/0/"+full+"\n")
	assert.NotContains(t, out, "removed")
	assert.Equal(t, []string{full, delta}, listed(), "a dry run removes nothing")

	out, _ = runArgs(t, 0, append([]string{"rm", "--backup=" + full}, args...)...)
	assert.Equal(t, "removed "+fromList+"complete backup ks/0/"+full+"\n", out)
	assert.Equal(t, []string{delta}, listed())
}

// fullAndDelta is a local split storage holding a full backup and a delta
// on it, both complete (empty).
func fullAndDelta(t *testing.T) (srv *splitstoragetest.Server, s *splitstorage.Storage, full, delta string) {
	ctx := context.Background()
	srv = splitstoragetest.Local(t)
	s, err := splitstorage.New(srv.Config)
	require.NoError(t, err)
	full, delta = "2026-11-23.100000.zone1-0000000100", "2026-11-23.110000.zone1-0000000100"
	splitstoragetest.Plant(t, s, "ks/0", full, "{}")
	bh, err := s.StartBackup(ctx, "ks/0", delta)
	require.NoError(t, err)
	require.NoError(t, bh.(*splitstorage.Handle).SetBase(ctx, full))
	w, err := bh.AddFile(ctx, "MANIFEST", 2)
	require.NoError(t, err)
	_, err = w.Write([]byte("{}"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, bh.EndBackup(ctx))
	return srv, s, full, delta
}

// TestPruneSaysWhyAnUndatedBackupIsKept: retention dates a backup by its
// name, as vtbackup does; one whose name carries no time (put there by
// hand) stops it. prune keeps it and every newer one, saying so, where it
// said "younger than --keep-within=0s".
func TestPruneSaysWhyAnUndatedBackupIsKept(t *testing.T) {
	root, args := storageCopy(t)
	src := filepath.Join(root, "ks", "0", "2026-11-23.050519.zone1-0000004989")
	now := time.Now().UTC()
	dated := func(age time.Duration) string { return now.Add(-age).Format("2006-01-02.150405") + ".zone1-0000000100" }
	oldest := dated(96 * time.Hour)
	undated := oldest[:len("2006-01-02.15040")] + "x" // after the oldest, before the others
	names := []string{oldest, undated, dated(48 * time.Hour), dated(time.Hour)}
	for _, name := range names {
		require.NoError(t, os.CopyFS(filepath.Join(root, "ks", "0", name), os.DirFS(src)))
	}
	require.NoError(t, os.RemoveAll(src))
	out := run(t, 0, append([]string{"prune", "--keep=1", "--dry-run"}, args...)...)
	assert.Equal(t, "keeping ks/0/"+undated+": its name carries no time (Vitess names a backup <date>.<time>.<tablet alias>): its age is not known\n"+
		"keeping ks/0/"+names[2]+": newer than "+undated+", whose age is not known\n"+
		"keeping ks/0/"+names[3]+": one of the newest 1 that did not fail a test restore (--keep)\n"+
		"would remove ks/0/"+oldest+"\n", out)
}

// TestRemovingABackupKeepsALinkedShard: a shard's directory moved to
// another disk and linked in place. Removing one of its backups (rm, then
// prune) leaves the link and the other backups: before, the removal's
// clean-up of empty directories removed the link, and ls found no backup
// in the shard ("no backup in ks/0"), the good one gone from the storage.
// A backup's directory linked to another's is refused.
func TestRemovingABackupKeepsALinkedShard(t *testing.T) {
	now := time.Now().UTC()
	dated := func(age time.Duration) string { return now.Add(-age).Format("2006-01-02.150405") + ".zone1-0000000100" }
	names := []string{dated(72 * time.Hour), dated(48 * time.Hour), dated(time.Hour)}
	root := localSplitWith(t, names...)
	shard, elsewhere := filepath.Join(root, "ks", "0"), filepath.Join(t.TempDir(), "0")
	require.NoError(t, os.Rename(shard, elsewhere))
	require.NoError(t, os.Symlink(elsewhere, shard))
	args := []string{"--keyspace=ks", "--shard=0"}

	out, _ := runSplit(t, 0, root, append([]string{"rm", "--backup=" + names[1]}, args...)...)
	assert.Equal(t, "removed complete backup ks/0/"+names[1]+"\n", out)
	out, _ = runSplit(t, 0, root, append([]string{"prune", "--keep=1"}, args...)...)
	assert.Equal(t, "keeping ks/0/"+names[2]+": one of the newest 1 that did not fail a test restore (--keep)\nremoved ks/0/"+names[0]+"\n", out)
	out, _ = runSplit(t, 0, root, append([]string{"ls"}, args...)...)
	assert.Regexp(t, `(?m)^`+names[2]+`\s+fifo\s+split\s+full\s`, out)
	fi, err := os.Lstat(shard)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type())
	runSplit(t, 0, root, append([]string{"verify", "--backup=" + names[2]}, args...)...)

	// A backup's directory linked to another's is an alias: rm of it is
	// refused, and the backup it leads to stays whole (before, rm took its
	// completion marker: the good backup left the list).
	alias := dated(0)
	require.NoError(t, os.Symlink(names[2], filepath.Join(elsewhere, alias)))
	out, errOut := runSplit(t, 2, root, append([]string{"rm", "--backup=" + alias}, args...)...)
	assert.Empty(t, out)
	assert.Equal(t, "vtfifo rm: refused: split storage: removing backup ks/0/"+alias+": ks/0/"+alias+"/.complete is ks/0/"+names[2]+
		"/.complete of this storage, through a symbolic link: deleting it would delete that object, which is not this one; the link is "+
		"the operator's to remove\n", errOut)
	runSplit(t, 0, root, append([]string{"verify", "--backup=" + names[2]}, args...)...)
}
