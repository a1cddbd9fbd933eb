package vtfifocli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/testrestore"
)

// TestPromote: promote refuses an unproven backup (one whose test restore
// failed) and a destination that is
// the source (exit 2, nothing on stdout), bad flags at startup; a proven
// one is copied, verified and locked at the destination, show says where
// and until when, and the destination refuses its removal naming the date.
func TestPromote(t *testing.T) {
	root := t.TempDir()
	names := []string{"2026-11-20.000000.zone1-0000000100", "", "", "2026-11-21.000000.zone1-0000000100"}
	splitCopyAs(t, localSplitConfig(root), names[0])
	bs := localSplit(t, root)
	plantFifo(t, bs, "ks/0", names[3], 1<<20, 0, "", 0)
	for i, outcome := range map[int]string{0: testrestore.Passed, 3: testrestore.Failed} {
		bh, err := bs.OpenBackup(context.Background(), "ks/0", names[i])
		require.NoError(t, err)
		require.NoError(t, testrestore.Store(context.Background(), bh, testrestore.Record{Version: 1, Backup: "ks/0/" + names[i], Outcome: outcome,
			Started: time.Now().UTC()}))
	}
	protected := t.TempDir()
	shard := []string{"--keyspace=ks", "--shard=0"}
	to := "--to=--split-storage-root=" + protected
	with := func(args ...string) []string { return append(args, shard...) }

	for _, c := range []struct {
		args []string
		want string
	}{
		{with("promote", "--backup="+names[0], "--for=720h"), "--to-flags-file or --to is required: the destination storage"},
		{with("promote", "--backup="+names[0], to), "give one of --until and --for"},
		{with("promote", "--backup="+names[0], to, "--for=720h", "--mode=forever"), `invalid value "forever" for --mode`},
		{with("promote", "--backup="+names[3], to, "--for=720h"),
			"backup ks/0/" + names[3] + " is not promoted: no passed test restore (run vtfifo test-restore --backup=" + names[3] + "): only a proven backup is"},
		{with("promote", "--backup="+names[0], "--to=--split-storage-root="+root, "--for=720h"), "a promotion copies to another one"},
	} {
		out, errOut := runSplit(t, 2, root, c.args...)
		assert.Empty(t, out, "%v", c.args)
		assert.Contains(t, errOut, c.want, "%v", c.args)
	}

	out, errOut := runSplit(t, 0, root, with("promote", "--backup="+names[0], to, "--for=720h", "--json")...)
	assert.Empty(t, errOut)
	var rep splitstorage.PromoteReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, []string{names[0]}, rep.Copied)
	assert.Equal(t, "governance", string(rep.Mode))
	assert.WithinDuration(t, time.Now().Add(720*time.Hour), rep.Until, time.Minute)
	until := rep.Until.UTC().Format(time.RFC3339)

	show, _ := runSplit(t, 0, root, with("show", "--backup="+names[0])...)
	assert.Contains(t, show, "promoted to file:"+protected+" on ")
	assert.Contains(t, show, "locked until "+until+" (governance) there")
	// At the destination: listed, locked, with its test record.
	ls, _ := runSplit(t, 0, protected, with("ls")...)
	assert.Contains(t, ls, names[0])
	assert.Contains(t, ls, "locked until "+until)
	assert.Contains(t, ls, "passed")
	_, errOut = runSplit(t, 2, protected, with("rm", "--backup="+names[0])...)
	assert.Contains(t, errOut, "it is locked until "+until)
	// Again: the destination holds it; nothing copied twice, the lock kept.
	out, _ = runSplit(t, 0, root, with("promote", "--backup="+names[0], to, "--for=24h")...)
	assert.Equal(t, "promoted ks/0/"+names[0]+" to file:"+protected+": nothing copied (the destination held it), verified there, locked until "+
		until+" (governance) there\n", out)
	// The working storage may drop it now.
	runSplit(t, 0, root, with("rm", "--backup="+names[0])...)
}
