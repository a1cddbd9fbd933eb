package vtfifocli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
)

// TestLockRefusesEveryRemoval: vtfifo lock locks a backup until a date;
// ls and show print it; rm (and its dry run), prune, verify
// --remove-incomplete and copy --remove-source refuse it naming the date
// with exit 2, nothing on stdout for a refusal, and it stays listed. A
// lock's bad flags fail at startup naming the flag and its allowed values.
func TestLockRefusesEveryRemoval(t *testing.T) {
	root := t.TempDir()
	splitCopyAs(t, localSplitConfig(root), "2026-11-23.050519.zone1-0000004989")
	const name = "2026-11-23.050519.zone1-0000004989"
	shard := []string{"--keyspace=ks", "--shard=0"}
	with := func(args ...string) []string { return append(args, shard...) }

	// Bad flags: exit 2 at startup, naming the flag; nothing locked.
	for _, c := range []struct {
		args []string
		want string
	}{
		{with("lock", "--for=720h"), "--backup is required: lock locks the backup it names, never one it picks"},
		{with("lock", "--backup="+name), "give one of --until and --for: how long the backup is kept"},
		{with("lock", "--backup="+name, "--for=1h", "--until=2099-01-01"), "give one of --until and --for"},
		{with("lock", "--backup="+name, "--until=yesterday"), `invalid value "yesterday" for --until: allowed values are an RFC 3339 time`},
		{with("lock", "--backup="+name, "--until=2001-01-01"), `invalid value "2001-01-01" for --until: allowed values are a time in the future`},
		{with("lock", "--backup="+name, "--for=1h", "--mode=strict"), `invalid value "strict" for --mode: allowed values are governance or compliance`},
		{with("lock", "--backup="+name, "--for=a month"), `invalid argument "a month" for "--for" flag: not an age (such as 7d, 2w, 36h, 1d12h): ` +
			`allowed values are an age > 0 such as 30d, 2w or 720h`},
	} {
		out, errOut := runSplit(t, 2, root, c.args...)
		assert.Empty(t, out, "%v", c.args)
		assert.Contains(t, errOut, c.want, "%v", c.args)
	}
	ls, _ := runSplit(t, 0, root, with("ls")...)
	assert.Regexp(t, name+`\s.*\s-\n`, ls, "nothing is locked yet")

	_, errOut := runSplit(t, 3, root, with("lock", "--backup=2020-01-01.000000.zone1-0000000100", "--for=48h")...)
	assert.Contains(t, errOut, "no such backup")

	out, errOut := runSplit(t, 0, root, with("lock", "--backup="+name, "--for=2d", "--json")...)
	assert.Empty(t, errOut)
	var res LockResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, "ks/0/"+name, res.Backup)
	assert.Equal(t, "governance", res.Mode)
	assert.Greater(t, res.Objects, 4, "every part, index and marker")
	assert.WithinDuration(t, time.Now().Add(48*time.Hour), res.Until, time.Minute)
	until := res.Until.UTC().Format(time.RFC3339)
	lockLine := "locked until " + until + " (governance)"

	// A shorter lock shortens nothing, and says what holds.
	out, _ = runSplit(t, 0, root, with("lock", "--backup="+name, "--for=24h")...)
	assert.Equal(t, "ks/0/"+name+" is "+lockLine+": "+itoa(res.Objects)+" objects\n", out)

	ls, _ = runSplit(t, 0, root, with("ls")...)
	assert.Regexp(t, `LOCK\n`, ls)
	assert.Contains(t, ls, lockLine)
	lsJSON, _ := runSplit(t, 0, root, with("ls", "--json")...)
	assert.Contains(t, lsJSON, `"lock": "`+lockLine+`"`)
	assert.Contains(t, lsJSON, `"locked_until": "`+until+`"`)
	show, _ := runSplit(t, 0, root, with("show", "--backup="+name)...)
	assert.Regexp(t, `Lock:\s+`+regexp.QuoteMeta(lockLine), show)
	fleet, _ := runSplit(t, 0, root, "ls")
	assert.Regexp(t, `NEWEST-LOCK\s+CHECK\nks/0\s.*\s`+until+`\s+ok\n`, fleet, "the fleet view shows the newest backup's lock")
	prom, _ := runSplit(t, 0, root, "ls", "--prometheus")
	assert.Contains(t, prom, `vtfifo_backup_newest_locked_until_timestamp_seconds{keyspace="ks",shard="0"} `+fmt.Sprint(float64(res.Until.Unix()))+"\n")

	refusal := "ks/0/" + name + ": it is " + lockLine + ", and nothing removes it before then (vtfifo show shows its lock)"
	for _, c := range []struct {
		args []string
		want string
	}{
		{with("rm", "--backup="+name), "refused: split storage: not removing backup " + refusal},
		{with("rm", "--backup="+name, "--dry-run"), "would be refused: split storage: not removing backup " + refusal},
		{with("prune", "--keep=1", "--keep-within=1s"), ""}, // the newest is kept by --keep: nothing to refuse
		{with("copy", "--backup="+name, "--remove-source", "--to=--split-storage-root="+t.TempDir()),
			"backup ks/0/" + name + " is " + lockLine + ": --remove-source cannot remove it before then"},
	} {
		code := 2
		if c.want == "" {
			code = 0
		}
		out, errOut := runSplit(t, code, root, c.args...)
		if c.want != "" {
			assert.Contains(t, errOut, c.want, "%v", c.args)
			assert.NotContains(t, out, "removed", "%v", c.args)
		}
	}
	// prune that would remove it: a second, newer backup makes it prunable.
	splitCopyAs(t, localSplitConfig(root), "2026-11-24.050519.zone1-0000004989")
	out, errOut = runSplit(t, 2, root, with("prune", "--keep=1", "--keep-within=1s")...)
	assert.Contains(t, out, "keeping ks/0/"+name+": locked: split storage: not removing backup "+refusal)
	assert.Contains(t, errOut, "refused: split storage: not removing backup "+refusal)
	ls, _ = runSplit(t, 0, root, with("ls")...)
	assert.Contains(t, ls, name, "a locked backup stays")

	// The files are read-only on local disk.
	st, err := os.Stat(filepath.Join(root, "ks", "0", name, "MANIFEST.index"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o440), st.Mode().Perm())
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestPruneRenewsTheLocksOfWhatItKeeps: prune --renew-locks locks every
// backup retention keeps until the date from now, and only those; a bad
// value fails at startup naming the flag.
func TestPruneRenewsTheLocksOfWhatItKeeps(t *testing.T) {
	root := t.TempDir()
	bs := localSplit(t, root)
	names := []string{"2026-11-20.000000.zone1-0000000100", "2026-11-21.000000.zone1-0000000100", "2026-11-22.000000.zone1-0000000100"}
	for _, n := range names {
		plantBackup(t, bs, "ks/0", n)
	}
	shard := []string{"--keyspace=ks", "--shard=0"}
	out, errOut := runSplit(t, 2, root, append([]string{"prune", "--keep=2", "--renew-locks=1h"}, shard...)...)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `invalid value "1h0m0s" for --renew-locks: allowed values are 0 (none) or 24h..876000h`)

	out, _ = runSplit(t, 0, root, append([]string{"prune", "--keep=2", "--renew-locks=48h", "--json"}, shard...)...)
	var res PruneResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, []string{"ks/0/" + names[0]}, res.Removed)
	assert.Equal(t, []string{"ks/0/" + names[1], "ks/0/" + names[2]}, res.Renewed)
	for _, n := range names[1:] {
		bh, err := bs.OpenBackup(context.Background(), "ks/0", n)
		require.NoError(t, err)
		bl, err := bh.(*splitstorage.Handle).LockState(context.Background())
		require.NoError(t, err)
		assert.WithinDuration(t, time.Now().Add(48*time.Hour), bl.Lock.Until, time.Minute, n)
	}
	// A tighter --keep: the older one is locked, so kept (and the request
	// refused, exit 2); the one kept is renewed.
	out, _ = runSplit(t, 2, root, append([]string{"prune", "--keep=1", "--renew-locks=72h"}, shard...)...)
	assert.Contains(t, out, "keeping ks/0/"+names[1]+": locked: split storage: not removing backup ks/0/"+names[1])
	assert.Contains(t, out, "ks/0/"+names[2]+" is locked until ")
}
