package vtfifocli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aDamagedBaseIsJudgedForItself: a byte flipped in a lane part of the
// middle backup of a kept selftest's chain (real mariabackup backups: full,
// delta, delta). verify of the newest delta, whole itself, fails naming the
// base and its part (it said OK before 2026-12-04: it checked only that the
// base's lanes were stored); its test restore, which fails reading the
// base, quarantines the base, and with it the delta (before, only the
// delta was quarantined, and a tablet's restore then picked the damaged
// base); with the part mended, releasing the base brings both back, and
// ls says why the delta's own record failed until it is tested again.
func aDamagedBaseIsJudgedForItself(t *testing.T, dir, runDir, base, delta string, storage []string) {
	part := largestPart(t, filepath.Join(runDir, base))
	good, err := os.ReadFile(part)
	require.NoError(t, err)
	bad := slices.Clone(good)
	for i := len(bad) / 2; i < len(bad)/2+16; i++ {
		bad[i] ^= 0xff
	}
	require.NoError(t, os.WriteFile(part, bad, 0o640))
	lane := regexp.QuoteMeta(filepath.Base(part[:len(part)-len(".part-00000001")]))

	out, errOut := runArgs(t, 1, append([]string{"verify", "--backup=" + delta, "--quiet"}, storage...)...)
	assert.Regexp(t, `^FAIL: backup \S+/`+delta+`: 1 problem\(s\) \(\S+\):\n  its base `+base+` is damaged: backup \S+/`+base+`, file `+lane+
		`, part 1 \(\S+\): checksum mismatch: expected crc32c [0-9a-f]{8}, found [0-9a-f]{8}\n$`, out)
	assert.Empty(t, errOut)

	out, errOut = runArgs(t, 1, append([]string{"test-restore", "--backup=" + delta, "--scratch-dir=" + dir, "--quiet"}, storage...)...)
	assert.Regexp(t, `^FAIL: test restore of \S+/`+delta+` \(\S+, record stored beside the backup; its base `+base+` is damaged: it is quarantined, `+
		`and with it every backup that needs it, this one among them: restores no longer choose them \(vtfifo repair, then vtfifo release --backup=`+
		base+`, puts them back\)\): .*incremental backup `+base+` \(1 of 2\): .*file `+lane+`, part 1 .*checksum mismatch`, out)
	assert.Empty(t, errOut)
	list := append([]string{"ls", "--quiet"}, storage[:len(storage)-1]...)
	listed := run(t, 0, list...)
	assert.Regexp(t, `\n`+base+`\s+-\s+quarantined: found damaged by the test restore of `+delta+` \(`, listed)
	assert.Regexp(t, `\n`+delta+`\s+-\s+quarantined: its base `+base+` is quarantined: found damaged by the test restore of `+delta, listed)

	require.NoError(t, os.WriteFile(part, good, 0o640))
	out = run(t, 0, append([]string{"release", "--backup=" + base, "--quiet"}, storage[:len(storage)-1]...)...)
	assert.Regexp(t, `\nreleased \S+/`+delta+` too \(the quarantine of its chain had taken it out\)`, out)
	assert.Regexp(t, `\n`+delta+`\s.*\sfailed \S+ \(its base `+base+` was found damaged\)`, run(t, 0, list...),
		"ls says why the delta's own record failed")
	out, _ = runArgs(t, 0, append([]string{"verify", "--backup=" + delta, "--quiet"}, storage...)...)
	assert.Regexp(t, `^OK: backup \S+/`+delta+`: .*; and the 2 backups of its chain before it, each verified whole as well \(\S+\)\n$`, out)
}

// largestPart is the largest lane part of a split storage backup's
// directory.
func largestPart(t *testing.T, dir string) string {
	parts, err := filepath.Glob(filepath.Join(dir, "lane-*.part-00000001"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	var largest string
	var size int64 = -1
	for _, p := range parts {
		st, err := os.Stat(p)
		require.NoError(t, err)
		if st.Size() > size {
			largest, size = p, st.Size()
		}
	}
	return largest
}
