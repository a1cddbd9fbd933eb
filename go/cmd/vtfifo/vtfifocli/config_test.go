package vtfifocli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlagFiles: a tablet's flag file (with flags vtfifo does not take, a
// comment, a ${VAR}) and a Vitess-style YAML config file configure vtfifo;
// the command line wins over both; a bad line fails naming file, line and
// flag.
func TestFlagFiles(t *testing.T) {
	root, _ := storageCopy(t)
	dir := t.TempDir()
	t.Setenv("VTFIFO_TEST_ROOT", root)
	flagsFile := filepath.Join(dir, "vttablet.flags")
	require.NoError(t, os.WriteFile(flagsFile, []byte(`# vttablet's backup flags
--restore-from-backup
--port=15100
--backup-storage-implementation=file
--file-backup-storage-root=${VTFIFO_TEST_ROOT}

--compression-engine-name=zstd
`), 0o600))
	yamlFile := filepath.Join(dir, "vtfifo.yaml")
	require.NoError(t, os.WriteFile(yamlFile, []byte("keyspace: ks\nshard: \"0\"\ntablet_path: zone1-100\n"), 0o600))

	out := run(t, 0, "ls", "--flags-file="+flagsFile, "--config-file="+yamlFile)
	assert.Contains(t, out, "2026-11-23.050519.zone1-0000004989")
	assert.Contains(t, out, "skipped flags from the flag files that vtfifo does not take: --restore-from-backup --port --tablet-path")

	// The command line wins: another shard, which has no backups, is a
	// wrong location (exit 3), not an empty table.
	out = run(t, 3, "ls", "--flags-file="+flagsFile, "--config-file="+yamlFile, "--shard=1")
	assert.Equal(t, "vtfifo ls: no backup in ks/1 in "+root+" (file storage): check --keyspace and --shard (or --backup-dir) and the storage flags\n",
		lastLine(out))

	bad := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--flags-file=" + bad("unset.flags", "# x\n--file-backup-storage-root=${VTFIFO_TEST_UNSET}\n")}, "unset.flags:2: ${VTFIFO_TEST_UNSET} is not set"},
		{[]string{"--flags-file=" + bad("notflag.flags", "keyspace=ks\n")}, `notflag.flags:1: "keyspace=ks" is not a flag`},
		{[]string{"--flags-file=" + bad("badvalue.flags", "--timeout=soon\n")}, "badvalue.flags:1: --timeout"},
		{[]string{"--config-file=" + bad("list.yaml", "- a\n- b\n")}, "not a YAML map"},
		{[]string{"--flags-file=" + filepath.Join(dir, "missing.flags")}, "missing.flags"},
	} {
		out := run(t, 2, append([]string{"ls"}, c.args...)...)
		assert.Contains(t, out, c.want, "%v", c.args)
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(out), "\n")+1, "one clear line: %q", out)
	}
}

// lastLine is the last line of out, with its newline.
func lastLine(out string) string {
	lines := strings.SplitAfter(strings.TrimSuffix(out, "\n"), "\n")
	return lines[len(lines)-1] + "\n"
}
