package vtfifocli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/internal/procident"
	"github.com/vtfifo/vtfifo/go/testutil/mariadbtest"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/xbstream"
)

// A backup the engine took (four zstd lanes from Percona-style FIFO streams,
// in Vitess's file storage), kept as test data by the engine's package.
const backupData = "../../../vt/mysqlctl/fifobackupengine/testdata/backup-3baf113-fifo"

func storageCopy(t *testing.T) (root string, args []string) {
	root = t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(backupData)))
	return root, []string{"--backup-storage-implementation=file", "--file-backup-storage-root=" + root, "--keyspace=ks", "--shard=0"}
}

// extractLanes decompresses the test backup's four zstd lanes (in the
// file storage under root) and extracts them together into a new directory.
func extractLanes(t *testing.T, root string) (string, xbstream.ExtractStats) {
	dir := filepath.Join(root, "ks", "0", "2026-11-23.050519.zone1-0000004989")
	var lanes []io.Reader
	for i := range 4 {
		z, err := os.Open(filepath.Join(dir, "lane-00"+string(rune('0'+i))+".xbstream.zst"))
		require.NoError(t, err)
		defer z.Close()
		d, err := zstd.NewReader(z)
		require.NoError(t, err)
		defer d.Close()
		lanes = append(lanes, d)
	}
	out := filepath.Join(t.TempDir(), "lanes")
	st, err := xbstream.Extract(context.Background(), out, xbstream.ReaderLanes(lanes...), xbstream.ExtractOptions{})
	require.NoError(t, err)
	return out, st
}

// TestExportExtractsToTheLanesTree: `vtfifo export -o FILE` writes one
// stream that extracts to the tree the backup's lanes extract to; it never
// writes over an existing file; `vtfifo verify` says OK on the same backup.
func TestExportExtractsToTheLanesTree(t *testing.T) {
	root, args := storageCopy(t)
	out := filepath.Join(t.TempDir(), "backup.xbstream")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"export", "-o", out}, args...), &stdout, &stderr)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	assert.Contains(t, stderr.String(), "wrote ")
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the file, and no partial one")
	fi, err := entries[0].Info()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())

	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	exported := filepath.Join(t.TempDir(), "exported")
	_, err = xbstream.Extract(context.Background(), exported, xbstream.ReaderLanes(f), xbstream.ExtractOptions{})
	require.NoError(t, err)

	// The lanes themselves, decompressed and extracted together.
	fromLanes, st := extractLanes(t, root)
	assert.Greater(t, st.Files, 200)
	assert.Equal(t, tree(t, fromLanes), tree(t, exported))

	stdout.Reset()
	stderr.Reset()
	assert.Equal(t, 2, Main(context.Background(), append([]string{"export", "-o", out}, args...), &stdout, &stderr), "over an existing file")
	assert.Equal(t, "vtfifo export: "+out+" is a file already: export never writes over one; give the name of a new file\n", stderr.String())
	stderr.Reset()
	assert.Equal(t, 2, Main(context.Background(), append([]string{"export", "-o", filepath.Dir(out)}, args...), &stdout, &stderr), "a directory")
	assert.Equal(t, "vtfifo export: "+filepath.Dir(out)+" is a directory already: export never writes over one; give the name of a new file\n",
		stderr.String())
	// A directory that is not there (or a file in its place): a usage
	// error naming the flag, nothing written.
	for _, dir := range []string{filepath.Join(filepath.Dir(out), "missing"), out} {
		stdout.Reset()
		stderr.Reset()
		to := filepath.Join(dir, "x.xb")
		assert.Equal(t, 2, Main(context.Background(), append([]string{"export", "-o", to}, args...), &stdout, &stderr), dir)
		assert.Equal(t, "vtfifo export: --output "+to+": "+dir+" is not a directory that exists: create it, or give another\n", stderr.String())
		assert.Empty(t, stdout.String())
	}

	stdout.Reset()
	code = Main(context.Background(), append([]string{"verify", "--progress=never"}, args...), &stdout, &stderr)
	assert.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	assert.Contains(t, stdout.String(), "OK")
}

// A damaged lane: export fails (exit 1) naming the lane, and leaves no file.
func TestExportOfADamagedBackupFails(t *testing.T) {
	root, args := storageCopy(t)
	lane := filepath.Join(root, "ks", "0", "2026-11-23.050519.zone1-0000004989", "lane-001.xbstream.zst")
	data, err := os.ReadFile(lane)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(lane, data[:len(data)/2], 0o640))
	out := filepath.Join(t.TempDir(), "backup.xbstream")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"export", "-o", out}, args...), &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "lane 1")
	assert.NoFileExists(t, out)
	partial, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".backup.xbstream.partial-*"))
	assert.Empty(t, partial, "nor its partial file")
}

// `vtfifo ls` shows what the MANIFEST says, as a table and as JSON.
func TestListShowsEachManifest(t *testing.T) {
	_, args := storageCopy(t)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, Main(context.Background(), append([]string{"ls"}, args...), &stdout, &stderr), stderr.String())
	assert.Regexp(t, `(?m)^2026-11-23\.050519\.zone1-0000004989\s+fifo\s+file\s+full\s+\S+\s+4\s`, stdout.String())

	stdout.Reset()
	require.Equal(t, 0, Main(context.Background(), append([]string{"ls", "--json"}, args...), &stdout, &stderr), stderr.String())
	var infos []BackupInfo
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &infos))
	require.Len(t, infos, 1)
	b := infos[0]
	assert.Equal(t, "fifo", b.Engine)
	assert.Equal(t, 4, b.Lanes)
	assert.Equal(t, "zstd", b.Compression)
	assert.Greater(t, b.RawBytes, b.StoredBytes)
	assert.NotEmpty(t, b.Position)
	assert.Empty(t, b.Problem)
}

// Usage errors exit 2 on stderr; help, asked for, is the command's output:
// stdout, exit 0, nothing on stderr.
func TestUsageErrorsAndHelpGoWhereTheyBelong(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", "--keyspace=ks"}, 2, "--keyspace and --shard"},
		{[]string{"nosuch"}, 2, "unknown command"},
		{[]string{"export", "extra-arg", "--keyspace=ks", "--shard=0"}, 2, "unexpected arguments"},
		// A plain flag's bad value is named with the values its type takes.
		{[]string{"ls", "--json=maybe"}, 2, `vtfifo ls: invalid argument "maybe" for "--json" flag: strconv.ParseBool: parsing "maybe": invalid ` +
			"syntax: allowed values are true or false (see vtfifo ls --help)\n"},
		{[]string{"verify", "--timeout=soon"}, 2, "allowed values are a duration such as 90s, 15m or 2h (see vtfifo verify --help)\n"},
		{[]string{"ls", "--keyspace=commerce/x", "--shard=0"}, 2, `vtfifo ls: invalid value "commerce/x" for --keyspace: allowed values are a ` +
			"keyspace name as Vitess spells it: one name, without '/' (--backup-dir takes a path)\n"},
		{[]string{"ls", "--keyspace=commerce", "--shard=-80/x"}, 2, `invalid value "-80/x" for --shard`},
		// An unset variable (--backup="$B") names no backup: never the latest.
		{[]string{"restore", "--keyspace=ks", "--shard=0", "--backup=", "--target-dir=" + filepath.Join(t.TempDir(), "r")}, 2,
			"vtfifo restore: --backup is empty: name a backup as ls lists it (a command that takes the latest complete backup does so with " +
				"--backup left out)\n"},
		{[]string{"restore-table", "--keyspace=ks", "--shard=0", "--backup=", "--table=d.t", "--target-dir=" + filepath.Join(t.TempDir(), "r")}, 2,
			"--backup is empty"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, c.code, Main(context.Background(), c.args, &stdout, &stderr), "%v: %s", c.args, stderr.String())
		assert.Contains(t, stderr.String(), c.want, "%v", c.args)
		assert.Empty(t, stdout.String(), "%v", c.args)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "Available Commands:"},
		{[]string{"help", "ls"}, "vtfifo ls"},
		{[]string{"export", "--help"}, "--output"},
		{[]string{"verify", "--help"}, "--sample"},
		{[]string{"ls", "--help"}, "--json"},
		{[]string{"ls", "--help-all"}, "--split-storage-backend"},
		{[]string{"selftest", "--help"}, "--work-dir"},
		{[]string{"keygen", "--help"}, "--id"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 0, Main(context.Background(), c.args, &stdout, &stderr), "%v: %s", c.args, stderr.String())
		assert.Contains(t, stdout.String(), c.want, "%v", c.args)
		assert.Empty(t, stderr.String(), "%v", c.args)
	}
}

// TestVersionAndLogLevel: --version prints the plugin's, Vitess's and Go's
// versions on stdout; --log-level takes info, warning or error (--quiet is
// error) and refuses anything else, naming the allowed values.
func TestVersionAndLogLevel(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, Main(context.Background(), []string{"--version"}, &stdout, &stderr))
	assert.Regexp(t, `^vtfifo \S+.*, Vitess v0\.24\.\d+, go1\.\d+`, stdout.String())
	assert.Empty(t, stderr.String())

	_, args := storageCopy(t)
	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 2, Main(context.Background(), append([]string{"verify", "--log-level=debug"}, args...), &stdout, &stderr))
	assert.Equal(t, "vtfifo verify: invalid value \"debug\" for --log-level: allowed values are info, warning, error\n", stderr.String())
	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, Main(context.Background(), append([]string{"verify", "--quiet", "--progress=never"}, args...), &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "OK: backup ks/0/")
	assert.Empty(t, stderr.String(), "--quiet prints no notes")
	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, Main(context.Background(), append([]string{"verify", "--progress=never"}, args...), &stdout, &stderr), stderr.String())
	assert.Contains(t, stderr.String(), "vtfifo verify: checking backup ks/0/")
}

// tree maps path -> content of the regular files under dir.
func tree(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	}))
	return out
}

// TestShowPrintsManifestLanesAndFiles: `vtfifo show` prints the MANIFEST's facts and the lanes; with
// --files, the data directory's files as extracting the lanes would write
// them; --json says the same in one object; an unknown backup exits 1.
func TestShowPrintsManifestLanesAndFiles(t *testing.T) {
	root, args := storageCopy(t)
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"show", "--files"}, args...), &stdout, &stderr)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	out := stdout.String()
	for _, want := range []string{"Backup:", "ks/0/2026-11-23.050519.zone1-0000004989", "Compression:", "zstd", "lane-003.xbstream.zst", "ibdata1", "files, "} {
		assert.Contains(t, out, want)
	}
	assert.Regexp(t, `(?m)^LANE +FILE +RAW +STORED +CHUNKS +CRC-32C +PARTS\n0 +lane-000\.xbstream\.zst +[0-9.]+ [KM]iB +[0-9.]+ [KM]iB +[0-9]+ +- +-$`, out,
		"a backup from before lane CRCs were kept shows none")

	stdout.Reset()
	code = Main(context.Background(), append([]string{"show", "--files", "--json"}, args...), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	var rep ShowReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	assert.Len(t, rep.Lanes, 4)

	// The files and sizes are those the lanes extract to.
	extracted, st := extractLanes(t, root)
	require.Len(t, rep.Files, st.Files)
	for p, n := range rep.Files {
		fi, err := os.Stat(filepath.Join(extracted, p))
		require.NoError(t, err, p)
		assert.Equal(t, fi.Size(), n, p)
	}

	// A backup that is not there: exit 3 (not found, not damaged), the
	// cause first on stderr naming the location, nothing on stdout.
	stdout.Reset()
	stderr.Reset()
	code = Main(context.Background(), append([]string{"show", "--backup=no-such-backup"}, args...), &stdout, &stderr)
	assert.Equal(t, 3, code)
	assert.Empty(t, stdout.String())
	assert.Contains(t, stderr.String(), "vtfifo show: backup ks/0/no-such-backup in ")
	assert.Contains(t, stderr.String(), ": no such backup (GetBackups does not list it): check --backup, --keyspace and --shard\n")
}

// splitCopy stores the test backup in a split storage made of cfg, as
// backup ks/0/copied.
func splitCopy(t *testing.T, cfg splitstorage.Config) { splitCopyAs(t, cfg, "copied") }

// localSplitCopy is a split storage on local disk holding the test backup
// as ks/0/copied; it returns its root.
func localSplitCopy(t *testing.T) string {
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	splitCopy(t, cfg)
	return cfg.File.Root
}

// localSplitWith stores the test backup under each of names in a new split
// storage on local disk, and returns its root.
func localSplitWith(t *testing.T, names ...string) string {
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root = t.TempDir()
	for _, name := range names {
		splitCopyAs(t, cfg, name)
	}
	return cfg.File.Root
}

// splitCopyAs stores the test backup in the split storage of cfg as
// backup ks/0/name.
func splitCopyAs(t *testing.T, cfg splitstorage.Config, name string) {
	splitCopyEdited(t, cfg, name, func(_ string, data []byte) []byte { return data })
}

// splitCopyEdited is splitCopyAs with each file's bytes as edit gives them
// (a file a later version writes, say), stored with their own checksums.
func splitCopyEdited(t *testing.T, cfg splitstorage.Config, name string, edit func(file string, data []byte) []byte) {
	src := filepath.Join(backupData, "ks", "0", "2026-11-23.050519.zone1-0000004989")
	bs, err := splitstorage.New(cfg)
	require.NoError(t, err)
	defer bs.Close()
	ctx := context.Background()
	bh, err := bs.StartBackup(ctx, "ks/0", name)
	require.NoError(t, err)
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		data = edit(e.Name(), data)
		w, err := bh.AddFile(ctx, e.Name(), int64(len(data)))
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	require.NoError(t, bh.EndBackup(ctx))
}

// TestShowSplitParts: on the split storage, show lists each lane's parts.
func TestShowSplitParts(t *testing.T) {
	src := filepath.Join(backupData, "ks", "0", "2026-11-23.050519.zone1-0000004989")
	root := t.TempDir()
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root, cfg.PartSize = root, 1<<20
	splitCopy(t, cfg)
	ctx := context.Background()

	var stdout, stderr bytes.Buffer
	code := Main(ctx, []string{"show", "--json", "--backup-storage-implementation=split", "--split-storage-backend=file",
		"--split-storage-part-size=1MiB", "--split-storage-root=" + root, "--keyspace=ks", "--shard=0"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	var rep ShowReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
	require.Len(t, rep.Lanes, 4)
	for _, l := range rep.Lanes {
		fi, err := os.Stat(filepath.Join(src, l.File))
		require.NoError(t, err)
		assert.Equal(t, int64(1<<20), l.PartSize, l.File)
		assert.Equal(t, int((fi.Size()+1<<20-1)>>20), l.Parts, l.File)
	}
}

// TestEncryptedBackup: keygen makes a key file line; with the key file,
// show names the key and verify and export read the backup; without it,
// they fail saying which key it needs, exit 3 (no verdict on the backup).
func TestEncryptedBackup(t *testing.T) {
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, Main(ctx, []string{"keygen", "--id", "k1"}, &stdout, &stderr), stderr.String())
	keys := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(keys, stdout.Bytes(), 0o400))
	assert.Equal(t, 2, Main(ctx, []string{"keygen", "--id", "no spaces"}, &stdout, &stderr), "a usage error")

	root := t.TempDir()
	cfg := splitstorage.DefaultConfig()
	cfg.File.Root, cfg.PartSize, cfg.EncryptionKeyFile = root, 1<<20, keys
	splitCopy(t, cfg)
	args := []string{"--backup-storage-implementation=split", "--split-storage-backend=file",
		"--split-storage-part-size=1MiB", "--split-storage-root=" + root, "--keyspace=ks", "--shard=0"}
	withKey := append([]string{"--split-storage-encryption-key-file=" + keys}, args...)

	stdout.Reset()
	code := Main(ctx, append([]string{"show"}, withKey...), &stdout, &stderr)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	assert.Regexp(t, `Encryption:\s+AES-256-GCM, data key wrapped by key ID k1`, stdout.String())

	stdout.Reset()
	code = Main(ctx, append([]string{"verify"}, withKey...), &stdout, &stderr)
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())

	out := filepath.Join(t.TempDir(), "backup.xbstream")
	code = Main(ctx, append([]string{"export", "-o", out}, withKey...), &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	exported, err := os.Open(out)
	require.NoError(t, err)
	defer exported.Close()
	dir := filepath.Join(t.TempDir(), "exported")
	_, err = xbstream.Extract(ctx, dir, xbstream.ReaderLanes(exported), xbstream.ExtractOptions{})
	require.NoError(t, err)
	fileRoot, _ := storageCopy(t)
	lanes, _ := extractLanes(t, fileRoot)
	assert.Equal(t, tree(t, lanes), tree(t, dir), "the encrypted backup exports to the backup's files")

	stdout.Reset()
	Main(ctx, append([]string{"ls"}, args...), &stdout, &stderr)
	assert.Contains(t, stdout.String(), `cannot read MANIFEST: split storage: backup ks/0/copied is encrypted (key ID "k1")`,
		"ls says why it cannot read the backup")
	for _, cmd := range []string{"show", "verify"} {
		stdout.Reset()
		stderr.Reset()
		code = Main(ctx, append([]string{cmd}, args...), &stdout, &stderr)
		assert.Equal(t, 3, code, "%s: this host cannot read it, which proves nothing of it", cmd)
		assert.Contains(t, stdout.String()+stderr.String(), `is encrypted (key ID "k1"): set --split-storage-encryption-key-file`, cmd)
	}
}

// TestExportRefusesATerminal: export's binary stream never goes to a
// terminal: exit 2 before anything is read, saying what to do instead.
func TestExportRefusesATerminal(t *testing.T) {
	_, args := storageCopy(t)
	master, tty, err := pty.Open()
	require.NoError(t, err)
	defer master.Close()
	defer tty.Close()
	var stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"export"}, args...), tty, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "refusing to write a binary stream to a terminal: give -o FILE, or redirect or pipe stdout")
}

// TestExportRefusesANameItsPartialFileCannotHave: a name that fits the
// file system but not with the partial file's longer name it is written
// under first is a usage error naming --output (it was exit 3, as a
// directory this host could not write in), nothing left.
func TestExportRefusesANameItsPartialFileCannotHave(t *testing.T) {
	_, args := storageCopy(t)
	dir := t.TempDir()
	name := filepath.Join(dir, strings.Repeat("e", 240)+".xb")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"export", "-o", name}, args...), &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout.String())
	assert.Contains(t, stderr.String(), "--output "+name+": the name is too long for the partial file it is written as first")
	assert.Contains(t, stderr.String(), "give a shorter name")
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left)
}

// TestTargetMustBeNewOrEmpty: a restore into a directory that holds files
// is a usage error (exit 2) before anything is read, as export's existing
// file is; into a volume's root, it says where to restore instead.
func TestTargetMustBeNewOrEmpty(t *testing.T) {
	_, args := storageCopy(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ibdata1"), []byte("x"), 0o640))
	for _, cmd := range [][]string{{"restore"}, {"restore-table", "--table=d.t"}} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), append(append(cmd, "--target-dir="+dir), args...), &stdout, &stderr)
		assert.Equal(t, 2, code, cmd)
		assert.Contains(t, stderr.String(), "--target-dir "+dir+" is not empty: a restore never writes over files; give a new or empty directory")
		assert.Empty(t, stdout.String())
	}
	assert.FileExists(t, filepath.Join(dir, "ibdata1"))

	// A volume's root, mounted for the restore, holds its lost+found: the
	// error says to restore into a directory in it.
	volume := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(volume, "lost+found"), 0o700))
	_, errOut := runArgs(t, 2, append([]string{"restore", "--target-dir=" + volume}, args...)...)
	assert.Equal(t, "vtfifo restore: --target-dir "+volume+" is not empty: a restore never writes over files; it holds only lost+found, as "+
		"the root of a file system does: restore into a new directory in it (--target-dir="+volume+"/data), which mysqld then takes as its "+
		"data directory\n", errOut)
	left, err := os.ReadDir(volume)
	require.NoError(t, err)
	assert.Len(t, left, 1, "nothing written beside lost+found")

	// A restore makes the directory, not its parents: one whose parent is
	// missing, or a file, is refused at startup too, naming the flag.
	for target, want := range map[string]string{
		filepath.Join(dir, "missing", "r"): "its parent " + filepath.Join(dir, "missing") + " is not a directory: create it first, or give another",
		filepath.Join(dir, "ibdata1", "r"): "open " + filepath.Join(dir, "ibdata1", "r") + ": not a directory",
	} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), append([]string{"restore", "--prepare", "--target-dir=" + target}, args...), &stdout, &stderr)
		assert.Equal(t, 2, code, target)
		assert.Equal(t, "vtfifo restore: --target-dir "+target+": "+want+"\n", stderr.String())
		assert.Empty(t, stdout.String())
	}

	// A relative path with a trailing slash, as a shell completes it, is
	// the directory it names, whose parent is the current one.
	t.Chdir(t.TempDir())
	out, errOut := runArgs(t, 0, append([]string{"restore", "--progress=never", "--quiet", "--target-dir=new/"}, args...)...)
	assert.Contains(t, out, "restored into ")
	assert.Empty(t, errOut)
	assert.FileExists(t, filepath.Join("new", "xtrabackup_checkpoints"))
}

// TestTargetOfAStoppedRestoreIsNamed: a directory a restore was killed in
// (its mark names a process gone; here a mark of an earlier version, which
// lists nothing it moved up: TestKillDuringTheMoveUp has this one's) is
// still refused, exit 2, and the error says what it holds and to remove
// what is there of it by hand; one a live restore writes
// into says so, and one of another host's restore that it cannot judge. Nothing in either is removed. (By hand with the real
// binary: restore killed by SIGKILL during its prepare, then again into
// the same --target-dir.)
func TestTargetOfAStoppedRestoreIsNamed(t *testing.T) {
	_, args := storageCopy(t)
	gone, live, elsewhere := procident.Self(), procident.Self(), procident.Self()
	gone.PID, gone.ProcStart = deadPID(t), "1"
	elsewhere.Host = "dr-host"
	for _, c := range []struct {
		owner procident.Owner
		want  string
	}{
		{gone, "; it holds what a restore stopped before it finished left there (pid " + fmt.Sprint(gone.PID) + " on " + gone.Host +
			", gone): no whole restore; remove what it left (rm -rf %s/.vtfifo-restoring, and of the other entry there (ibdata1) what the " +
			"restore had moved up) and restore again, or give another directory\n"},
		{live, "; a restore is writing into it now (pid " + fmt.Sprint(live.PID) + ")\n"},
		{elsewhere, "; a restore on dr-host (pid " + fmt.Sprint(elsewhere.PID) + ") wrote into it and did not finish, or still runs there\n"},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ibdata1"), []byte("x"), 0o640))
		writeMark(t, dir, c.owner)
		_, errOut := runArgs(t, 2, append([]string{"restore", "--target-dir=" + dir}, args...)...)
		assert.Equal(t, "vtfifo restore: --target-dir "+dir+" is not empty: a restore never writes over files"+strings.ReplaceAll(c.want, "%s", dir), errOut)
		assert.FileExists(t, filepath.Join(dir, "ibdata1"))
	}

	// Stopped before it moved a file up: what it left is named to remove.
	dir := t.TempDir()
	files := filepath.Join(dir, ".vtfifo-restoring.d")
	require.NoError(t, os.MkdirAll(filepath.Join(files, "db"), 0o750))
	writeMark(t, dir, gone)
	_, errOut := runArgs(t, 2, append([]string{"restore", "--target-dir=" + dir}, args...)...)
	assert.Equal(t, "vtfifo restore: --target-dir "+dir+" is not empty: a restore never writes over files; it holds what a restore stopped "+
		"before it finished left there (pid "+fmt.Sprint(gone.PID)+" on "+gone.Host+", gone): no whole restore; remove what it left (rm -rf "+
		files+" "+filepath.Join(dir, ".vtfifo-restoring")+") and restore again, or give another directory\n", errOut)
	assert.DirExists(t, filepath.Join(files, "db"))
}

// writeMark writes a restore's mark naming owner into dir.
func writeMark(t *testing.T, dir string, owner procident.Owner) {
	mark, err := json.Marshal(owner)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".vtfifo-restoring"), mark, 0o640))
}

// TestHelpHasOneSource: `vtfifo help X` and `vtfifo X --help` print the
// same text, from the commands table, for every command.
func TestHelpHasOneSource(t *testing.T) {
	for _, c := range commands() {
		var viaHelp, viaFlag, errOut bytes.Buffer
		require.Equal(t, 0, Main(context.Background(), []string{"help", c.use}, &viaHelp, &errOut), c.use)
		require.Equal(t, 0, Main(context.Background(), []string{c.use, "--help"}, &viaFlag, &errOut), c.use)
		assert.Equal(t, viaFlag.String(), viaHelp.String(), c.use)
		assert.Contains(t, viaFlag.String(), c.long, c.use)
		assert.Contains(t, viaFlag.String(), "Exit status: 0 ", c.use)
	}
}

// TestUnreachableLiveServer: restore-table into a server it cannot reach
// is exit 3 (access, never damage), before anything is downloaded.
func TestUnreachableLiveServer(t *testing.T) {
	_, args := storageCopy(t)
	target := filepath.Join(t.TempDir(), "t")
	var stdout, stderr bytes.Buffer
	sock := filepath.Join(t.TempDir(), "no.sock")
	code := Main(context.Background(), append([]string{"restore-table", "--table=d.t", "--target-dir=" + target, "--into-mysql=" + sock}, args...),
		&stdout, &stderr)
	assert.Equal(t, 3, code, "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "FAIL: cannot reach the live server at "+sock+" as vt_dba")
	assert.Contains(t, stderr.String(), "nothing says the backup is damaged")
	assert.NoDirExists(t, target)
}

// TestRestoreTableFlags: restore-table's pacing flags are checked at
// startup (exit 2, naming the flag), before anything is read.
func TestRestoreTableFlags(t *testing.T) {
	_, args := storageCopy(t)
	target := filepath.Join(t.TempDir(), "t")
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--replica=127.0.0.1:3306"}, "--replica needs --into-mysql or --into-tablet"},
		{[]string{"--into-mysql=/nonexistent.sock", "--replica-stall=0s"}, "invalid value 0s for --replica-stall: allowed values are durations above 0"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), append(append([]string{"restore-table", "--table=d.t", "--target-dir=" + target}, tc.flags...), args...),
			&stdout, &stderr)
		assert.Equal(t, 2, code, "stderr: %s", stderr.String())
		assert.Contains(t, stderr.String(), tc.want)
		assert.Empty(t, stdout.String())
		assert.NoDirExists(t, target)
	}
}

// TestUnreachableReplica: a --replica that cannot be reached is exit 3,
// naming it and the flag, before anything is downloaded.
func TestUnreachableReplica(t *testing.T) {
	srv := mariadbtest.Start(t)
	srv.Exec(t, "CREATE DATABASE d")
	_, args := storageCopy(t)
	target := filepath.Join(t.TempDir(), "t")
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"restore-table", "--table=d.t", "--target-dir=" + target, "--into-mysql=" + srv.Socket,
		"--mysql-user=root", "--replica=127.0.0.1:1"}, args...), &stdout, &stderr)
	assert.Equal(t, 3, code, "stderr: %s", stderr.String())
	assert.Equal(t, 1, strings.Count(stderr.String(), "FAIL: cannot reach the replica 127.0.0.1:1 (--replica) as root"), "said once")
	// A socket path given relative is a path, not a host name.
	stderr.Reset()
	code = Main(context.Background(), append([]string{"restore-table", "--table=d.t", "--target-dir=" + target, "--into-mysql=" + srv.Socket,
		"--mysql-user=root", "--replica=run/mysqld.sock"}, args...), &stdout, &stderr)
	assert.Equal(t, 3, code, "stderr: %s", stderr.String())
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Contains(t, stderr.String(), "FAIL: cannot reach the replica run/mysqld.sock (--replica) as root: dial unix "+filepath.Join(wd, "run/mysqld.sock"))
	assert.Contains(t, stderr.String(), "nothing says the backup is damaged")
	assert.Empty(t, stdout.String())
	assert.NoDirExists(t, target)
}
