package reliability

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"vitess.io/vitess/go/vt/mysqlctl"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/fifobackupengine"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestExternalDecompressorIsTheHosts: a good backup compressed by an
// external command (zstd) is checked with the vtfifo binary under each way
// this host's --external-decompressor can be wrong: not given, a command
// not found, one that fails, one that does not decompress. What it makes of
// the lanes is this host's doing, not proof about the backup: exit 3, not
// checked, nothing called damaged, and a test restore records nothing (it
// quarantined the backup before). The right command says OK; a part damaged
// in the store is damage whatever the command (exit 1, the part named), and
// a test restore records it with the storage's finding.
func TestExternalDecompressorIsTheHosts(t *testing.T) {
	f := newFixture(t)
	f.useStorage(t, splitstoragetest.Local(t).Config)
	cfg := f.cfg
	ec := engineConfig()
	ec.Compression = fifobackupengine.CompressionConfig{Enabled: true, Engine: mysqlctl.ExternalCompressor, ExternalCompressor: "zstd -1 -c",
		ExternalExtension: ".zst", ExternalDecompressor: "zstd -d -c"}
	f.useEngine(ec)
	require.NoError(t, f.backup(context.Background(), nil))
	names := f.list(t)
	require.Len(t, names, 1)
	name := names[0]
	where := backupDir + "/" + name
	notDecoded := "did not decode with this host's external decompressor, which is no proof about the backup: " +
		`give --external-decompressor the command that reads the ".zst" files it was written with`
	notChecked := "FAIL: backup " + where + ": 1 could not be read or reached, so were not checked (nothing says they are damaged):"

	verify := func(t *testing.T, args ...string) (int, string, string) {
		code, stdout, stderr := runVtfifo(t, cfg, "verify", append([]string{"--progress=never"}, args...)...)
		t.Logf("vtfifo verify %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		return code, stdout, stderr
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not given", nil, "restore needs --external-decompressor (or --external-decompressor-use-manifest)"},
		{"none in the MANIFEST", []string{"--external-decompressor-use-manifest"}, "restore needs --external-decompressor"},
		{"not found", []string{"--external-decompressor=no-such-decompressor -d"}, `external decompressor "no-such-decompressor" not found`},
		{"fails", []string{"--external-decompressor=false"}, notDecoded},
		{"does not decompress", []string{"--external-decompressor=cat"}, notDecoded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := verify(t, tc.args...)
			assert.Equal(t, 3, code, "this host's decompressor is not the backup")
			assert.Contains(t, stdout, notChecked)
			assert.Contains(t, stdout, tc.want)
			assert.NotContains(t, stdout+stderr, "problem(s)")
			assert.NotContains(t, stdout, "\n\n", "one line per finding")
		})
	}
	for _, dec := range []string{"no-such-decompressor", "cat"} {
		t.Run("a test restore records nothing/"+dec, func(t *testing.T) {
			code, stdout, stderr := runVtfifo(t, cfg, "test-restore", "--progress=never", "--quarantine-on-failure", "--external-decompressor="+dec)
			t.Logf("vtfifo test-restore: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			assert.Equal(t, 3, code)
			assert.Regexp(t, `FAIL: test restore of `+where+` could not run, nothing is recorded: [^\n]*\(no verdict on the backup\)`, stdout)
			assert.NotContains(t, stdout+stderr, "quarantined")
			assert.Equal(t, []string{name}, f.list(t), "listed as before")
		})
	}

	scratch := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		out  string // what it must not leave behind
	}{
		{"restore", []string{"--target-dir=" + filepath.Join(scratch, "restore")}, filepath.Join(scratch, "restore")},
		{"export", []string{"-o", filepath.Join(scratch, "export.xbstream")}, filepath.Join(scratch, "export.xbstream")},
	} {
		t.Run(c.name+" with cat", func(t *testing.T) {
			code, stdout, stderr := runVtfifo(t, cfg, c.name, append([]string{"--progress=never", "--external-decompressor=cat"}, c.args...)...)
			t.Logf("vtfifo %s: exit %d\nstdout:\n%s\nstderr:\n%s", c.name, code, stdout, stderr)
			assert.Equal(t, 3, code, "not the backup's doing")
			assert.Contains(t, stdout+stderr, notDecoded)
			assert.Contains(t, stdout+stderr, "nothing says the backup is damaged")
			_, err := os.Stat(c.out)
			assert.True(t, os.IsNotExist(err), "%s leaves nothing behind: %v", c.name, err)
		})
	}

	code, stdout, _ := verify(t, "--external-decompressor=zstd -d -c")
	require.Equal(t, 0, code, "the right command")
	assert.Contains(t, stdout, "OK: backup "+where)

	undo := flipByte(t, cfg, splitstorage.PartKey(backupDir, name, "lane-001.xbstream.zst", 1))
	defer undo()
	for _, args := range [][]string{{"--external-decompressor=zstd -d -c"}, {"--external-decompressor=cat"}, nil} {
		code, stdout, _ := verify(t, args...)
		assert.Equal(t, 1, code, "%q: a part damaged in the store is damage", args)
		assert.Regexp(t, `file lane-001\.xbstream\.zst, part 1 \(\S+\): checksum mismatch`, stdout, "%q", args)
	}
	// A test restore records the damage the storage shows.
	code, stdout, stderr := runVtfifo(t, cfg, "test-restore", "--progress=never", "--quarantine-on-failure", "--external-decompressor=zstd -d -c")
	t.Logf("vtfifo test-restore: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "the backup is quarantined")
	assert.Regexp(t, `the storage: [^\n]*file lane-001\.xbstream\.zst, part 1 \(\S+\): checksum mismatch`, stdout)
	assert.Empty(t, f.list(t), "quarantined: restores no longer choose it")
}
