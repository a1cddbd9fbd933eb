package vtfifocli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vtfifo/vtfifo/go/testutil/freeport"
	"github.com/vtfifo/vtfifo/go/vt/mysqlctl/splitstorage/splitstoragetest"
)

// TestRepairFromTheCopyThenVerify: a part damaged in one storage is repaired from the copy in a
// second one and the backup verifies after (exit 0, one line per part); the
// same part damaged in both fails naming file and part (exit 1); a copy
// storage without the backup is "not found" (exit 3); usage errors exit 2.
func TestRepairFromTheCopyThenVerify(t *testing.T) {
	root, names := proofStorage(t)
	dr := t.TempDir()
	require.NoError(t, os.CopyFS(dr, os.DirFS(root)))
	name := names[1]
	parts, err := filepath.Glob(filepath.Join(root, "ks", "0", name, "*.part-*"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	damage := func(path string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		b[len(b)/2] ^= 0xff
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
	key := strings.TrimPrefix(parts[0], root+"/")
	from := "--from=--split-storage-root=" + dr

	out, errOut := runSplit(t, 0, root, "repair", "--keyspace=ks", "--shard=0", "--backup="+name, from)
	assert.Equal(t, "OK: backup ks/0/"+name+" verifies: nothing to repair\n", out)
	assert.Empty(t, errOut)

	damage(parts[0])
	out, errOut = runSplit(t, 0, root, "repair", "--keyspace=ks", "--shard=0", "--backup="+name, from)
	assert.Equal(t, "repaired "+key+" from "+dr+"\nOK: backup ks/0/"+name+" verifies after the repair: 1 parts replaced from "+dr+"\n", out)
	assert.Empty(t, errOut)
	out, _ = runSplit(t, 0, root, "repair", "--keyspace=ks", "--shard=0", "--backup="+name, from)
	assert.Equal(t, "OK: backup ks/0/"+name+" verifies: nothing to repair\n", out)

	damage(parts[0])
	damage(filepath.Join(dr, key))
	out, errOut = runSplit(t, 1, root, "repair", "--keyspace=ks", "--shard=0", "--backup="+name, from, "--json")
	var res RepairResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, RepairResult{Backup: "ks/0/" + name, From: dr, Damaged: res.Damaged}, res)
	require.Len(t, res.Damaged, 1)
	assert.Contains(t, res.Damaged[0], "backup ks/0/"+name+", file MANIFEST, part 1 ("+key+"): checksum mismatch")
	assert.Contains(t, errOut, "vtfifo repair: split storage: repairing backup ks/0/"+name+" from file:"+dr+": file MANIFEST, part 1 ("+key+
		"): the copy's part is damaged too: expected crc32c")
	assert.True(t, strings.HasSuffix(errOut, "; the backup is still damaged: repair it from another copy, or restore another backup\n"), errOut)

	_, errOut = runSplit(t, 3, root, "repair", "--keyspace=ks", "--shard=0", "--backup="+name, "--from=--split-storage-root="+t.TempDir())
	assert.Contains(t, errOut, "holds no complete copy of it")

	_, errOut = runSplit(t, 2, root, "repair", "--keyspace=ks", "--shard=0", from)
	assert.Contains(t, errOut, "--backup is required: repair works on the backup it names, never one it picks")
	_, errOut = runSplit(t, 2, root, "repair", "--keyspace=ks", "--shard=0", "--backup="+name)
	assert.Contains(t, errOut, "--from-flags-file or --from is required: the storage holding the copy")
	_, errOut = runSplit(t, 2, root, "repair", "--keyspace=ks", "--shard=0", "--backup="+name, "--from=--tape")
	assert.Contains(t, errOut, `invalid value "--tape" for --from: allowed values are --split-storage-* flags`)
}

// TestARepairThatCannotReadSaysSo: a storage that cannot be reached (S3 at
// a port nothing listens on) holding the backup: repair and release exit
// 3, nothing says it is damaged. A damaged backup whose copy cannot be
// reached: exit 1 for the damage, saying the repair could not read what it
// needed, not that the copy failed it.
func TestARepairThatCannotReadSaysSo(t *testing.T) {
	root, names := proofStorage(t)
	name := names[1]
	port, err := freeport.Get()
	require.NoError(t, err)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	unreachable := []string{"--split-storage-backend=s3", "--split-storage-s3-bucket=b", "--split-storage-s3-force-path-style",
		fmt.Sprintf("--split-storage-s3-endpoint=http://127.0.0.1:%d", port), "--split-storage-retry-max-attempts=2",
		"--split-storage-retry-initial-backoff=10ms"}

	out, errOut := runArgs(t, 3, append([]string{"repair", "--backup-storage-implementation=split", "--keyspace=ks", "--shard=0", "--backup=" + name,
		"--from=--split-storage-root=" + root, "--quiet"}, unreachable...)...)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "connection refused")
	assert.True(t, strings.HasSuffix(errOut, "; it could not be read or reached: nothing says the backup is damaged\n"), errOut)
	assert.NotContains(t, errOut, "damaged:")
	out, errOut = runArgs(t, 3, append([]string{"release", "--backup-storage-implementation=split", "--keyspace=ks", "--shard=0", "--backup=" + name,
		"--quiet"}, unreachable...)...)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "vtfifo release: FAIL: split storage: releasing backup ks/0/"+name)
	assert.Contains(t, errOut, "connection refused")
	assert.True(t, strings.HasSuffix(errOut, "; it could not be read or reached: nothing says the backup is damaged\n"), errOut)

	parts, err := filepath.Glob(filepath.Join(root, "ks", "0", name, "*.part-*"))
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	b, err := os.ReadFile(parts[0])
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(parts[0], b, 0o644))
	var from []string
	for _, f := range unreachable {
		from = append(from, "--from="+f)
	}
	out, errOut = runSplit(t, 1, root, append([]string{"repair", "--keyspace=ks", "--shard=0", "--backup=" + name, "--quiet"}, from...)...)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "connection refused")
	assert.True(t, strings.HasSuffix(errOut, "; the backup has 1 damaged parts (vtfifo verify names them), and the repair could not read what it "+
		"needed: run repair again once the storage answers\n"), errOut)
}

// TestACopyThatCannotReadItsDestinationBackSaysSo: `vtfifo copy` to S3
// (versitygw behind the fault proxy) whose parts do not come back for the
// verification (500 at every retry): exit 3, stdout empty, the stderr line
// saying nothing was removed and nothing says they are damaged; the
// destination answering, the same copy completes.
func TestACopyThatCannotReadItsDestinationBackSaysSo(t *testing.T) {
	root, names := proofStorage(t)
	base := splitstoragetest.Start(t, "s3")
	p := splitstoragetest.NewFaultProxy(t, base.Addr)
	dst := base.WithProxy(p)
	dst.Setenv(t)
	var to []string
	for _, f := range append(dst.Config.Args(), "--split-storage-retry-max-attempts=2", "--split-storage-retry-initial-backoff=10ms") {
		to = append(to, "--to="+f)
	}
	copyArgs := append([]string{"copy", "--backup-storage-implementation=split", "--split-storage-root=" + root, "--keyspace=ks", "--shard=0",
		"--backup=" + names[0], "--progress=never"}, to...)

	p.FailMatching("GET", ".part-", splitstoragetest.InternalError, 1_000_000)
	out, errOut := runArgs(t, 3, copyArgs...)
	assert.Empty(t, out)
	assert.True(t, strings.HasPrefix(errOut, "FAIL: split storage: copy of backup ks/0/"+names[0]+" could not be verified at the destination s3:"),
		errOut)
	assert.Contains(t, errOut, "objects copied there could not be read back (nothing says they are damaged; nothing was removed): run the copy "+
		"again once it answers")
	assert.True(t, strings.HasSuffix(errOut, "; it could not be read or reached: nothing says the backup is damaged\n"), errOut)

	p.ClearMatching()
	out, _ = runArgs(t, 0, copyArgs...)
	assert.Contains(t, out, "OK: backup ks/0/"+names[0]+" copied")
}
